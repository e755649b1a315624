#pragma once
// The two project-mode rules that need more than one translation unit: whether a file
// uses LibTorch at all, and whether main() constructs the Accelerator that migrated code
// elsewhere in the project relies on.

#include "Migrator.h"
#include "ProjectResults.h"

#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace accel {

// The CMake migration links Accelerate only to targets that link LibTorch, and a program
// without LibTorch has nothing to distribute: a file that includes no LibTorch header
// (outside InRoot) is left as it is, with a note saying so.
void keepIfNoLibTorch(FileResult& R, llvm::StringRef InRoot);

// One warning per source defining main() that constructs no accelerate::Accelerator while
// it or a project header it includes uses Accelerator::current().
std::vector<std::string> acceleratorWarnings(const ProjectResults& Project);

}  // namespace accel
