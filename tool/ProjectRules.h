#pragma once
// Project-mode rules that need more than one translation unit:
// - which main() must construct the Accelerator: code in other files reaches it through
//   accelerate::Accelerator::current(), which throws unless main constructed one first;
// - which CMake targets compile migrated code (they must link Accelerate::accelerate);
// - where the installed package is (HINTS for the find_package the CMake migration adds).
// (A file without LibTorch is left alone by the rules themselves: see migrateUnit().)

#include "Options.h"
#include "ProjectResults.h"

#include <map>
#include <string>
#include <vector>

namespace accel {

struct MainNeed {
  ProjectUnit* Source;  // defines main(), constructs no Accelerator
  std::string User;     // Rel of a file it reaches that uses Accelerator::current()
};

// Each source defining main() that constructs no Accelerator while it, a project header it
// includes, or a source it calls into (through any chain of calls between the project's
// files, matched by qualified function name) uses Accelerator::current().
std::vector<MainNeed> mainsNeedingAccelerator(ProjectResults& Project);

// One warning per source defining main() that still constructs no Accelerator although it
// reaches current() (its migration failed, say).
std::vector<std::string> acceleratorWarnings(const ProjectResults& Project);

// Target name -> why, for every CMake target (from the compile commands) that compiles a
// migrated source, or a source including a migrated header.
std::map<std::string, std::string> targetsWithMigratedCode(
    const ProjectResults& Project, const clang::tooling::CompilationDatabase& DB);

// The prefix to write as HINTS (see Options::AcceleratePrefix): "" for none.
std::string acceleratePackageHint(const Options& Opts);

}  // namespace accel
