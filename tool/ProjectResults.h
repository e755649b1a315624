#pragma once
// The files of one project-mode run and what migrating them gave: filled by ProjectRun
// (Project.cpp), read by what writes the out-root, --check output and the report.

#include "CMakeMigration.h"
#include "Migrator.h"

#include <string>
#include <vector>

namespace accel {

struct ProjectUnit {
  std::string DbPath;  // as the compilation database knows it (sources)
  std::string Real;    // canonical path
  std::string Rel;     // relative to the in-root
  bool Header = false;
  std::string ParsedWith;  // headers: Rel of the source whose command is used
  FileResult Result;
  bool Missing = false;
  bool AcceleratorForced = false;  // migrated with main() constructing the Accelerator
};

struct ProjectCMakeFile {
  std::string Real, Rel;
  CMakeMigration M;
};

struct ProjectResults {
  std::string InRoot, OutRoot, BuildDir;  // canonical; OutRoot "" without one
  std::vector<ProjectUnit> Sources;       // in Rel order
  std::vector<ProjectUnit> Headers;       // in Rel order
  std::vector<ProjectCMakeFile> CMake;    // in path order
  std::vector<std::string> Warnings;      // about the project as a whole
};

}  // namespace accel
