#pragma once
// Project mode's view of the compilation database: one compile command per file, because
// a source built for several targets has several entries and ClangTool would parse (and
// migrate) it once per entry. A header has no entry: it is parsed with the command of a
// source that includes it, the source's name replaced by the header's.

#include <clang/Tooling/CompilationDatabase.h>

#include <map>
#include <string>
#include <vector>

namespace accel {

class ProjectCommands : public clang::tooling::CompilationDatabase {
 public:
  // SourceOf: header -> the database path of the source whose command it borrows.
  ProjectCommands(const clang::tooling::CompilationDatabase& Base,
                  std::map<std::string, std::string> SourceOf)
      : Base(Base), SourceOf(std::move(SourceOf)) {}

  std::vector<clang::tooling::CompileCommand> getCompileCommands(
      llvm::StringRef File) const override;
  std::vector<std::string> getAllFiles() const override { return Base.getAllFiles(); }

 private:
  const clang::tooling::CompilationDatabase& Base;
  std::map<std::string, std::string> SourceOf;
};

}  // namespace accel
