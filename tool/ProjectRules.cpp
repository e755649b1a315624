#include "ProjectRules.h"

#include "BakedPaths.h"
#include "ProjectCommands.h"
#include "ProjectPaths.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace accel {
namespace {

ProjectFile factsOf(const ProjectUnit& U) {
  ProjectFile F;
  F.Rel = U.Rel;
  F.Real = U.Real;
  F.Header = U.Header;
  F.Parsed = U.Result.Parsed;
  F.Changed = U.Result.changed();
  F.AcceleratorForced = U.AcceleratorForced;
  F.DefinesMain = U.Result.DefinesMain;
  F.MainConstructsAccelerator = U.Result.MainConstructsAccelerator;
  F.UsesCurrent = U.Result.UsesCurrent;
  for (const std::string& Inc : U.Result.IncludedFiles)
    F.IncludedFiles.push_back(canonical(Inc));
  F.DefinedFunctions = U.Result.DefinedFunctions;
  F.ExternalCalls = U.Result.ExternalCalls;
  return F;
}

}  // namespace

ProjectContext projectContext(const ProjectResults& Project,
                              const clang::tooling::CompilationDatabase& DB) {
  std::vector<ProjectFile> Files;
  for (const ProjectUnit& S : Project.Sources) {
    Files.push_back(factsOf(S));
    for (const auto& Cmd : DB.getCompileCommands(S.DbPath)) {
      std::string T = cmakeTargetOf(Cmd);
      if (!T.empty())
        Files.back().Targets.push_back(T);
    }
  }
  for (const ProjectUnit& H : Project.Headers)
    Files.push_back(factsOf(H));
  return ProjectContext(std::move(Files));
}

ProjectUnit& projectUnitAt(ProjectResults& Project, std::size_t Index) {
  if (Index < Project.Sources.size())
    return Project.Sources[Index];
  return Project.Headers[Index - Project.Sources.size()];
}

std::string acceleratePackageHint(const Options& Opts) {
  if (Opts.AcceleratePrefix == "none")
    return "";
  if (!Opts.AcceleratePrefix.empty())
    return absolute(Opts.AcceleratePrefix);
  // The installed tool is PREFIX/bin/accel-migrate; the package sits in PREFIX/LIBDIR.
  std::string Exe = fs::getMainExecutable(nullptr, nullptr);
  std::string Prefix = path::parent_path(path::parent_path(Exe)).str();
  llvm::SmallString<256> Config(Prefix);
  path::append(Config, baked::kInstallLibDir, "cmake", "Accelerate", "AccelerateConfig.cmake");
  // CMake searches /usr and /usr/local anyway.
  if (Prefix.empty() || Prefix == "/usr" || Prefix == "/usr/local" || !fs::exists(Config))
    return "";
  return Prefix;
}

}  // namespace accel
