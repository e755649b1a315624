#pragma once
// Project mode's CMakeLists.txt migration: every target that compiles migrated code (it
// includes <accelerate/accelerate.h>) or links LibTorch also links Accelerate::accelerate,
// and the package is found where each such target can see it. The files are read the way
// CMake runs them (top-level file first, add_subdirectory() in order, variables such as
// ${PROJECT_NAME} and set() values resolved), and the edits are plain insertions, so
// everything else in the files stays byte for byte.

#include <map>
#include <string>
#include <vector>

namespace accel {

// One insertion, with what clang-tidy style output and --export-fixes need.
struct CMakeEdit {
  unsigned Offset = 0; // in the original text
  unsigned Line = 0, Column = 0;
  std::string Text;    // inserted
  std::string Message; // why
};

struct CMakeMigration {
  std::string Original, Migrated;
  std::vector<CMakeEdit> Edits; // ordered by offset
  bool FindPackageAdded = false;
  std::vector<std::string> LinkedTargets; // Accelerate::accelerate added to these
  bool changed() const { return !Edits.empty(); }
};

struct CMakeFileInput {
  std::string Rel; // path relative to the in-root ("CMakeLists.txt" is the top level)
  std::string Text;
};

struct CMakeProjectInput {
  std::vector<CMakeFileInput> Files;
  // Targets that compile migrated code (from the compile commands), with the reason.
  std::map<std::string, std::string> Targets;
  // Written as `find_package(Accelerate REQUIRED CONFIG HINTS "<Hint>")` ("" for none):
  // where the package is installed, for projects that set CMAKE_PREFIX_PATH themselves.
  std::string Hint;
};

struct CMakeProjectResult {
  std::vector<CMakeMigration> Files; // parallel to the input's
  std::vector<std::string> Warnings; // targets the tool could not link
};

CMakeProjectResult migrateCMakeProject(const CMakeProjectInput& In);

} // namespace accel
