// accelerate-gather-metrics: in evaluation loops over a prepared loader (NoGradGuard,
// InferenceMode or after eval()), metrics accumulated from per-batch tensors
// (`correct += pred.eq(target).sum().item<int64_t>()`, `loss_sum += nll_loss(out, y,
// {}, Reduction::Sum).item<double>()`, `total += target.size(0)`) are computed from
// accelerator.gather_for_metrics(...) of those tensors, so every process accumulates
// the whole dataset once (padding duplicates dropped) and prints the same number.
// Mean-reduced per-batch values cannot be combined exactly: warned, left as they were.

#include "RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo GatherMetricsInfo = {
    "accelerate-gather-metrics", "evaluation metrics from gathered tensors",
    "each process evaluates only its shard: metrics must be computed from "
    "accelerator.gather_for_metrics(...) of the per-sample tensors to cover the whole "
    "dataset"};

namespace {

class GatherMigration {
 public:
  GatherMigration(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}

  void run() {
    collectLoaderParams();
    for (const auto& N : match(stmt(ast_matchers::anyOf(cxxForRangeStmt(), forStmt(), whileStmt()),
                                    unless(isInTemplateInstantiation()))
                                   .bind("l"),
                               Ctx.AST)) {
      const auto* L = N.getNodeAs<Stmt>("l");
      if (!Ctx.inMainFile(L->getBeginLoc()))
        continue;
      const auto* FR = dyn_cast<CXXForRangeStmt>(L);
      if (!FR || !iteratesPreparedLoader(FR) || !inEvaluation(FR))
        continue;
      Loop = FR;
      visitAccumulators(FR->getBody());
    }
  }

 private:
  // Parameters that receive a prepared loader (`test(model, *test_loader)`): loops over
  // them iterate a prepared loader too.
  void collectLoaderParams() {
    for (const CallExpr* Call : userCalls(Ctx)) {
      const FunctionDecl* FD = Call->getDirectCallee();
      if (!FD)
        continue;
      if (const FunctionDecl* Pattern = FD->getTemplateInstantiationPattern())
        FD = Pattern;
      for (unsigned I = 0; I < Call->getNumArgs() && I < FD->getNumParams(); ++I) {
        const ValueDecl* D = referencedDecl(Call->getArg(I));
        if (D && (Ctx.Loaders.count(D) || LoaderParams.count(D)))
          LoaderParams.insert(FD->getParamDecl(I));
      }
    }
  }

  bool iteratesPreparedLoader(const CXXForRangeStmt* FR) const {
    const ValueDecl* D = referencedDecl(FR->getRangeInit());
    return D && (Ctx.Loaders.count(D) || LoaderParams.count(D));
  }

  static bool isEvalMarker(const Stmt* S) {
    if (const auto* DS = dyn_cast<DeclStmt>(S)) {
      for (const Decl* D : DS->decls())
        if (const auto* V = dyn_cast<VarDecl>(D)) {
          std::string T = V->getType().getAsString();
          if (StringRef(T).contains("NoGradGuard") || StringRef(T).contains("InferenceMode") ||
              StringRef(T).contains("AutoGradMode"))
            return true;
        }
      return false;
    }
    return anyOf(S, [](const Stmt* X) {
      MemberCall M;
      return isa<CallExpr>(X) && getMemberCall(cast<CallExpr>(X), M) && M.Name == "eval";
    });
  }

  bool inEvaluation(const CXXForRangeStmt* FR) {
    if (const auto* Body = dyn_cast<CompoundStmt>(FR->getBody()))
      for (const Stmt* S : Body->body())
        if (isa<DeclStmt>(S) && isEvalMarker(S))
          return true;
    // Statements before the loop in every enclosing block.
    const Stmt* Cur = FR;
    for (int Depth = 0; Depth < 64; ++Depth) {
      auto Ps = Ctx.parents(DynTypedNode::create(*Cur));
      if (Ps.empty())
        return false;
      const Stmt* P = Ps[0].get<Stmt>();
      if (!P)
        return false;
      if (const auto* CS = dyn_cast<CompoundStmt>(P)) {
        for (const Stmt* S : CS->body()) {
          if (S == Cur)
            break;
          if (isEvalMarker(S))
            return true;
        }
      }
      Cur = P;
    }
    return false;
  }

  bool declaredInLoop(const ValueDecl* D) const {
    if (!D)
      return false;
    SourceLocation L = D->getLocation();
    return Ctx.SM.isBeforeInTranslationUnit(Loop->getBeginLoc(), L) &&
           Ctx.SM.isBeforeInTranslationUnit(L, Loop->getEndLoc());
  }

  void visitAccumulators(const Stmt* S) {
    if (!S)
      return;
    if (isa<LambdaExpr>(S))
      return;
    const Expr *LHS = nullptr, *RHS = nullptr;
    if (const auto* CA = dyn_cast<CompoundAssignOperator>(S)) {
      if (CA->getOpcode() == BO_AddAssign) {
        LHS = CA->getLHS();
        RHS = CA->getRHS();
      }
    } else if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(S)) {
      if (Op->getOperator() == OO_PlusEqual && Op->getNumArgs() == 2) {
        LHS = Op->getArg(0);
        RHS = Op->getArg(1);
      }
    }
    if (LHS && RHS) {
      const ValueDecl* Acc = referencedDecl(LHS);
      // Scalars (`correct += ...item()`) and tensors (`sum += out.sum(0)`) alike.
      if (Acc && !declaredInLoop(Acc))
        accumulator(S, RHS);
      return;
    }
    for (const Stmt* C : S->children())
      visitAccumulators(C);
  }

