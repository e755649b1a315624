// The rule table: what the rules register from their own files (RegisterRule.h), put in
// order, and the views of it that the tool, the clang-tidy module and the docs use.

#include "engine/RegisterRule.h"

#include "accel/rewriters/engine/ProjectRule.h"
#include "accel/rewriters/engine/RuleOrder.h"

#include <llvm/Support/ErrorHandling.h>

#include <algorithm>
#include <string>
#include <utility>

namespace accel {

const char* analysisName(AnalysisId Id) {
  switch (Id) {
  case AnalysisId::PreparedLoaders:
    return "prepared-loaders";
  case AnalysisId::PreparedObjects:
    return "prepared-objects";
  case AnalysisId::ShardedBatches:
    return "sharded-batches";
  case AnalysisId::ReducedMetrics:
    return "reduced-metrics";
  case AnalysisId::AcceleratorRequests:
    return "accelerator-requests";
  case AnalysisId::AcceleratorDecision:
    return "accelerator-decision";
  case AnalysisId::Count:
    break;
  }
  return "?";
}

bool RuleEntry::needs(AnalysisId A) const {
  return std::find(Needs.begin(), Needs.end(), A) != Needs.end();
}
bool RuleEntry::provides(AnalysisId A) const {
  return std::find(Provides.begin(), Provides.end(), A) != Provides.end();
}

// Filled during static initialisation, one entry per RegisterRule object, in whatever order
// the linker laid the objects out; read only through the sorted tables below.
static std::vector<RuleEntry>& registeredRules() {
  static std::vector<RuleEntry> Entries;
  return Entries;
}
static std::vector<ProjectRuleEntry>& registeredProjectRules() {
  static std::vector<ProjectRuleEntry> Entries;
  return Entries;
}

RegisterRule::RegisterRule(RuleEntry Entry) { registeredRules().push_back(std::move(Entry)); }
RegisterProjectRule::RegisterProjectRule(ProjectRuleEntry Entry) {
  registeredProjectRules().push_back(Entry);
}

// The entries in (rank, id) order, copied (an entry holds a reference, so it cannot be
// sorted in place).
template <typename Entry> static std::vector<Entry> byRank(const std::vector<Entry>& In) {
  std::vector<const Entry*> Sorted;
  for (const Entry& E : In)
    Sorted.push_back(&E);
  std::sort(Sorted.begin(), Sorted.end(), [](const Entry* L, const Entry* R) {
    return std::make_pair(L->Rank, std::string(L->Info.Id)) <
           std::make_pair(R->Rank, std::string(R->Info.Id));
  });
  std::vector<Entry> Out;
  for (const Entry* E : Sorted)
    Out.push_back(*E);
  return Out;
}

const std::vector<RuleEntry>& ruleTable() {
  static const std::vector<RuleEntry> Table = byRank(registeredRules());
  return Table;
}

const std::vector<const RuleEntry*>& rulesInOrder() {
  static const std::vector<const RuleEntry*> Ordered = [] {
    std::vector<RuleNode> Nodes;
    for (const RuleEntry& E : ruleTable()) {
      RuleNode N{E.Info.Id, {}, {}, E.Rank};
      for (AnalysisId A : E.Needs)
        N.Needs.push_back(analysisName(A));
      for (AnalysisId A : E.Provides)
        N.Provides.push_back(analysisName(A));
      Nodes.push_back(std::move(N));
    }
    RuleOrdering O = orderRules(Nodes);
    if (!O.Error.empty())
      llvm::report_fatal_error(llvm::Twine("accel-migrate: ") + O.Error, false);
    std::vector<const RuleEntry*> Out;
    for (std::size_t I : O.Order)
      if (ruleTable()[I].Run)
        Out.push_back(&ruleTable()[I]);
    return Out;
  }();
  return Ordered;
}

const std::vector<ProjectRuleEntry>& projectRuleTable() {
  static const std::vector<ProjectRuleEntry> Table = byRank(registeredProjectRules());
  return Table;
}

const std::vector<RuleInfo>& fileRuleInfos() {
  static const std::vector<RuleInfo> All = [] {
    std::vector<RuleInfo> Out;
    for (const RuleEntry& E : ruleTable())
      Out.push_back(E.Info);
    return Out;
  }();
  return All;
}

const std::vector<RuleInfo>& allRuleInfos() {
  static const std::vector<RuleInfo> All = [] {
    std::vector<RuleInfo> Out = fileRuleInfos();
    for (const ProjectRuleEntry& E : projectRuleTable())
      Out.push_back(E.Info);
    return Out;
  }();
  return All;
}

const RuleInfo* findRuleInfo(const std::string& Id) {
  for (const auto& I : allRuleInfos())
    if (Id == I.Id)
      return &I;
  return nullptr;
}

std::string ruleTableMarkdown() {
  auto Names = [](const std::vector<AnalysisId>& As) {
    std::string S;
    for (AnalysisId A : As)
      S += (S.empty() ? "" : ", ") + std::string(analysisName(A));
    return S.empty() ? std::string("-") : S;
  };
  std::string S =
      "| # | rule | summary | needs | provides |\n|--:|------|---------|-------|----------|\n";
  unsigned K = 0;
  for (const RuleEntry* E : rulesInOrder())
    S += "| " + std::to_string(++K) + " | `" + E->Info.Id + "` | " + E->Info.Summary + " | " +
         Names(E->Needs) + " | " + Names(E->Provides) + " |\n";
  for (const RuleEntry& E : ruleTable())
    if (!E.Run)
      S += "| - | `" + std::string(E.Info.Id) + "` | " + E.Info.Summary +
           " (warnings only) | - | - |\n";
  for (const ProjectRuleEntry& E : projectRuleTable())
    S += "| P" + std::to_string(&E - projectRuleTable().data() + 1) + " | `" + E.Info.Id + "` | " +
         E.Info.Summary + " (project mode) | all files' facts | - |\n";
  return S;
}

} // namespace accel
