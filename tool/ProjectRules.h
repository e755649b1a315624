#pragma once
// The project-mode rule that needs more than one translation unit: whether main()
// constructs the Accelerator that migrated code elsewhere in the project relies on. (A
// file without LibTorch is left alone by the rules themselves: see migrateUnit().)

#include "Migrator.h"
#include "ProjectResults.h"

#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace accel {

// One warning per source defining main() that constructs no accelerate::Accelerator while
// it or a project header it includes uses Accelerator::current().
std::vector<std::string> acceleratorWarnings(const ProjectResults& Project);

}  // namespace accel
