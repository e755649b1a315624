#include "ProjectRules.h"

#include "BakedPaths.h"
#include "ProjectCommands.h"
#include "ProjectPaths.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <deque>
#include <set>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace accel {
namespace {

// The program's files as a graph: a source or header leads to the project headers it
// includes and to the sources that define the functions it uses without defining them.
class ProgramGraph {
 public:
  explicit ProgramGraph(const ProjectResults& Project) {
    for (const ProjectUnit& H : Project.Headers)
      HeaderByPath[H.Real] = &H;
    for (const ProjectUnit& S : Project.Sources)
      if (S.Result.Parsed)
        for (const std::string& F : S.Result.DefinedFunctions)
          DefinedIn[F].push_back(&S);
  }

  // A file reachable from Start whose migrated text uses current() ("" when none).
  std::string userReachableFrom(const ProjectUnit& Start) const {
    std::set<const ProjectUnit*> Seen = {&Start};
    std::deque<const ProjectUnit*> Todo = {&Start};
    while (!Todo.empty()) {
      const ProjectUnit* U = Todo.front();
      Todo.pop_front();
      if (U->Result.Parsed && U->Result.UsesCurrent)
        return U->Rel;
      auto Visit = [&](const ProjectUnit* Next) {
        if (Seen.insert(Next).second)
          Todo.push_back(Next);
      };
      if (!U->Header)
        for (const std::string& Inc : U->Result.IncludedFiles) {
          auto It = HeaderByPath.find(canonical(Inc));
          if (It != HeaderByPath.end())
            Visit(It->second);
        }
      for (const std::string& F : U->Result.ExternalCalls) {
        auto It = DefinedIn.find(F);
        if (It != DefinedIn.end())
          for (const ProjectUnit* D : It->second)
            Visit(D);
      }
    }
    return "";
  }

 private:
  std::map<std::string, const ProjectUnit*> HeaderByPath;
  std::map<std::string, std::vector<const ProjectUnit*>> DefinedIn;
};

}  // namespace

std::vector<MainNeed> mainsNeedingAccelerator(ProjectResults& Project) {
  ProgramGraph G(Project);
  std::vector<MainNeed> Out;
  for (ProjectUnit& S : Project.Sources) {
    if (!S.Result.Parsed || !S.Result.DefinesMain || S.Result.MainConstructsAccelerator)
      continue;
    std::string User = G.userReachableFrom(S);
    if (!User.empty())
      Out.push_back({&S, User});
  }
  return Out;
}

std::vector<std::string> acceleratorWarnings(const ProjectResults& Project) {
  std::vector<std::string> Warnings;
  ProgramGraph G(Project);
  for (const ProjectUnit& S : Project.Sources) {
    if (!S.Result.Parsed || !S.Result.DefinesMain || S.Result.MainConstructsAccelerator)
      continue;
    std::string User = G.userReachableFrom(S);
    if (!User.empty())
      Warnings.push_back(
          S.Rel + ": main() constructs no accelerate::Accelerator, but " + User +
          " uses accelerate::Accelerator::current(), which throws without one: add "
          "`accelerate::Accelerator accelerator;` as the first statement of main()");
  }
  return Warnings;
}

std::map<std::string, std::string> targetsWithMigratedCode(
    const ProjectResults& Project, const clang::tooling::CompilationDatabase& DB) {
  std::map<std::string, const ProjectUnit*> ChangedHeaders;
  for (const ProjectUnit& H : Project.Headers)
    if (H.Result.changed())
      ChangedHeaders[H.Real] = &H;
  std::map<std::string, std::string> Targets;
  for (const ProjectUnit& S : Project.Sources) {
    std::string Why;
    if (S.Result.changed())
      Why = "it compiles the migrated " + S.Rel;
    for (const std::string& Inc : S.Result.IncludedFiles) {
      auto It = ChangedHeaders.find(canonical(Inc));
      if (Why.empty() && It != ChangedHeaders.end())
        Why = "it compiles " + S.Rel + ", which includes the migrated " + It->second->Rel;
    }
    if (Why.empty())
      continue;
    for (const auto& Cmd : DB.getCompileCommands(S.DbPath)) {
      std::string T = cmakeTargetOf(Cmd);
      if (!T.empty())
        Targets.emplace(T, Why);
    }
  }
  return Targets;
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
