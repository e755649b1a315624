#pragma once
// Orders rules from what each declares it needs and provides. Kept free of Clang so that a
// unit test can feed it tables that are wrong on purpose (a cycle, a missing provider).

#include <cstddef>
#include <string>
#include <vector>

namespace accel {

struct RuleNode {
  std::string Id;
  std::vector<std::string> Needs;    // analyses read
  std::vector<std::string> Provides; // analyses written (several rules may add to one)
  int Rank = 0;                      // breaks ties (RuleEntry::Rank)
};

struct RuleOrdering {
  std::vector<std::size_t> Order; // indices into the given rules, in running order
  std::string Error;              // empty when the table is valid
};

// A rule runs after every other rule that provides something it needs; among rules that
// are free to run, the lowest rank goes first, then the lowest id: the order the rules are
// given in (which is the order they registered in) never matters. Refused (Error set, Order empty):
// a need no rule provides, a duplicate id, a cycle (the rules on it are named).
RuleOrdering orderRules(const std::vector<RuleNode>& Rules);

} // namespace accel
