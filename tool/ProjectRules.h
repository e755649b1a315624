#pragma once
// Project mode's side of the project rules (rewriters' ProjectRule.h): the facts of every
// migrated file as the rules see them, and where the installed package is (HINTS for the
// find_package the CMake migration adds).

#include "Options.h"
#include "ProjectResults.h"
#include "accel/rewriters/engine/ProjectRule.h"

#include <string>

namespace accel {

// files()[I] is Project.Sources[I] for I < Sources.size(), then the headers in order.
ProjectContext projectContext(const ProjectResults& Project,
                              const clang::tooling::CompilationDatabase& DB);
// The unit behind files()[Index] of a context made by projectContext.
ProjectUnit& projectUnitAt(ProjectResults& Project, std::size_t Index);

// The prefix to write as HINTS (see Options::AcceleratePrefix): "" for none.
std::string acceleratePackageHint(const Options& Opts);

} // namespace accel
