// The rule engine's ordering (rewriters/RuleOrder.cpp): rules run after the providers of
// what they need, table order breaks ties, and a table with a cycle, a need that no rule
// provides or a duplicate id is refused with the rules named.
#include "accel/rewriters/RuleOrder.h"

#include <gtest/gtest.h>

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

TEST(RuleOrder, IndependentRulesKeepTheTableOrder) {
  std::vector<RuleNode> Rules = {{"c", {}, {}}, {"a", {}, {}}, {"b", {}, {}}};
  auto O = orderRules(Rules);
  ASSERT_EQ(O.Error, "");
  EXPECT_EQ(ids(Rules, O), (std::vector<std::string>{"c", "a", "b"}));
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
