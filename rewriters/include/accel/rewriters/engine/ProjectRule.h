#pragma once
// Project rules: rules whose idiom spans several files of a project (project mode,
// `-p BUILD --in-root SRC`). The per-file rules see one translation unit; what only the
// whole program shows (main() in one file, Accelerator::current() in another; CMake
// targets that compile migrated code) is decided here, over the facts the per-file
// migration left for each file. A project rule asks the driver for work (migrate a file
// again with main() constructing the Accelerator, link a target with the runtime) or warns
// with its id. The rules share RuleInfo with the per-file ones: ids, --list-rules and the
// table in docs/rules.md come from the same place. They are not clang-tidy checks (a
// clang-tidy check sees one translation unit).

#include "accel/rewriters/engine/Rule.h"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace accel {

// One file of the project as the per-file migration left it.
struct ProjectFile {
  std::string Rel;  // relative to the in-root: what messages name
  std::string Real; // canonical path
  bool Header = false;
  bool Parsed = false;  // migrated without compiler errors: the facts below are known
  bool Changed = false; // the migration changed its text
  // main() was migrated with the Accelerator forced in (an earlier request of this kind).
  bool AcceleratorForced = false;
  bool DefinesMain = false, MainConstructsAccelerator = false, UsesCurrent = false;
  std::vector<std::string> IncludedFiles; // canonical paths of every file the unit includes
  std::vector<std::string> DefinedFunctions, ExternalCalls; // qualified names
  std::vector<std::string> Targets; // CMake targets whose compile commands build it
};

struct ProjectFinding {
  const RuleInfo* Rule;
  std::string File; // Rel
  std::string Message;
};

class ProjectContext {
 public:
  explicit ProjectContext(std::vector<ProjectFile> Files) : Files(std::move(Files)) {}

  const std::vector<ProjectFile>& files() const { return Files; }

  // Requests, carried out by the driver once every rule has run.
  // Migrate files()[Index] again, with main() constructing the Accelerator.
  void migrateWithAccelerator(std::size_t Index, std::string Reason) {
    AcceleratorRequests.emplace(Index, std::move(Reason));
  }
  // The CMake target must link Accelerate::accelerate (the first reason given is kept).
  void linkTarget(const std::string& Target, std::string Why) {
    TargetsToLink.emplace(Target, std::move(Why));
  }
  void warn(const RuleInfo& Rule, std::string File, std::string Message) {
    Findings.push_back({&Rule, std::move(File), std::move(Message)});
  }

  const std::map<std::size_t, std::string>& acceleratorRequests() const {
    return AcceleratorRequests;
  }
  const std::map<std::string, std::string>& targetsToLink() const { return TargetsToLink; }
  const std::vector<ProjectFinding>& findings() const { return Findings; }

 private:
  std::vector<ProjectFile> Files;
  std::map<std::size_t, std::string> AcceleratorRequests;
  std::map<std::string, std::string> TargetsToLink;
  std::vector<ProjectFinding> Findings;
};

struct ProjectRuleEntry {
  const RuleInfo& Info;
  void (*Run)(ProjectContext&, const RuleInfo&);
  int Rank; // running order (lower first); registered from the rule's file (RegisterRule.h)
};

// The project rules, in rank order, which is their running order (they do not depend on
// each other's requests: the driver applies the requests and runs the table again until
// nothing new is asked).
const std::vector<ProjectRuleEntry>& projectRuleTable();

// accelerate-project-link's info: the CMake migration that carries out its requests reports
// what it could not do under its id.
extern const RuleInfo ProjectLinkInfo;

} // namespace accel
