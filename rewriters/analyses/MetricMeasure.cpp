// Classifies what expressions in a sharded loop measure (see MetricMeasure.h).

#include "analyses/MetricMeasure.h"

using namespace clang;

namespace accel {

const Expr* moduleCallObject(const CallExpr* C, const Expr** Input) {
  const Expr *Obj = nullptr, *In = nullptr;
  if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(C)) {
    if (Op->getOperator() == OO_Call && Op->getNumArgs() > 0) {
      Obj = Op->getArg(0);
      In = Op->getNumArgs() > 1 ? Op->getArg(1) : nullptr;
    }
  } else if (MemberCall M; getMemberCall(C, M) && M.Name == "forward") {
    Obj = M.Object;
    In = C->getNumArgs() > 0 ? C->getArg(0) : nullptr;
  }
  if (!Obj)
    return nullptr;
  Obj = Obj->IgnoreParenImpCasts();
  if (const auto* Arrow = dyn_cast<CXXOperatorCallExpr>(Obj); // m-> of a holder
      Arrow && Arrow->getOperator() == OO_Arrow && Arrow->getNumArgs() > 0)
    Obj = Arrow->getArg(0)->IgnoreParenImpCasts();
  if (Input)
    *Input = In;
  return Obj;
}

// The loss module a call goes through: `criterion(out, y)` or `criterion->forward(out, y)`
// with a *Loss module.
static const Expr* lossModuleObject(const CallExpr* C) {
  const Expr* Obj = moduleCallObject(C);
  const CXXRecordDecl* RD = Obj ? pointeeRecord(Obj->getType()) : nullptr;
  return RD && StringRef(RD->getNameAsString()).contains("Loss") ? Obj : nullptr;
}

bool isLossCall(const CallExpr* C) {
  std::string N = calleeName(C);
  StringRef Name(N);
  if (Name.contains("loss") || Name.contains("cross_entropy"))
    return true;
  return lossModuleObject(C) != nullptr;
}

bool hasSumReduction(MigrationContext& Ctx, const CallExpr* C) {
  auto SaysSum = [](StringRef T) { return T.contains("Sum") || T.contains("kSum"); };
  for (const Expr* A : C->arguments())
    if (SaysSum(Ctx.text(A->getSourceRange())))
      return true;
  // A loss module configured where it is declared: `BCELoss
  // crit(BCELossOptions().reduction(torch::kSum))`.
  if (const Expr* Obj = lossModuleObject(C))
    if (const auto* DR = dyn_cast<DeclRefExpr>(Obj))
      if (const auto* V = dyn_cast<VarDecl>(DR->getDecl()); V && V->getInit())
        return SaysSum(Ctx.text(V->getInit()->getSourceRange()));
  return false;
}

bool isRuntimeMetricCall(const Expr* E) {
  const auto* C = dyn_cast<CallExpr>(E);
  if (!C)
    return false;
  MemberCall M;
  if (getMemberCall(C, M))
    return M.Name == "gather_for_metrics" || M.Name == "gather" || M.Name == "reduce";
  std::string N = calleeName(C);
  StringRef Name(N);
  return Name.ends_with("real_samples") || Name.ends_with("real_mean") ||
         Name.ends_with("batch_mean") || Name.ends_with("sum_across_processes") ||
         Name.ends_with("mean_across_processes");
}

bool MeasureAnalysis::declaredInLoop(const ValueDecl* D) const {
  if (!D)
    return false;
  SourceLocation L = D->getLocation();
  return Ctx.SM.isBeforeInTranslationUnit(Loop->getBeginLoc(), L) &&
         Ctx.SM.isBeforeInTranslationUnit(L, Loop->getEndLoc());
}

const VarDecl* MeasureAnalysis::loopLocal(const Expr* E) const {
  const auto* DR = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
  const auto* V = DR ? dyn_cast<VarDecl>(DR->getDecl()) : nullptr;
  return V && V != BatchVar && declaredInLoop(V) ? V : nullptr;
}

bool MeasureAnalysis::isBatch(const Expr* E) const {
  E = E->IgnoreParenImpCasts();
  if (const auto* DR = dyn_cast<DeclRefExpr>(E))
    return BatchVar && DR->getDecl() == BatchVar;
  if (const auto* ME = dyn_cast<MemberExpr>(E))
    return isBatch(ME->getBase());
  if (const auto* DE = dyn_cast<CXXDependentScopeMemberExpr>(E))
    return !DE->isImplicitAccess() && isBatch(DE->getBase());
  return false;
}

Measure MeasureAnalysis::combineAll(std::initializer_list<Measure> Ms) {
  Measure Other = Measure::Uniform;
  bool PerSample = false;
  for (Measure M : Ms) {
    if (M == Measure::Unknown)
      return Measure::Unknown;
    if (M == Measure::PerSample)
      PerSample = true;
    else if (M != Measure::Uniform) {
      if (Other != Measure::Uniform && Other != M)
        return Measure::Unknown;
      Other = M;
    }
  }
  return PerSample ? Measure::PerSample : Other;
}

