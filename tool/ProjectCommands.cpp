#include "ProjectCommands.h"

#include "ProjectPaths.h"

using clang::tooling::CompileCommand;

namespace accel {

std::vector<CompileCommand> ProjectCommands::getCompileCommands(llvm::StringRef File) const {
  auto It = SourceOf.find(File.str());
  if (It == SourceOf.end()) {
    std::vector<CompileCommand> All = Base.getCompileCommands(File);
    if (All.size() > 1)
      All.resize(1);
    return All;
  }
  std::vector<CompileCommand> Out;
  for (CompileCommand C : Base.getCompileCommands(It->second)) {
    std::string Source = absolute(C.Filename, C.Directory);
    bool Replaced = false;
    for (size_t I = 1; I < C.CommandLine.size(); ++I) {
      llvm::StringRef A = C.CommandLine[I];
      if (!A.starts_with("-") && absolute(A, C.Directory) == Source &&
          !(I > 0 && C.CommandLine[I - 1] == "-o")) {
        C.CommandLine[I] = File.str();
        Replaced = true;
      }
    }
    if (!Replaced)
      C.CommandLine.push_back(File.str());
    C.Filename = File.str();
    C.Heuristic = "flags of " + It->second;
    Out.push_back(std::move(C));
    break;  // one command is enough
  }
  return Out;
}

}  // namespace accel
