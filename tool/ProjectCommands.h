#pragma once
// Project mode's view of the compilation database: one compile command per file, because
// a source built for several targets has several entries and ClangTool would parse (and
// migrate) it once per entry. Headers have no entry: they are migrated as part of the
// translation unit of a source that includes them (MigrateSettings::Target).

#include <clang/Tooling/CompilationDatabase.h>

#include <string>
#include <vector>

namespace accel {

class ProjectCommands : public clang::tooling::CompilationDatabase {
 public:
  explicit ProjectCommands(const clang::tooling::CompilationDatabase& Base) : Base(Base) {}

  std::vector<clang::tooling::CompileCommand>
  getCompileCommands(llvm::StringRef File) const override;
  std::vector<std::string> getAllFiles() const override { return Base.getAllFiles(); }

 private:
  const clang::tooling::CompilationDatabase& Base;
};

// The CMake target a source is compiled for, from its command's object file
// (`-o .../CMakeFiles/<target>.dir/...`, as CMake's Makefile and Ninja generators write
// it); "" when the command does not say.
std::string cmakeTargetOf(const clang::tooling::CompileCommand& Command);

} // namespace accel