// Elementwise or shape-preserving: per-sample when any operand is.
Measure MeasureAnalysis::combine(const Stmt* S) {
  Measure R = Measure::Uniform;
  for (const Stmt* Ch : S->children())
    if (const auto* E = dyn_cast_or_null<Expr>(Ch))
      R = combineAll({R, of(E)});
  return R;
}

Measure MeasureAnalysis::ofDecl(const VarDecl* V) {
  auto It = Memo.find(V);
  if (It != Memo.end())
    return It->second;
  Memo[V] = Measure::Unknown; // cycles
  Measure M;
  if (!V->getInit())
    M = isTensor(V->getType()) ? Measure::PerSample : Measure::Unknown;
  else
    M = of(V->getInit());
  Memo[V] = M;
  return M;
}

static bool dimArgIsZero(const CallExpr* C, unsigned Index) {
  if (C->getNumArgs() <= Index || isa<CXXDefaultArgExpr>(C->getArg(Index)))
    return true; // no dim: over every element
  // `sum(0)` passes 0 through an IntArrayRef / OptionalIntArrayRef constructor (and `{0}`
  // through an initializer list): look through those to the literal.
  const Expr* A = C->getArg(Index);
  for (int Depth = 0; A && Depth < 8; ++Depth) {
    A = A->IgnoreParenImpCasts();
    if (const auto* IL = dyn_cast<IntegerLiteral>(A))
      return IL->getValue() == 0;
    if (const auto* CE = dyn_cast<CXXConstructExpr>(A))
      A = CE->getNumArgs() == 1 ? CE->getArg(0) : nullptr;
    else if (const auto* ILE = dyn_cast<InitListExpr>(A))
      A = ILE->getNumInits() == 1 ? ILE->getInit(0) : nullptr;
    else if (const auto* SIL = dyn_cast<CXXStdInitializerListExpr>(A))
      A = SIL->getSubExpr();
    else if (const auto* BT = dyn_cast<CXXBindTemporaryExpr>(A))
      A = BT->getSubExpr();
    else if (const auto* FC = dyn_cast<CXXFunctionalCastExpr>(A))
      A = FC->getSubExpr();
    else
      return false;
  }
  return false;
}

Measure MeasureAnalysis::ofMemberCall(const CallExpr* C, const MemberCall& M) {
  Measure Obj = M.Object ? of(M.Object) : Measure::Uniform;
  StringRef N = M.Name;
  if (N == "sum" || N == "nansum")
    return Obj == Measure::PerSample
               ? (dimArgIsZero(C, 0) ? Measure::SampleSum : Measure::PerSample)
               : Obj;
  if (N == "mean" || N == "nanmean")
    return Obj == Measure::PerSample
               ? (dimArgIsZero(C, 0) ? Measure::BatchMean : Measure::PerSample)
               : Obj;
  if (N == "size")
    return Obj == Measure::PerSample && dimArgIsZero(C, 0) && C->getNumArgs() == 1
               ? Measure::SampleSum
               : Measure::Uniform;
  if (N == "numel")
    return Obj == Measure::PerSample ? Measure::SampleSum : Obj;
  if (N == "max" || N == "min" || N == "argmax" || N == "argmin" || N == "std" || N == "var" ||
      N == "median" || N == "all" || N == "any" || N == "prod")
    if (Obj == Measure::PerSample && dimArgIsZero(C, 0))
      return Measure::Unknown; // a reduction over the batch that does not add up
  Measure R = Obj;
  for (const Expr* A : C->arguments())
    R = combineAll({R, of(A)});
  return R;
}

Measure MeasureAnalysis::ofCall(const CallExpr* C) {
  if (isRuntimeMetricCall(C))
    return Measure::Unknown;
  if (isLossCall(C)) {
    Measure Args = Measure::Uniform;
    for (const Expr* A : C->arguments())
      Args = combineAll({Args, of(A)});
    if (Args != Measure::PerSample)
      return Args;
    return hasSumReduction(Ctx, C) ? Measure::SampleSum : Measure::BatchMean;
  }
  if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(C)) {
    if (Op->getNumArgs() == 2) {
      switch (Op->getOperator()) {
      case OO_Star:
        return ofBinary(BO_Mul, Op->getArg(0), Op->getArg(1));
      case OO_Slash:
        return ofBinary(BO_Div, Op->getArg(0), Op->getArg(1));
      case OO_Plus:
        return ofBinary(BO_Add, Op->getArg(0), Op->getArg(1));
      case OO_Minus:
        return ofBinary(BO_Sub, Op->getArg(0), Op->getArg(1));
      default:
        break;
      }
    }
    return combine(C);
  }
  MemberCall M;
  if (getMemberCall(C, M))
    return ofMemberCall(C, M);
  std::string N = calleeName(C);
  StringRef Name(N);
  if ((Name == "torch::sum" || Name == "at::sum") && C->getNumArgs() >= 1)
    return of(C->getArg(0)) == Measure::PerSample && dimArgIsZero(C, 1) ? Measure::SampleSum
                                                                        : combine(C);
  if ((Name == "torch::mean" || Name == "at::mean") && C->getNumArgs() >= 1)
    return of(C->getArg(0)) == Measure::PerSample && dimArgIsZero(C, 1) ? Measure::BatchMean
                                                                        : combine(C);
  if (Name.starts_with("torch::") || Name.starts_with("at::") || Name.starts_with("std::") ||
      Name.starts_with("c10::"))
    return combine(C);
  // The program's own functions (or unknown ones): only uniform arguments give a known value.
  Measure Args = Measure::Uniform;
  for (const Expr* A : C->arguments())
    Args = combineAll({Args, of(A)});
  return Args == Measure::Uniform ? Measure::Uniform : Measure::Unknown;
}

