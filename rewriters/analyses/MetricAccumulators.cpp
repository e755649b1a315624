#include "analyses/MetricAccumulators.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

namespace {

bool startsAtZero(const VarDecl* V) {
  const Expr* I = V->getInit();
  if (!I)
    return false;
  I = ignoreImplicit(I)->IgnoreParenCasts();
  if (const auto* IL = dyn_cast<IntegerLiteral>(I))
    return IL->getValue() == 0;
  if (const auto* FL = dyn_cast<FloatingLiteral>(I))
    return FL->getValue().isZero();
  if (const auto* IL = dyn_cast<InitListExpr>(I))
    return IL->getNumInits() == 0 ||
           (IL->getNumInits() == 1 && isa<IntegerLiteral>(IL->getInit(0)->IgnoreParenImpCasts()) &&
            cast<IntegerLiteral>(IL->getInit(0)->IgnoreParenImpCasts())->getValue() == 0);
  if (isa<CXXScalarValueInitExpr>(I) || isa<ImplicitValueInitExpr>(I))
    return true;
  if (const auto* C = dyn_cast<CallExpr>(I)) {
    std::string N = calleeName(C);
    return N == "torch::zeros" || N == "at::zeros" || N == "torch::zeros_like" ||
           N == "at::zeros_like";
  }
  return false;
}

// Parameters that receive a prepared loader (`test(model, *test_loader)`): loops over
// them iterate a prepared loader too.
llvm::SmallPtrSet<const ValueDecl*, 4> loaderParams(MigrationContext& Ctx) {
  llvm::SmallPtrSet<const ValueDecl*, 4> Params;
  for (const CallExpr* Call : userCalls(Ctx)) {
    const FunctionDecl* FD = Call->getDirectCallee();
    if (!FD)
      continue;
    if (const FunctionDecl* Pattern = FD->getTemplateInstantiationPattern())
      FD = Pattern;
    for (unsigned I = 0; I < Call->getNumArgs() && I < FD->getNumParams(); ++I) {
      const ValueDecl* D = referencedDecl(Call->getArg(I));
      if (D && (Ctx.need<PreparedLoaders>().Vars.count(D) || Params.count(D)))
        Params.insert(FD->getParamDecl(I));
    }
  }
  return Params;
}

// A parameter of a template type whose batches have `.data` or `.target`
// (`template <typename DataLoader> void test(..., DataLoader& loader)`, pytorch/examples'
// style), in a file that holds no call of it: a header of train/evaluate templates,
// migrated alone or in project mode as part of the source that calls them. Its loader is
// the caller's, taken as prepared there, as the loops that train on it are
// (ManualBatchingRule.cpp, loaderLoop: a loader passed in is the caller's to prepare).
bool loaderTemplateParam(const CXXForRangeStmt* FR, const ValueDecl* D) {
  const auto* P = dyn_cast<ParmVarDecl>(D);
  if (!P || !P->getType().getNonReferenceType()->getAs<TemplateTypeParmType>())
    return false;
  const VarDecl* Batch = FR->getLoopVariable();
  return anyOf(FR->getBody(), [Batch](const Stmt* X) {
    const auto* M = dyn_cast<CXXDependentScopeMemberExpr>(X);
    const auto* Base = M && !M->isImplicitAccess()
                           ? dyn_cast<DeclRefExpr>(M->getBase()->IgnoreParenImpCasts())
                           : nullptr;
    // By value: getAsString() returns a temporary (a StringRef to it dangled; clang's
    // -Wdangling-gsl).
    const std::string Name = M ? M->getMember().getAsString() : "";
    return Base && Base->getDecl() == Batch && (Name == "data" || Name == "target");
  });
}

void collectSteps(const Stmt* S, MeasureAnalysis& M, std::vector<MetricAccumulator>& Accs) {
  if (!S || isa<LambdaExpr>(S))
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
    const ValueDecl* D = referencedDecl(LHS);
    if (D && !M.declaredInLoop(D) && (isa<VarDecl>(D) || isa<FieldDecl>(D))) {
      auto It = std::find_if(Accs.begin(), Accs.end(),
                             [D](const MetricAccumulator& A) { return A.D == D; });
      if (It == Accs.end()) {
        Accs.push_back({D, {}, Measure::Uniform, false});
        It = Accs.end() - 1;
      }
      It->Steps.push_back({S, LHS, RHS, M.of(RHS)});
    }
    return;
  }
  for (const Stmt* C : S->children())
    collectSteps(C, M, Accs);
}

