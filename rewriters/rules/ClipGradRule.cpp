// accelerate-clip-grad: torch::nn::utils::clip_grad_norm_/clip_grad_value_ become the
// accelerator's, which unscale fp16 gradients first.

#include "analyses/RuleSupport.h"

using namespace clang;

namespace accel {

const RuleInfo ClipGradInfo = {
    "accelerate-clip-grad", "clip_grad_norm_/clip_grad_value_ -> the accelerator's",
    "under mixed precision the gradients must be unscaled before they are clipped: "
    "accelerator.clip_grad_norm_ and clip_grad_value_ do that"};

void runClipGrad(MigrationContext& Ctx, const RuleInfo& Info) {
  for (const CallExpr* Call : userCalls(Ctx)) {
    std::string N = calleeName(Call);
    StringRef Name(N);
    bool Norm = Name == "torch::nn::utils::clip_grad_norm_" ||
                (!Call->getDirectCallee() && Name.ends_with("utils::clip_grad_norm_"));
    bool Value = Name == "torch::nn::utils::clip_grad_value_" ||
                 (!Call->getDirectCallee() && Name.ends_with("utils::clip_grad_value_"));
    if (!Norm && !Value)
      continue;
    MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
    if (Norm && writtenArgs(Call) > 3) {
      Ctx.warn(Call->getBeginLoc(), Info.Id,
               "clip_grad_norm_ with error_if_nonfinite has no accelerator equivalent; "
               "unscale and clip by hand");
      continue;
    }
    SourceRange R = calleeNameRange(Call);
    if (R.isInvalid())
      continue;
    Change C(Info.Id, Call->getBeginLoc());
    C.replace(R, Ctx.accel(Call, C) + (Norm ? ".clip_grad_norm_" : ".clip_grad_value_"));
    Ctx.commit(C);
  }
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule ClipGradRuleEntry({
    ClipGradInfo,
    runClipGrad,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/80,
});

} // namespace accel
