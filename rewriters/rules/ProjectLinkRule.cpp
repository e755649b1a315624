// accelerate-project-link: every CMake target that compiles migrated code (a migrated
// source, or a source including a migrated header) must link Accelerate::accelerate. The
// CMake migration (tool/CMakeMigration.cpp) writes the link into the CMakeLists.txt that
// defines the target.

#include "analyses/RuleSupport.h"

#include <map>

namespace accel {

const RuleInfo ProjectLinkInfo = {
    "accelerate-project-link", "CMake targets with migrated code link Accelerate::accelerate",
    "the migrated code calls the runtime (libaccelerate): a target that compiles it must "
    "find_package(Accelerate) and link Accelerate::accelerate"};

void runProjectLink(ProjectContext& Ctx, const RuleInfo& /*Rule*/) {
  std::map<std::string, const ProjectFile*> ChangedHeaders;
  for (const ProjectFile& H : Ctx.files())
    if (H.Header && H.Changed)
      ChangedHeaders[H.Real] = &H;
  for (const ProjectFile& S : Ctx.files()) {
    if (S.Header)
      continue;
    std::string Why;
    if (S.Changed)
      Why = "it compiles the migrated " + S.Rel;
    for (const std::string& Inc : S.IncludedFiles) {
      auto It = ChangedHeaders.find(Inc);
      if (Why.empty() && It != ChangedHeaders.end())
        Why = "it compiles " + S.Rel + ", which includes the migrated " + It->second->Rel;
    }
    if (Why.empty())
      continue;
    for (const std::string& T : S.Targets)
      Ctx.linkTarget(T, Why);
  }
}

// The rule's entry in the project rule table (RegisterRule.h).
static const RegisterProjectRule ProjectLinkRuleEntry({
    ProjectLinkInfo,
    runProjectLink,
    /*Rank=*/20,
});

} // namespace accel