// A second run: `acc = accelerate::sum_across_processes(..., acc);` is already there, or a
// step already calls the runtime.
bool alreadyReduced(const MetricAccumulator& A, const Stmt* FnBody) {
  bool Migrated = llvm::any_of(A.Steps, [](const MetricStep& S) {
    return anyOf(S.RHS, [](const Stmt* X) {
      const auto* E = dyn_cast<Expr>(X);
      return E && isRuntimeMetricCall(E);
    });
  });
  return Migrated ||
         (FnBody && anyOf(FnBody, [D = A.D](const Stmt* X) {
            const Expr *L = nullptr, *R = nullptr;
            if (const auto* B = dyn_cast<BinaryOperator>(X); B && B->getOpcode() == BO_Assign) {
              L = B->getLHS();
              R = B->getRHS();
            } else if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(X);
                       Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2) {
              L = Op->getArg(0);
              R = Op->getArg(1);
            }
            return L && referencedDecl(L) == D && isRuntimeMetricCall(ignoreImplicit(R));
          }));
}

void classify(MetricAccumulator& A) {
  Measure M = A.Steps.front().M;
  for (const MetricStep& S : A.Steps)
    if (S.M != M)
      M = Measure::Unknown;
  A.M = M;
}

// Whether Fn divides A by B or B by A somewhere (`correct / total`, `loss_sum /= total`).
bool inRatio(const Stmt* Fn, const ValueDecl* A, const ValueDecl* B) {
  return anyOf(Fn, [&](const Stmt* X) {
    const Expr *L = nullptr, *R = nullptr;
    if (const auto* BO = dyn_cast<BinaryOperator>(X);
        BO && (BO->getOpcode() == BO_Div || BO->getOpcode() == BO_DivAssign)) {
      L = BO->getLHS();
      R = BO->getRHS();
    } else if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(X);
               Op && Op->getNumArgs() == 2 &&
               (Op->getOperator() == OO_Slash || Op->getOperator() == OO_SlashEqual)) {
      L = Op->getArg(0);
      R = Op->getArg(1);
    }
    return L && ((refersTo(L, A) && refersTo(R, B)) || (refersTo(L, B) && refersTo(R, A)));
  });
}

// A constant per batch next to a sum over samples, in a ratio: it counts the samples of
// each batch.
void findCounters(std::vector<MetricAccumulator>& Accs, const Stmt* Fn) {
  if (!Fn)
    return;
  for (MetricAccumulator& B : Accs) {
    if (B.M != Measure::Uniform)
      continue;
    bool Literal1 = llvm::all_of(B.Steps, [](const MetricStep& S) {
      const auto* IL = dyn_cast<IntegerLiteral>(S.RHS->IgnoreParenImpCasts());
      return IL && IL->getValue() == 1;
    });
    if (Literal1)
      continue; // counts batches: the same on every process
    B.Counter = llvm::any_of(Accs, [&](const MetricAccumulator& A) {
      return A.M == Measure::SampleSum && inRatio(Fn, A.D, B.D);
    });
  }
}

} // namespace

std::vector<const CXXForRangeStmt*> preparedLoaderLoops(MigrationContext& Ctx) {
  llvm::SmallPtrSet<const ValueDecl*, 4> Params = loaderParams(Ctx);
  std::vector<const CXXForRangeStmt*> Loops;
  for (const auto& N :
       match(cxxForRangeStmt(unless(isInTemplateInstantiation())).bind("l"), Ctx.AST)) {
    const auto* L = N.getNodeAs<CXXForRangeStmt>("l");
    const ValueDecl* D = referencedDecl(L->getRangeInit());
    if (Ctx.inMainFile(L->getBeginLoc()) && D &&
        (Ctx.need<PreparedLoaders>().Vars.count(D) || Params.count(D) || loaderTemplateParam(L, D)))
      Loops.push_back(L);
  }
  return Loops;
}

LoopAccumulators findAccumulators(MigrationContext& Ctx, MeasureAnalysis& MA, const Stmt* Loop,
                                  const Stmt* Body) {
  std::vector<MetricAccumulator> Accs;
  collectSteps(Body, MA, Accs);
  const Stmt* Fn = functionBodyOf(Ctx, Loop);
  LoopAccumulators Out;
  for (MetricAccumulator& A : Accs) {
    if (alreadyReduced(A, Fn)) {
      Out.Reduced.push_back(A.D);
      continue;
    }
    classify(A);
    Out.Todo.push_back(A);
  }
  findCounters(Out.Todo, Fn);
  return Out;
}

