#pragma once
// The rule table. A rule has a stable id (`accelerate-<name>`), a one-line summary, the
// explanation written into diagnostics and comments, the function that finds its idiom in
// a parsed translation unit and proposes changes, and the analyses it needs and provides.
// The engine runs rules in the order the analyses flow (orderRules), refuses a table with
// a cycle or a need nobody provides, and lets a rule touch only the analyses it declares.
// accel-migrate, the clang-tidy checks and the rule table in docs/rules.md all come from
// this one table. Each rule enters it from its own file (rewriters/RegisterRule.h); the
// table is collected and put in order on first use (Registry.cpp).

#include "accel/rewriters/engine/Analyses.h"

#include <string>
#include <vector>

namespace accel {

class MigrationContext;

struct RuleInfo {
  const char* Id;
  const char* Summary;
  const char* Explanation; // why the change (or the warning) is needed
  // Runs on a file that includes no LibTorch header (only with --force-accelerator, on the
  // file that defines main): such a file needs the Accelerator and its include, nothing
  // that rewrites LibTorch code. Declared by the rule, so the engine names no rule.
  bool RunsWithoutLibTorch = false;
};

struct RuleEntry {
  const RuleInfo& Info;
  // nullptr for an id that only carries warnings of the rule in the same file.
  void (*Run)(MigrationContext&, const RuleInfo&);
  std::vector<AnalysisId> Needs;
  std::vector<AnalysisId> Provides;
  // The table's order, explicit because registration order is the linker's: among rules
  // free to run at the same time the lower rank runs first (which matters where their edits
  // would overlap: the first committed wins), and ids are listed in rank order. Ranks are
  // unique by convention; equal ranks fall back to the id.
  int Rank;

  bool needs(AnalysisId A) const;
  bool provides(AnalysisId A) const;
};

// Every registered rule in rank order (warning-only ids included).
const std::vector<RuleEntry>& ruleTable();
// The rules that run, in running order. The table is checked on first use; an invalid
// table is a programming error and stops the process with the reason.
const std::vector<const RuleEntry*>& rulesInOrder();
// Every id's info: per-file rules, warning-only ids and project rules (ProjectRule.h).
const std::vector<RuleInfo>& allRuleInfos();
// The per-file ids only: what the clang-tidy module offers as checks.
const std::vector<RuleInfo>& fileRuleInfos();
const RuleInfo* findRuleInfo(const std::string& Id);
// The table as Markdown (docs/rules.md carries it between markers; a test compares).
std::string ruleTableMarkdown();

} // namespace accel
