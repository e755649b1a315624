// accelerate-backward: x.backward(args...) becomes accelerator.backward(x, args...), which
// scales the loss for gradient accumulation and mixed precision and lets gradient
// synchronisation happen.

#include "RuleSupport.h"

using namespace clang;

namespace accel {

const RuleInfo BackwardInfo = {
    "accelerate-backward", "loss.backward() -> accelerator.backward(loss)",
    "accelerator.backward(loss) applies loss scaling (mixed precision, gradient "
    "accumulation) before the gradients are synchronised across processes"};

void runBackward(MigrationContext& Ctx, const RuleInfo& Info) {
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (!getMemberCall(Call, M) || M.Name != "backward" || !M.Object)
      continue;
    QualType T = M.Object->getType();
    bool Tensorish =
        M.IsArrow ? (T->isPointerType() && isTensor(T->getPointeeType())) : isTensor(T);
    // In a template pattern the type may be dependent: `.backward()` on it is a tensor's
    // in a LibTorch program (documented limit).
    if (!Tensorish && !T->isDependentType() && !M.Object->isTypeDependent())
      continue;
    if (M.Object->getBeginLoc().isInvalid() || isa<CXXThisExpr>(M.Object->IgnoreImpCasts()))
      continue;
    MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
    SourceLocation LParen = nextTokenLoc(Ctx, M.MemberLoc, tok::l_paren);
    SourceLocation Op = editableLoc(Ctx, M.OperatorLoc);
    if (LParen.isInvalid() || Op.isInvalid()) {
      if (Call->getBeginLoc().isMacroID())
        Ctx.warn(Call->getBeginLoc(), Info.Id,
                 "not rewritten: the code is inside a macro expansion; migrate it by hand",
                 /*Comment=*/false);
      continue;
    }
    Change C(Info.Id, Call->getBeginLoc());
    C.insertBefore(M.Object->getBeginLoc(),
                   Ctx.accel(Call, C) + ".backward(" + (M.IsArrow ? "*" : ""));
    C.replace(CharSourceRange::getCharRange(Op, LParen.getLocWithOffset(1)),
              writtenArgs(Call) ? ", " : "");
    Ctx.commit(C);
  }
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule BackwardRuleEntry({
    BackwardInfo,
    runBackward,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/70,
});

} // namespace accel
