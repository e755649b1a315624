#pragma once
// How a rule enters the rule table: from its own file, with one object at namespace scope
// at the end of that file,
//
//   static const RegisterRule ZeroGradRuleEntry({
//       ZeroGradInfo,
//       runZeroGrad,
//       /*Needs=*/{},
//       /*Provides=*/{AnalysisId::AcceleratorRequests},
//       /*Rank=*/200,
//   });
//
// constructed when accel-migrate starts or clang-tidy loads the module. The object is named
// after its file (<File>Entry), not `Entry`: rewriters/ is a unity build (several rule
// files compiled as one translation unit), where two objects of one name would collide.
// Nothing else names the rule, so adding one touches no other file. The table is put in
// order on first use (Registry.cpp) from the needs, provides and ranks alone: the order in
// which the objects are constructed, which is the linker's, never shows.
// rewriters/CMakeLists.txt links every object of the library, so a file that only registers
// is not dropped by the linker.

#include "accel/rewriters/engine/ProjectRule.h"
#include "accel/rewriters/engine/Rule.h"

namespace accel {

class RegisterRule {
 public:
  explicit RegisterRule(RuleEntry Entry);
};

class RegisterProjectRule {
 public:
  explicit RegisterProjectRule(ProjectRuleEntry Entry);
};

} // namespace accel
