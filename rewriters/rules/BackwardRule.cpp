// accelerate-backward: x.backward(args...) becomes accelerator.backward(x, args...), which
// scales the loss for gradient accumulation and mixed precision and lets gradient
// synchronisation happen. A loss the tool sees reduced as a sum over its batch (a LibTorch
// loss with `Reduction::Sum`/`torch::kSum`, a loss module made with `reduction(torch::kSum)`,
// `.sum()` of per-sample losses) becomes `accelerator.backward(loss,
// accelerate::LossReduction::Sum)`: averaging the processes' gradients would otherwise
// train with 1/N of the original's. Where the loss comes from a function of the program
// whose reduction the tool cannot see, it warns.

#include "analyses/MetricMeasure.h"
#include "analyses/RuleSupport.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/ScopeExit.h>

using namespace clang;

namespace accel {

const RuleInfo BackwardInfo = {
    "accelerate-backward", "loss.backward() -> accelerator.backward(loss)",
    "accelerator.backward(loss) applies loss scaling (mixed precision, gradient "
    "accumulation) before the gradients are synchronised across processes"};

namespace {

// How a loss is reduced over its batch, as far as the tool can see: Mean (a LibTorch loss
// with its default reduction, `.mean()`), Sum, Unseen (a function of the program, or a mix
// of sums and means, that the tool cannot trace), Other (anything else: left as it is).
enum class LossReductionSeen { Mean, Sum, Unseen, Other };

LossReductionSeen combineSeen(LossReductionSeen A, LossReductionSeen B) {
  using R = LossReductionSeen;
  if (A == R::Other)
    return B;
  if (B == R::Other || A == B)
    return A;
  return R::Unseen;
}

LossReductionSeen reductionOf(MigrationContext& Ctx, const Expr* E, int Depth = 0);

// A function of the program returning the loss: what its return statements return.
LossReductionSeen reductionOfFunction(MigrationContext& Ctx, const FunctionDecl* F, int Depth) {
  const FunctionDecl* Def = F->getDefinition();
  if (!Def || !Def->hasBody() || Depth > 3)
    return LossReductionSeen::Unseen;
  std::optional<LossReductionSeen> R;
  anyOf(Def->getBody(), [&](const Stmt* S) {
    if (const auto* Ret = dyn_cast<ReturnStmt>(S); Ret && Ret->getRetValue()) {
      LossReductionSeen One = reductionOf(Ctx, Ret->getRetValue(), Depth + 1);
      R = R ? combineSeen(*R, One) : One;
    }
    return false;
  });
  return R && *R != LossReductionSeen::Other ? *R : LossReductionSeen::Unseen;
}

// A local loss variable: its initialiser and every value its function assigns to it
// (`loss = loss / accumulation_steps` makes a sum something the tool cannot name).
LossReductionSeen reductionOfVariable(MigrationContext& Ctx, const VarDecl* V, int Depth) {
  using R = LossReductionSeen;
  // In `loss = loss / n` the variable stands for what it held before: its initialiser's.
  static thread_local llvm::DenseMap<const VarDecl*, R> Before;
  if (auto It = Before.find(V); It != Before.end())
    return It->second;
  R Seen = V->getInit() ? reductionOf(Ctx, V->getInit(), Depth + 1) : R::Other;
  const auto* F = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
  if (!F || !F->getBody())
    return Seen;
  Before[V] = Seen;
  auto Done = llvm::make_scope_exit([&] { Before.erase(V); });
  anyOf(F->getBody(), [&](const Stmt* S) {
    const auto* Op = dyn_cast<CXXOperatorCallExpr>(S);
    if (!Op || Op->getNumArgs() != 2 || referencedDecl(Op->getArg(0)) != V)
      return false;
    OverloadedOperatorKind K = Op->getOperator();
    if (K == OO_Equal || K == OO_PlusEqual || K == OO_MinusEqual)
      Seen = combineSeen(Seen, reductionOf(Ctx, Op->getArg(1), Depth + 1));
    else if ((K == OO_StarEqual || K == OO_SlashEqual) && Seen == R::Sum)
      Seen = R::Unseen;
    return false;
  });
  return Seen;
}

LossReductionSeen reductionOfCall(MigrationContext& Ctx, const CallExpr* C, int Depth) {
  MemberCall M;
  if (getMemberCall(C, M) && writtenArgs(C) == 0 && (M.Name == "sum" || M.Name == "mean"))
    return M.Name == "sum" ? LossReductionSeen::Sum : LossReductionSeen::Mean;
  // A function of the program (whatever its name says): what it returns.
  const FunctionDecl* F = C->getDirectCallee();
  if (F && !isa<CXXMethodDecl>(F) && inProgramCode(Ctx, F->getLocation()) && isTensor(C->getType()))
    return reductionOfFunction(Ctx, F, Depth);
  if (isLossCall(C))
    return hasSumReduction(Ctx, C) ? LossReductionSeen::Sum : LossReductionSeen::Mean;
  return LossReductionSeen::Other;
}

LossReductionSeen reductionOf(MigrationContext& Ctx, const Expr* E, int Depth) {
  E = E->IgnoreImplicit()->IgnoreParenImpCasts();
  if (const auto* DR = dyn_cast<DeclRefExpr>(E)) {
    const auto* V = dyn_cast<VarDecl>(DR->getDecl());
    if (!V || isa<ParmVarDecl>(V) || !V->isLocalVarDecl() || Depth > 8)
      return LossReductionSeen::Other;
    return reductionOfVariable(Ctx, V, Depth);
  }
  if (const auto* B = dyn_cast<BinaryOperator>(E)) {
    LossReductionSeen L = reductionOf(Ctx, B->getLHS(), Depth + 1);
    if (B->getOpcode() == BO_Add || B->getOpcode() == BO_Sub)
      return combineSeen(L, reductionOf(Ctx, B->getRHS(), Depth + 1));
    // A sum scaled by something: the tool cannot tell whether that makes it a mean.
    return L == LossReductionSeen::Sum ? LossReductionSeen::Unseen : L;
  }
  if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    if (Op->getOperator() == OO_Plus || Op->getOperator() == OO_Minus)
      return Op->getNumArgs() == 2 ? combineSeen(reductionOf(Ctx, Op->getArg(0), Depth + 1),
                                                 reductionOf(Ctx, Op->getArg(1), Depth + 1))
                                   : LossReductionSeen::Other;
    if (Op->getOperator() == OO_Star || Op->getOperator() == OO_Slash) {
      LossReductionSeen L = reductionOf(Ctx, Op->getArg(0), Depth + 1);
      return L == LossReductionSeen::Sum ? LossReductionSeen::Unseen : L;
    }
  }
  if (const auto* C = dyn_cast<CallExpr>(E))
    return reductionOfCall(Ctx, C, Depth);
  return LossReductionSeen::Other;
}

} // namespace

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
    LossReductionSeen Seen =
        M.Object->isTypeDependent() ? LossReductionSeen::Other : reductionOf(Ctx, M.Object);
    bool Sum = Seen == LossReductionSeen::Sum && writtenArgs(Call) == 0;
    Change C(Info.Id, Call->getBeginLoc());
    C.insertBefore(M.Object->getBeginLoc(),
                   Ctx.accel(Call, C) + ".backward(" + (M.IsArrow ? "*" : ""));
    C.replace(CharSourceRange::getCharRange(Op, LParen.getLocWithOffset(1)),
              Sum                 ? ", accelerate::LossReduction::Sum"
              : writtenArgs(Call) ? ", "
                                  : "");
    if (!Ctx.commit(C))
      continue;
    if (Seen == LossReductionSeen::Unseen ||
        (Seen == LossReductionSeen::Sum && writtenArgs(Call) != 0))
      Ctx.warn(Call->getBeginLoc(), Info.Id,
               "the tool cannot see how this loss is reduced over its batch: a sum-reduced "
               "loss would be averaged over processes like a mean, so N processes would train "
               "with 1/N of its gradient; if it is a sum, write "
               "accelerator.backward(loss, accelerate::LossReduction::Sum)");
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