  // Per-batch tensors: locals of the loop body and the batch's members.
  void collectUnits(const Expr* E, std::vector<const Expr*>& Units) {
    if (!E)
      return;
    if (isGatherCall(E))
      return;  // already gathered (a second run)
    if (const auto* ME = dyn_cast<MemberExpr>(E)) {
      if (const auto* DR = dyn_cast<DeclRefExpr>(ME->getBase()->IgnoreImpCasts()))
        if (DR->getDecl() == Loop->getLoopVariable()) {
          Units.push_back(ME);
          return;
        }
    }
    if (const auto* DE = dyn_cast<CXXDependentScopeMemberExpr>(E)) {
      if (!DE->isImplicitAccess())
        if (const auto* DR = dyn_cast<DeclRefExpr>(DE->getBase()->IgnoreImpCasts()))
          if (DR->getDecl() == Loop->getLoopVariable()) {
            Units.push_back(DE);
            return;
          }
    }
    if (const auto* DR = dyn_cast<DeclRefExpr>(E)) {
      const auto* V = dyn_cast<VarDecl>(DR->getDecl());
      if (V && V != Loop->getLoopVariable() && declaredInLoop(V) &&
          (isTensor(V->getType()) || V->getType()->isDependentType()))
        Units.push_back(DR);
      return;
    }
    for (const Stmt* C : E->children())
      if (const auto* CE = dyn_cast_or_null<Expr>(C))
        collectUnits(CE, Units);
  }

  static bool isGatherCall(const Expr* E) {
    const auto* C = dyn_cast<CallExpr>(E);
    MemberCall M;
    return C && getMemberCall(C, M) &&
           (M.Name == "gather_for_metrics" || M.Name == "gather" || M.Name == "reduce");
  }

  static bool hasSumReduction(const CallExpr* C, MigrationContext& Ctx) {
    for (const Expr* A : C->arguments()) {
      std::string T = Ctx.text(A->getSourceRange());
      if (StringRef(T).contains("Sum") || StringRef(T).contains("kSum"))
        return true;
    }
    return false;
  }

  static bool isLossCall(const CallExpr* C) {
    std::string N = calleeName(C);
    StringRef Name(N);
    if (Name.contains("loss") || Name.contains("cross_entropy"))
      return true;
    if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(C))  // criterion(out, y)
      if (Op->getOperator() == OO_Call) {
        const CXXRecordDecl* RD = pointeeRecord(Op->getArg(0)->getType());
        return RD && StringRef(RD->getNameAsString()).contains("Loss");
      }
    return false;
  }

  // "mean" when a mean-reduced quantity is in E, "sum" when a summing loss, "" otherwise.
  StringRef reduction(const Expr* E) {
    StringRef R;
    anyOf(E, [&](const Stmt* S) {
      const auto* C = dyn_cast<CallExpr>(S);
      if (!C)
        return false;
      MemberCall M;
      if (getMemberCall(C, M) && M.Name == "mean") {
        R = "mean";
        return true;
      }
      if (isLossCall(C)) {
        R = hasSumReduction(C, Ctx) ? "sum" : "mean";
        return R == "mean";
      }
      return false;
    });
    return R;
  }

  void accumulator(const Stmt* At, const Expr* RHS) {
    // `sum += loss.item<double>()` with `auto loss = ...` in the loop: the metric is
    // computed in the variable's initialiser.
    const Expr* Metric = RHS;
    std::vector<const Expr*> Units;
    collectUnits(RHS, Units);
    if (Units.empty())
      return;
    if (Units.size() == 1)
      if (const auto* DR = dyn_cast<DeclRefExpr>(Units[0]))
        if (const auto* V = dyn_cast<VarDecl>(DR->getDecl()))
          if (V->getInit() && !reduction(V->getInit()).empty()) {
            Metric = V->getInit();
            Units.clear();
            collectUnits(Metric, Units);
          }
    if (reduction(Metric) == "mean") {
      Ctx.warn(At->getBeginLoc(), Info.Id,
               "this metric accumulates a mean-reduced per-batch value, which cannot be "
               "combined exactly across processes: use a sum reduction over "
               "accelerator.gather_for_metrics(...) of outputs and targets");
      return;
    }
    if (Units.empty())
      return;
    Change C(Info.Id, At->getBeginLoc());
    std::string Acc = Ctx.accel(At);
    for (const Expr* U : Units) {
      C.insertBefore(U->getBeginLoc(), Acc + ".gather_for_metrics(");
      C.insertAfter(U->getEndLoc(), ")");
    }
    Ctx.commit(C);
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  const CXXForRangeStmt* Loop = nullptr;
  llvm::SmallPtrSet<const ValueDecl*, 4> LoaderParams;
};

}  // namespace

void runGatherMetrics(MigrationContext& Ctx, const RuleInfo& Info) {
  GatherMigration(Ctx, Info).run();
}

}  // namespace accel