Measure MeasureAnalysis::ofBinary(BinaryOperatorKind Op, const Expr* LE, const Expr* RE) {
  Measure L = of(LE), R = of(RE);
  if (L == Measure::Unknown || R == Measure::Unknown)
    return Measure::Unknown;
  if (L == Measure::PerSample || R == Measure::PerSample)
    return Measure::PerSample;
  auto Is = [&](Measure A, Measure B) { return (L == A && R == B) || (L == B && R == A); };
  switch (Op) {
  case BO_Mul:
    if (Is(Measure::BatchMean, Measure::SampleSum)) // mean x count = sum
      return Measure::SampleSum;
    if (L == Measure::Uniform || R == Measure::Uniform)
      return L == Measure::Uniform ? R : L;
    return Measure::Unknown;
  case BO_Div:
    if (R == Measure::Uniform)
      return L;
    if (L == Measure::SampleSum && R == Measure::SampleSum) // sum / count = mean
      return Measure::BatchMean;
    return Measure::Unknown;
  case BO_Add:
  case BO_Sub:
    return L == R ? L : Measure::Unknown;
  default:
    return combineAll({L, R});
  }
}

Measure MeasureAnalysis::of(const Expr* E) {
  if (!E)
    return Measure::Uniform;
  E = E->IgnoreParenImpCasts();
  if (isBatch(E) || Ctx.need<ShardedBatches>().Slices.count(E))
    return Measure::PerSample; // the batch, or a whole tensor this process takes a share of
  if (const auto* DR = dyn_cast<DeclRefExpr>(E)) {
    const auto* V = dyn_cast<VarDecl>(DR->getDecl());
    return V && declaredInLoop(V) ? ofDecl(V) : Measure::Uniform;
  }
  if (isa<MemberExpr>(E) || isa<CXXDependentScopeMemberExpr>(E))
    return Measure::Uniform; // members of other objects (options, the model)
  if (isa<IntegerLiteral>(E) || isa<FloatingLiteral>(E) || isa<CXXBoolLiteralExpr>(E) ||
      isa<StringLiteral>(E) || isa<CharacterLiteral>(E))
    return Measure::Uniform;
  if (const auto* C = dyn_cast<CallExpr>(E)) {
    // This process's share of a hand-cut batch (now, or wrapped by an earlier run).
    if (Ctx.need<ShardedBatches>().Slices.count(C) ||
        StringRef(calleeName(C)).ends_with("process_share"))
      return Measure::PerSample;
    return ofCall(C);
  }
  if (const auto* B = dyn_cast<BinaryOperator>(E))
    return ofBinary(B->getOpcode(), B->getLHS(), B->getRHS());
  if (const auto* U = dyn_cast<UnaryOperator>(E))
    return of(U->getSubExpr());
  if (const auto* CE = dyn_cast<CXXConstructExpr>(E))
    if (CE->getNumArgs() == 1)
      return of(CE->getArg(0));
  if (isa<LambdaExpr>(E))
    return Measure::Unknown;
  return combine(E);
}

void MeasureAnalysis::perSampleUnits(const Expr* E, std::vector<const Expr*>& Out) {
  if (!E || isRuntimeMetricCall(E))
    return;
  const Expr* Bare = E->IgnoreParenImpCasts();
  bool Leaf = false;
  if (isa<DeclRefExpr>(Bare)) {
    const VarDecl* V = loopLocal(Bare);
    Leaf = isBatch(Bare) || Ctx.need<ShardedBatches>().Slices.count(Bare) ||
           (V && (isTensor(V->getType()) || V->getType()->isDependentType()));
  } else if (isa<MemberExpr>(Bare) || isa<CXXDependentScopeMemberExpr>(Bare)) {
    // batch.data, not the callee of batch.data.size(0)
    const auto* Call = Ctx.parentAs<CallExpr>(Bare);
    bool Callee = Call && Call->getCallee()->IgnoreParenImpCasts() == Bare;
    Leaf = !Callee && isBatch(Bare);
  }
  if (Leaf) {
    if (of(Bare) == Measure::PerSample)
      Out.push_back(Bare);
    return;
  }
  for (const Stmt* C : E->children())
    if (const auto* CE = dyn_cast_or_null<Expr>(C))
      perSampleUnits(CE, Out);
}

} // namespace accel
