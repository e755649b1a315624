#include "ProjectCommands.h"

using clang::tooling::CompileCommand;

namespace accel {

std::vector<CompileCommand> ProjectCommands::getCompileCommands(llvm::StringRef File) const {
  std::vector<CompileCommand> All = Base.getCompileCommands(File);
  if (All.size() > 1)
    All.resize(1);
  return All;
}

std::string cmakeTargetOf(const CompileCommand& Command) {
  std::string Object = Command.Output;
  for (size_t I = 0; Object.empty() && I + 1 < Command.CommandLine.size(); ++I)
    if (Command.CommandLine[I] == "-o")
      Object = Command.CommandLine[I + 1];
  llvm::StringRef O(Object);
  size_t At = O.rfind("CMakeFiles/");
  if (At == llvm::StringRef::npos)
    return "";
  llvm::StringRef Rest = O.substr(At + 11);
  size_t Dir = Rest.find(".dir/");
  return Dir == llvm::StringRef::npos ? "" : Rest.take_front(Dir).str();
}

} // namespace accel