bool canDeferReduction(MigrationContext& Ctx, const MetricAccumulator& A, const Stmt* Loop) {
  const auto* V = dyn_cast<VarDecl>(A.D);
  if (!V || !V->hasLocalStorage() || isa<ParmVarDecl>(V) || !startsAtZero(V))
    return false;
  if (!Ctx.parentAs<CompoundStmt>(Loop))
    return false;
  const Stmt* Body = loopBody(Loop);
  if (!isa_and_nonnull<CompoundStmt>(Body))
    return false;
  // The loop runs at most once per execution of the declaration: no loop or lambda lies
  // between the declaration's block and the loop.
  const CompoundStmt* Block = Ctx.declaringBlock(V);
  if (!Block || !encloses(Ctx, Block, Loop))
    return false;
  const Stmt* Around =
      nearestAncestor(Ctx, Loop, stmt(ast_matchers::anyOf(loopStmt(), lambdaExpr())));
  if (Around && encloses(Ctx, Block, Around))
    return false;
  // Nothing but the accumulations touches it from its declaration to the loop's end, and
  // the loop is left only at its end (the reduction after it runs on every process).
  const Stmt* Fn = functionBodyOf(Ctx, Loop);
  bool Other = anyOf(Fn, [&](const Stmt* X) {
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    if (!DR || DR->getDecl() != V)
      return false;
    if (Ctx.SM.isBeforeInTranslationUnit(Loop->getEndLoc(), DR->getLocation()))
      return false;
    return llvm::none_of(A.Steps, [DR](const MetricStep& S) {
      return ignoreImplicit(S.LHS)->IgnoreParenCasts() == DR;
    });
  });
  bool Leaves = anyOf(Body, [](const Stmt* X) {
    return isa<ReturnStmt>(X) || isa<GotoStmt>(X) || isa<CoreturnStmt>(X);
  });
  return !Other && !Leaves;
}

const Stmt* functionBodyOf(MigrationContext& Ctx, const Stmt* S) {
  const FunctionDecl* FD = Ctx.enclosingFunction(DynTypedNode::create(*S));
  return FD ? FD->getBody() : nullptr;
}

bool ReachedByEveryProcess::sameOnEveryProcess(const Stmt* S, const Stmt* Loop) {
  bool Same = true;
  Ctx.findAncestor(DynTypedNode::create(*S), [&](const DynTypedNode& P, const DynTypedNode&) {
    const Stmt* A = P.get<Stmt>();
    if (!A || A == Loop)
      return true;
    const Expr* Cond = nullptr;
    if (const auto* If = dyn_cast<IfStmt>(A))
      Cond = If->getCond();
    else if (const auto* W = dyn_cast<WhileStmt>(A))
      Cond = W->getCond();
    else if (const auto* D = dyn_cast<DoStmt>(A))
      Cond = D->getCond();
    else if (const auto* F = dyn_cast<ForStmt>(A))
      Cond = F->getCond();
    else if (const auto* Sw = dyn_cast<SwitchStmt>(A))
      Cond = Sw->getCond();
    else if (isa<LambdaExpr>(A) || isa<CXXTryStmt>(A) || isa<CXXCatchStmt>(A) ||
             isa<CXXForRangeStmt>(A))
      Same = false; // code that may run elsewhere, or loops over per-process ranges
    if (!PP)
      PP = std::make_unique<PerProcessValues>(Ctx);
    if (Cond && PP->perProcess(Cond))
      Same = false;
    return !Same;
  });
  return Same;
}

bool ReachedByEveryProcess::jumpsBefore(const Stmt* S, const Stmt* Body, const Stmt* Loop) {
  return anyOf(Body, [&](const Stmt* X) {
    return (isa<ContinueStmt>(X) || isa<BreakStmt>(X) || isa<ReturnStmt>(X) || isa<GotoStmt>(X)) &&
           Ctx.SM.isBeforeInTranslationUnit(X->getBeginLoc(), S->getBeginLoc()) &&
           !sameOnEveryProcess(X, Loop);
  });
}

} // namespace accel
