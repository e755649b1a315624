#pragma once
// A migration rule: a stable id (`accelerate-<name>`), a one-line summary, the
// explanation written into diagnostics and comments, and the code that finds its idiom in
// a parsed translation unit and proposes changes. Rules see only a MigrationContext, so
// the same objects can run inside accel-migrate or behind a clang-tidy check.

#include <memory>
#include <string>
#include <vector>

namespace accel {

class MigrationContext;

struct RuleInfo {
  const char* Id;
  const char* Summary;
  const char* Explanation;  // why the change (or the warning) is needed
};

class Rule {
 public:
  virtual ~Rule() = default;
  virtual const RuleInfo& info() const = 0;
  virtual void run(MigrationContext& Ctx) = 0;
};

// All rules in the order they must run (analyses that later rules read come first; the
// accelerator declaration and the include run last, when it is known whether they are
// needed).
std::vector<std::unique_ptr<Rule>> makeAllRules();
// Every rule's info, including ids used only for warnings.
const std::vector<RuleInfo>& allRuleInfos();
const RuleInfo* findRuleInfo(const std::string& Id);

}  // namespace accel
