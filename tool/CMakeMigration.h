#pragma once
// Project mode's CMakeLists.txt migration: the migrated sources include
// <accelerate/accelerate.h>, so every target that links LibTorch also links
// Accelerate::accelerate, and the package is found next to LibTorch. A small scanner of
// CMake's command syntax (comments, quoted and bracket arguments) finds the calls; the
// edits are plain insertions, so everything else in the file stays byte for byte.

#include <llvm/ADT/StringRef.h>

#include <set>
#include <string>
#include <vector>

namespace accel {

// One insertion, with what clang-tidy style output and --export-fixes need.
struct CMakeEdit {
  unsigned Offset = 0;  // in the original text
  unsigned Line = 0, Column = 0;
  std::string Text;     // inserted
  std::string Message;  // why
};

struct CMakeMigration {
  std::string Original, Migrated;
  std::vector<CMakeEdit> Edits;  // ordered by offset
  bool FindPackageAdded = false;
  std::vector<std::string> LinkedTargets;  // Accelerate::accelerate added to these
  bool changed() const { return !Edits.empty(); }
};

// What a first pass over all of a project's CMakeLists.txt files learns.
struct CMakeProjectFacts {
  bool FindsTorch = false;       // some file calls find_package(Torch ...)
  bool FindsAccelerate = false;  // some file calls find_package(Accelerate ...)
  bool LinksTorch = false;       // some target_link_libraries() names LibTorch
  std::set<std::string> TargetsLinkingAccelerate;
};
void scanCMakeLists(llvm::StringRef Text, CMakeProjectFacts& Facts);

// The edits of one file:
// - `find_package(Accelerate REQUIRED CONFIG)` on the line after each
//   `find_package(Torch ...)` unless the file already finds Accelerate; in the top-level
//   file (TopLevel) after project() when no file of the project finds Torch or Accelerate
//   but some target links LibTorch;
// - `Accelerate::accelerate` right after the LibTorch item (`torch`, `torch_cpu`,
//   `${TORCH_LIBRARIES}`) of each target_link_libraries() call, so that it gets the same
//   PUBLIC/PRIVATE/INTERFACE keyword, unless that target already links it anywhere.
// LinkedSoFar carries the targets linked by earlier files (a target is linked once).
CMakeMigration migrateCMakeLists(llvm::StringRef Text, bool TopLevel,
                                 const CMakeProjectFacts& Facts,
                                 std::set<std::string>& LinkedSoFar);

}  // namespace accel
