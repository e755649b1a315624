// The rule engine's ordering (rewriters/engine/RuleOrder.cpp): rules run after the providers of
// what they need, rank and then id break ties (never the order the rules registered in,
// which is the linker's), and a table with a cycle, a need that no rule provides or a
// duplicate id is refused with the rules named.
#include "accel/rewriters/engine/RuleOrder.h"

#include <gtest/gtest.h>

#include <algorithm>

using accel::orderRules;
using accel::RuleNode;

namespace {

std::vector<std::string> ids(const std::vector<RuleNode>& Rules, const accel::RuleOrdering& O) {
  std::vector<std::string> Out;
  for (std::size_t I : O.Order) Out.push_back(Rules[I].Id);
  return Out;
}

TEST(RuleOrder, ConsumersRunAfterEveryProviderWhateverTheTableOrder) {
  // Written backwards: include needs the decision, the accelerator needs the requests
  // that two other rules add to, one of which needs loaders.
  std::vector<RuleNode> Rules = {
      {"include", {"decision"}, {}},
      {"accelerator", {"requests"}, {"decision"}},
      {"placement", {"loaders"}, {"requests"}},
      {"backward", {}, {"requests"}},
      {"data-loader", {}, {"loaders", "requests"}},
  };
  auto O = orderRules(Rules);
  ASSERT_EQ(O.Error, "");
  EXPECT_EQ(ids(Rules, O),
            (std::vector<std::string>{"backward", "data-loader", "placement", "accelerator", "include"}));
}

TEST(RuleOrder, IndependentRulesRunByRankWhateverOrderTheyRegisteredIn) {
  std::vector<RuleNode> Rules = {{"c", {}, {}, 10}, {"a", {}, {}, 30}, {"b", {}, {}, 20}};
  std::sort(Rules.begin(), Rules.end(), [](const RuleNode& L, const RuleNode& R) { return L.Id < R.Id; });
  do {
    auto O = orderRules(Rules);
    ASSERT_EQ(O.Error, "");
    EXPECT_EQ(ids(Rules, O), (std::vector<std::string>{"c", "b", "a"}));
  } while (std::next_permutation(Rules.begin(), Rules.end(),
                                 [](const RuleNode& L, const RuleNode& R) { return L.Id < R.Id; }));
}

TEST(RuleOrder, EqualRanksGoByTheId) {
  std::vector<RuleNode> Rules = {{"y", {}, {}, 5}, {"x", {}, {}, 5}, {"early", {}, {}, 1}};
  auto O = orderRules(Rules);
  ASSERT_EQ(O.Error, "");
  EXPECT_EQ(ids(Rules, O), (std::vector<std::string>{"early", "x", "y"}));
}

TEST(RuleOrder, ALowRankDoesNotRunAConsumerBeforeItsProvider) {
  std::vector<RuleNode> Rules = {{"include", {"decision"}, {}, 1}, {"accelerator", {}, {"decision"}, 100}};
  auto O = orderRules(Rules);
  ASSERT_EQ(O.Error, "");
  EXPECT_EQ(ids(Rules, O), (std::vector<std::string>{"accelerator", "include"}));
}

TEST(RuleOrder, ARuleMayReadWhatItProvides) {
  std::vector<RuleNode> Rules = {{"batching", {"sharded"}, {"sharded"}}, {"metrics", {"sharded"}, {}}};
  auto O = orderRules(Rules);
  ASSERT_EQ(O.Error, "");
  EXPECT_EQ(ids(Rules, O), (std::vector<std::string>{"batching", "metrics"}));
}

TEST(RuleOrder, ACycleIsRefusedAndItsRulesNamed) {
  std::vector<RuleNode> Rules = {
      {"free", {}, {"x"}},
      {"metrics", {"sharded"}, {"reduced"}},
      {"batching", {"reduced"}, {"sharded"}},
      {"after", {"reduced", "x"}, {}},
  };
  auto O = orderRules(Rules);
  EXPECT_TRUE(O.Order.empty());
  EXPECT_NE(O.Error.find("a cycle"), std::string::npos) << O.Error;
  EXPECT_NE(O.Error.find("metrics needs what batching provides"), std::string::npos) << O.Error;
  EXPECT_NE(O.Error.find("batching needs what metrics provides"), std::string::npos) << O.Error;
  EXPECT_EQ(O.Error.find("free"), std::string::npos) << "not on the cycle: " << O.Error;
  EXPECT_EQ(O.Error.find("after"), std::string::npos) << "not on the cycle: " << O.Error;
}

TEST(RuleOrder, ANeedWithoutProviderIsRefused) {
  std::vector<RuleNode> Rules = {{"placement", {"prepared-objects"}, {}}, {"prepare", {}, {"x"}}};
  auto O = orderRules(Rules);
  EXPECT_TRUE(O.Order.empty());
  EXPECT_EQ(O.Error, "rule table: placement needs the analysis 'prepared-objects', which no rule provides");
}

TEST(RuleOrder, ADuplicateIdIsRefused) {
  std::vector<RuleNode> Rules = {{"device", {}, {}}, {"device", {}, {}}};
  auto O = orderRules(Rules);
  EXPECT_TRUE(O.Order.empty());
  EXPECT_EQ(O.Error, "rule table: the id device appears twice");
}

}  // namespace
