// accel-migrate --trace-only (issue 48 item 2): the ORIGINAL program with the step trace's
// calls written in and nothing else changed, the reference that `accelerate verify
// --original` compares the migrated program with, step by step:
//
//   loss.backward()      ->  accelerate::trace::loss(loss).backward()
//   optimizer.step()     ->  accelerate::trace::after_step(optimizer.step(), optimizer)
//   optimizer->step()    ->  accelerate::trace::after_step(optimizer->step(), *optimizer)
//
// plus `#include <accelerate/trace.h>` (header-only: the traced original links LibTorch
// alone). Not a rule of the migration: the engine runs this pass instead of the rules
// (UnitOptions::TraceOnly). Each edit wraps the call where it is written, so no statement
// is added or moved (a call in a condition or a one-line loop body needs no braces), and
// the optimizer is only named, never evaluated twice: the step is traced when it returns.

#include "analyses/RuleSupport.h"

using namespace clang;

namespace accel {

const RuleInfo TraceOnlyInfo = {
    "accelerate-trace-only", "trace the original's steps",
    "the step trace's calls (accelerate/trace.h), for `accelerate verify --original`"};

namespace {

// The object as an lvalue of the optimizer: `opt` for `opt.step()`, `*opt` for `opt->step()`
// (a raw or smart pointer). "" when the object is not a plain name or member chain: writing
// it twice would evaluate it twice.
std::string optimizerLvalue(MigrationContext& Ctx, const MemberCall& M) {
  const Expr* O = M.Object->IgnoreParenImpCasts();
  // A smart pointer's `->` is a call of its operator->, whose range ends at the arrow.
  if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(O); Op && Op->getOperator() == OO_Arrow)
    O = Op->getArg(0);
  bool Plain = !anyOf(O, [](const Stmt* S) {
    return isa<CallExpr>(S) && !isa<CXXOperatorCallExpr>(S); // a call could do anything
  });
  std::string Text = Ctx.text(O->getSourceRange());
  if (!Plain || Text.empty())
    return "";
  return M.IsArrow ? "*" + Text : Text;
}

// `X.backward(...)` on a tensor: X becomes accelerate::trace::loss(X). In a template pattern
// whose type is dependent, `.backward()` is taken for a tensor's, as accelerate-backward
// takes it (a training function templated on its loader, say).
bool traceBackward(MigrationContext& Ctx, const CallExpr* Call, const MemberCall& M) {
  QualType T = M.Object->getType();
  bool Tensorish =
      !T.isNull() && (isTensor(T) || T->isDependentType() || M.Object->isTypeDependent());
  if (M.Name != "backward" || !Tensorish || M.IsArrow)
    return false;
  Change C(TraceOnlyInfo.Id, Call->getBeginLoc());
  C.insertBefore(M.Object->getBeginLoc(), "accelerate::trace::loss(");
  C.insertAfter(M.Object->getEndLoc(), ")");
  return Ctx.commit(C);
}

// `X.step(...)` of a LibTorch optimizer: the call becomes after_step(call, X).
bool traceStep(MigrationContext& Ctx, const CallExpr* Call, const MemberCall& M) {
  if (M.Name != "step" || !isOptimizerClass(pointeeRecord(M.Object->getType())))
    return false;
  std::string Object = optimizerLvalue(Ctx, M);
  if (Object.empty()) {
    Ctx.warn(Call->getBeginLoc(), TraceOnlyInfo.Id,
             "this optimizer step is not traced: its optimizer is reached through a call "
             "that would run twice; name the optimizer in a variable");
    return false;
  }
  Change C(TraceOnlyInfo.Id, Call->getBeginLoc());
  C.insertBefore(Call->getBeginLoc(), "accelerate::trace::after_step(");
  C.insertAfter(Call->getEndLoc(), ", " + Object + ")");
  return Ctx.commit(C);
}

} // namespace

void runTraceOnly(MigrationContext& Ctx) {
  for (const auto& I : Ctx.Includes)
    if (StringRef(I.Name) == "accelerate/trace.h")
      return; // traced already: the pass is a fixed point
  bool Traced = false;
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (!getMemberCall(Call, M) || !M.Object || !Ctx.inMainFile(Call->getBeginLoc()) ||
        Call->getBeginLoc().isMacroID())
      continue;
    Traced |= traceBackward(Ctx, Call, M) || traceStep(Ctx, Call, M);
  }
  if (Traced)
    insertInclude(Ctx, TraceOnlyInfo.Id, "accelerate/trace.h");
}

} // namespace accel
