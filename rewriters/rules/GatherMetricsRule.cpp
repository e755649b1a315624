// accelerate-gather-metrics: values summed over the batches of a sharded loop (a loop over
// a prepared loader, in training or evaluation, or a hand-batched loop whose batches are
// split between the processes) are per process. Each accumulation `acc += <expr>` is
// classified by what <expr> measures (MetricMeasure.h):
//  - a sum over samples (`pred.eq(y).sum().item<int64_t>()`, `loss.item() * x.size(0)`,
//    `y.size(0)`): per-sample tensors are narrowed to this process's real samples
//    (accelerate::real_samples drops the duplicates that even_batches padding added to the
//    last batch, as gather_for_metrics does) and the accumulator is summed over the processes;
//  - a per-batch mean (`loss.item<double>()`): averaged over the processes (the whole
//    batch's mean when the shares are equal);
//  - a constant per batch (`total += kBatchSize`) that divides (or is divided by) a sum over
//    samples: it counts samples, so it becomes the batch's real sample count, summed;
//  - anything else: warned, left as it was.
// The reduction runs once after the loop when the accumulator starts at zero right before
// it and nothing else reads it until the loop ends; otherwise at every step.
// A value assigned (not summed) at every step from the batch, kept past the step
// (`last_loss = loss.item<double>()`, then printed or tested against a threshold), would be
// one process's part standing for the batch: a per-batch mean becomes the whole batch's
// (accelerate::batch_mean, weighted by each process's real samples), a sum over a hand-cut
// batch's samples is summed over the processes; one assigned only on some steps is warned.

#include "analyses/MetricMeasure.h"
#include "analyses/PerProcessValues.h"

#include <memory>
#include <set>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo GatherMetricsInfo = {
    "accelerate-gather-metrics", "metrics summed over sharded batches cover every process",
    "each process sees only its shard of the data: a metric summed over its batches must be "
    "reduced across processes (accelerate::sum_across_processes, mean_across_processes), "
    "counting each sample once (accelerate::real_samples)"};

namespace {

struct Step {
  const Stmt* S;
  const Expr* LHS;
  const Expr* RHS;
  Measure M;
};

struct Accumulator {
  const ValueDecl* D = nullptr;
  std::vector<Step> Steps;
  Measure M = Measure::Uniform;
  bool Counter = false; // a constant per batch that counts samples
};

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

class MetricsMigration {
 public:
  MetricsMigration(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}

  void run() {
    collectLoaderParams();
    for (const auto& N :
         match(cxxForRangeStmt(unless(isInTemplateInstantiation())).bind("l"), Ctx.AST)) {
      const auto* L = N.getNodeAs<CXXForRangeStmt>("l");
      if (Ctx.inMainFile(L->getBeginLoc()) && iteratesPreparedLoader(L))
        migrateLoop(L, L->getLoopVariable(), L->getBody(), /*Padded=*/true);
    }
    for (const Stmt* L : Ctx.need<ShardedBatches>().Loops)
      migrateLoop(L, nullptr, loopBody(L), /*Padded=*/false);
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
        if (D && (Ctx.need<PreparedLoaders>().Vars.count(D) || LoaderParams.count(D)))
          LoaderParams.insert(FD->getParamDecl(I));
      }
    }
  }

  bool iteratesPreparedLoader(const CXXForRangeStmt* FR) const {
    const ValueDecl* D = referencedDecl(FR->getRangeInit());
    return D && (Ctx.need<PreparedLoaders>().Vars.count(D) || LoaderParams.count(D) ||
                 loaderTemplateParam(FR, D));
  }

  // A parameter of a template type whose batches have `.data` or `.target`
  // (`template <typename DataLoader> void test(..., DataLoader& loader)`, pytorch/examples'
  // style), in a file that holds no call of it: a header of train/evaluate templates,
  // migrated alone or in project mode as part of the source that calls them. Its loader is
  // the caller's, taken as prepared there, as the loops that train on it are
  // (ManualBatchingRule.cpp, loaderLoop: a loader passed in is the caller's to prepare).
  static bool loaderTemplateParam(const CXXForRangeStmt* FR, const ValueDecl* D) {
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

  void migrateLoop(const Stmt* Loop, const VarDecl* BatchVar, const Stmt* Body, bool Padded);
  void collectAssignments(const Stmt* S, std::vector<Step>& Out);
  void migrateAssignments(const Stmt* Loop, const Stmt* Body, bool Padded,
                          const std::vector<Accumulator>& Accs);
  std::string assignedUnit(const Step& St, const std::string& Acc);
  void migratePrints(const Stmt* Loop, const Stmt* Body, bool Padded);
  bool reducePrinted(const Stmt* Loop, const CallExpr* Print, const Expr* Shown, Measure M,
                     bool Padded);
  bool sameOnEveryProcess(const Stmt* S, const Stmt* Loop);
  bool jumpsBefore(const Stmt* S, const Stmt* Body, const Stmt* Loop);
  std::string freshName(const Expr* Value, const Stmt* At);
  void collectSteps(const Stmt* S, MeasureAnalysis& MA, std::vector<Accumulator>& Accs);
  void classify(Accumulator& A, const Stmt* Loop);
  void findCounters(std::vector<Accumulator>& Accs, const Stmt* Loop);
  bool emit(const Accumulator& A, const Stmt* Loop, bool Padded, Change& LoopChange,
            std::string& After);
  void wrapUnits(Change& C, const Step& St, const Stmt* Loop, bool Padded);
  bool onlyMetricsRead(const VarDecl* V, const Stmt* At);
  const VarDecl* metricLocal(const Stmt* X);
  void batchMeans(const Expr* E, std::vector<const Expr*>& Means);
  bool inside(const Stmt* S, const std::vector<const Expr*>& Parts) const;
  bool realInputs(const Expr* Part, const Step& St, const Stmt* Loop,
                  std::vector<const Expr*>& Units, std::vector<const VarDecl*>& Inits,
                  std::vector<const Expr*>& Counts);
  bool unconditional(const Step& St, const Stmt* Loop);
  std::string countText(const Accumulator& Counter, const Step& St,
                        const std::vector<Accumulator>& Accs);
  bool canDefer(const Accumulator& A, const Stmt* Loop) const;
  bool inScopeAt(const VarDecl* V, const Stmt* S) const;
  const Stmt* functionBody(const Stmt* S) const;
  bool alreadyReduced(const ValueDecl* D, const Stmt* FnBody);

  MigrationContext& Ctx;
  const RuleInfo& Info;
  llvm::SmallPtrSet<const ValueDecl*, 4> LoaderParams;
  MeasureAnalysis* MA = nullptr;
  std::vector<Accumulator>* Current = nullptr;
  llvm::SmallPtrSet<const VarDecl*, 4> WrappedInits;
  std::set<std::pair<const Stmt*, std::string>> Named; // names given to printed values, by function
  std::unique_ptr<PerProcessValues>
      PP; // made at the first printed value (its analysis walks the file)
};

void MetricsMigration::collectSteps(const Stmt* S, MeasureAnalysis& M,
                                    std::vector<Accumulator>& Accs) {
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
      auto It =
          std::find_if(Accs.begin(), Accs.end(), [D](const Accumulator& A) { return A.D == D; });
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

const Stmt* MetricsMigration::functionBody(const Stmt* S) const {
  const FunctionDecl* FD = Ctx.enclosingFunction(DynTypedNode::create(*S));
  return FD ? FD->getBody() : nullptr;
}

// A second run: `acc = accelerate::sum_across_processes(..., acc);` is already there.
bool MetricsMigration::alreadyReduced(const ValueDecl* D, const Stmt* FnBody) {
  return anyOf(FnBody, [D](const Stmt* X) {
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
  });
}

void MetricsMigration::classify(Accumulator& A, const Stmt* Loop) {
  Measure M = A.Steps.front().M;
  for (const Step& S : A.Steps)
    if (S.M != M)
      M = Measure::Unknown;
  A.M = M;
}

// A constant per batch next to a sum over samples, in a ratio (`correct / total`,
// `loss_sum /= total`): it counts the samples of each batch.
void MetricsMigration::findCounters(std::vector<Accumulator>& Accs, const Stmt* Loop) {
  const Stmt* Fn = functionBody(Loop);
  if (!Fn)
    return;
  auto Refers = [](const Stmt* S, const ValueDecl* D) { return refersTo(S, D); };
  for (Accumulator& B : Accs) {
    if (B.M != Measure::Uniform)
      continue;
    bool Literal1 = llvm::all_of(B.Steps, [](const Step& S) {
      const auto* IL = dyn_cast<IntegerLiteral>(S.RHS->IgnoreParenImpCasts());
      return IL && IL->getValue() == 1;
    });
    if (Literal1)
      continue; // counts batches: the same on every process
    for (const Accumulator& A : Accs) {
      if (A.M != Measure::SampleSum)
        continue;
      bool Ratio = anyOf(Fn, [&](const Stmt* X) {
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
        return L && ((Refers(L, A.D) && Refers(R, B.D)) || (Refers(L, B.D) && Refers(R, A.D)));
      });
      if (Ratio) {
        B.Counter = true;
        break;
      }
    }
  }
}

bool MetricsMigration::canDefer(const Accumulator& A, const Stmt* Loop) const {
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
  const Stmt* Fn = functionBody(Loop);
  bool Other = anyOf(Fn, [&](const Stmt* X) {
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    if (!DR || DR->getDecl() != V)
      return false;
    if (Ctx.SM.isBeforeInTranslationUnit(Loop->getEndLoc(), DR->getLocation()))
      return false;
    return llvm::none_of(
        A.Steps, [DR](const Step& S) { return ignoreImplicit(S.LHS)->IgnoreParenCasts() == DR; });
  });
  bool Leaves = anyOf(Body, [](const Stmt* X) {
    return isa<ReturnStmt>(X) || isa<GotoStmt>(X) || isa<CoreturnStmt>(X);
  });
  return !Other && !Leaves;
}

// A loop-local variable that sums or averages over the batch (`auto loss = criterion(output,
// target)`) that only the metrics read: its per-sample inputs may be narrowed.
bool MetricsMigration::onlyMetricsRead(const VarDecl* V, const Stmt* At) {
  return !anyOf(functionBody(At), [&](const Stmt* Y) {
    const auto* DR = dyn_cast<DeclRefExpr>(Y);
    if (!DR || DR->getDecl() != V)
      return false;
    for (const Accumulator& A : *Current)
      for (const Step& S : A.Steps)
        if (anyOf(S.RHS, [DR](const Stmt* Z) { return Z == DR; }))
          return false;
    return true;
  });
}

// A loop-local variable of E that sums or averages over the batch.
const VarDecl* MetricsMigration::metricLocal(const Stmt* X) {
  const auto* E = dyn_cast<Expr>(X);
  const VarDecl* V = E ? MA->loopLocal(E) : nullptr;
  if (!V || !V->getInit())
    return nullptr;
  Measure M = MA->of(E);
  return M == Measure::SampleSum || M == Measure::BatchMean ? V : nullptr;
}

// The largest parts of E that are per-batch means (`loss.item<double>()` in
// `loss.item<double>() * data.size(0)`, or E itself).
void MetricsMigration::batchMeans(const Expr* E, std::vector<const Expr*>& Means) {
  if (!E || isRuntimeMetricCall(E))
    return;
  if (MA->of(E) == Measure::BatchMean) {
    Means.push_back(E);
    return;
  }
  for (const Stmt* C : E->children())
    if (const auto* CE = dyn_cast_or_null<Expr>(C))
      batchMeans(CE, Means);
}

bool MetricsMigration::inside(const Stmt* S, const std::vector<const Expr*>& Parts) const {
  return llvm::any_of(Parts, [&](const Expr* P) { return encloses(Ctx, P, S) || P == S; });
}

// The per-sample tensors to narrow so that Part is computed on the real samples: its own,
// and those of the variables it reads that sum or average over the batch (read only by
// the metrics, in steps that every process runs, made from per-sample tensors directly).
// Counts: per-sample tensors that count Part's samples. False when that cannot be done.
bool MetricsMigration::realInputs(const Expr* Part, const Step& St, const Stmt* Loop,
                                  std::vector<const Expr*>& Units,
                                  std::vector<const VarDecl*>& Inits,
                                  std::vector<const Expr*>& Counts) {
  MA->perSampleUnits(Part, Units);
  Counts = Units;
  return !anyOf(Part, [&](const Stmt* X) {
    const VarDecl* V = metricLocal(X);
    if (!V || llvm::is_contained(Inits, V))
      return false;
    if (WrappedInits.count(V)) { // narrowed for an earlier step
      MA->perSampleUnits(V->getInit(), Counts);
      return false;
    }
    bool EveryStepSteady = llvm::all_of(*Current, [&](const Accumulator& A) {
      return llvm::all_of(
          A.Steps, [&](const Step& S) { return !refersTo(S.RHS, V) || unconditional(S, Loop); });
    });
    if (!EveryStepSteady || !onlyMetricsRead(V, St.S) ||
        anyOf(V->getInit(), [&](const Stmt* Y) { return metricLocal(Y) != nullptr; }))
      return true;
    Inits.push_back(V);
    size_t From = Units.size();
    MA->perSampleUnits(V->getInit(), Units);
    Counts.insert(Counts.end(), Units.begin() + From, Units.end());
    return false;
  });
}

// real_mean all-reduces on a padded last batch: every process must run the step.
bool MetricsMigration::unconditional(const Step& St, const Stmt* Loop) {
  const Stmt* A =
      nearestAncestor(Ctx, St.S,
                      stmt(ast_matchers::anyOf(ifStmt(), switchStmt(), conditionalOperator(),
                                               binaryOperator(hasAnyOperatorName("&&", "||")),
                                               loopStmt(), lambdaExpr(), cxxTryStmt())));
  return A == Loop;
}

// Narrows the per-sample tensors a step reads to this process's real samples. A per-batch
// mean is narrowed only when it can be exact: then real_mean weighs the processes' means by
// their real samples (on a padded batch they differ, and a process that holds none has a
// mean of nothing, NaN); otherwise it is left whole, repeats included.
void MetricsMigration::wrapUnits(Change& C, const Step& St, const Stmt* Loop, bool Padded) {
  if (!Padded)
    return;
  std::string Acc = Ctx.accel(St.S, C);
  std::vector<const Expr*> Means, All, Units;
  std::vector<const VarDecl*> Inits;
  batchMeans(St.RHS, Means);
  // Outside the means: every per-sample tensor, and the inputs of a sum kept in a variable
  // that only the metrics read (`auto loss = nll_loss(..., Reduction::Sum)`).
  MA->perSampleUnits(St.RHS, All);
  for (const Expr* U : All)
    if (!inside(U, Means))
      Units.push_back(U);
  anyOf(St.RHS, [&](const Stmt* X) {
    const VarDecl* V = metricLocal(X);
    if (V && !WrappedInits.count(V) && !llvm::is_contained(Inits, V) && !inside(X, Means) &&
        onlyMetricsRead(V, St.S)) {
      Inits.push_back(V);
      MA->perSampleUnits(V->getInit(), Units);
    }
    return false;
  });
  bool Steady = unconditional(St, Loop);
  for (const Expr* E : Means) {
    std::vector<const Expr*> MeanUnits, Counts;
    std::vector<const VarDecl*> MeanInits;
    if (!Steady || !realInputs(E, St, Loop, MeanUnits, MeanInits, Counts))
      continue;
    std::string Count;
    for (const Expr* U : Counts)
      if (const VarDecl* V = MA->loopLocal(U); Count.empty() && (!V || inScopeAt(V, St.S)))
        Count = Ctx.text(U->getSourceRange());
    if (Count.empty())
      continue;
    // Before the units' wrappers at the same place: the outer call first.
    C.insertBefore(E->getBeginLoc(), "accelerate::real_mean(" + Acc + ", ");
    C.insertAfter(E->getEndLoc(), ", " + Count + ")");
    Units.insert(Units.end(), MeanUnits.begin(), MeanUnits.end());
    Inits.insert(Inits.end(), MeanInits.begin(), MeanInits.end());
  }
  WrappedInits.insert(Inits.begin(), Inits.end());
  for (const Expr* U : Units) {
    C.insertBefore(U->getBeginLoc(), "accelerate::real_samples(" + Acc + ", ");
    C.insertAfter(U->getEndLoc(), ")");
  }
}

// `accelerate::real_samples(acc, batch.target).size(0)` for a counter: a per-sample tensor
// of the batch in scope at the counter's statement.
std::string MetricsMigration::countText(const Accumulator& Counter, const Step& St,
                                        const std::vector<Accumulator>& Accs) {
  for (const Accumulator& A : Accs) {
    if (A.M != Measure::SampleSum || A.Counter)
      continue;
    for (const Step& S : A.Steps) {
      std::vector<const Expr*> Units;
      MA->perSampleUnits(S.RHS, Units);
      for (const Expr* U : Units) {
        if (const VarDecl* V = MA->loopLocal(U); V && !inScopeAt(V, St.S))
          continue;
        std::string T = Ctx.text(U->getSourceRange());
        if (!T.empty())
          return T;
      }
    }
  }
  return "";
}

// V is declared before S in a block that contains S.
bool MetricsMigration::inScopeAt(const VarDecl* V, const Stmt* S) const {
  const DeclStmt* DS = nullptr;
  const CompoundStmt* Block = Ctx.declaringBlock(V, &DS);
  return Block && Ctx.SM.isBeforeInTranslationUnit(DS->getEndLoc(), S->getBeginLoc()) &&
         Ctx.SM.isBeforeInTranslationUnit(S->getEndLoc(), Block->getEndLoc());
}

// Adds A's rewrite to LoopChange (and its reduction after the loop to After); false when A
// is left as it is.
bool MetricsMigration::emit(const Accumulator& A, const Stmt* Loop, bool Padded, Change& LoopChange,
                            std::string& After) {
  const Step& First = A.Steps.front();
  for (const Step& St : A.Steps)
    if (isSuppressedByNolint(Ctx.SM.getBufferData(Ctx.SM.getMainFileID()),
                             Ctx.SM.getFileOffset(Ctx.SM.getExpansionLoc(St.S->getBeginLoc())),
                             Info.Id))
      return false;
  if (A.M == Measure::Unknown || A.M == Measure::PerSample) {
    Ctx.warn(First.S->getBeginLoc(), Info.Id,
             "this value is summed over the batches of a sharded loop, but it is not "
             "recognised as a sum over samples or a per-batch mean: each process would hold "
             "its own part; reduce it by hand (accelerate::sum_across_processes or "
             "mean_across_processes after the loop)");
    return false;
  }
  if (A.M == Measure::Uniform && !A.Counter)
    return false; // the same on every process
  bool Sum = A.M == Measure::SampleSum || A.Counter;
  const char* Fn = Sum ? "accelerate::sum_across_processes(" : "accelerate::mean_across_processes(";
  Change C(Info.Id, First.S->getBeginLoc());
  std::string Acc = Ctx.accel(First.S, C);
  bool Defer = canDefer(A, Loop);
  for (const Step& St : A.Steps) {
    std::string Count;
    if (A.Counter) {
      std::string Unit = countText(A, St, *Current);
      if (Unit.empty()) {
        Ctx.warn(St.S->getBeginLoc(), Info.Id,
                 "this count is divided into a metric summed over samples, but no per-sample "
                 "tensor of the batch is in scope to count the batch's samples; count them by "
                 "hand (accelerate::real_samples(accelerator, target).size(0)) and sum them "
                 "over the processes");
        return false;
      }
      Count = Padded ? "accelerate::real_samples(" + Acc + ", " + Unit + ").size(0)"
                     : Unit + ".size(0)";
      std::string Indent = Ctx.indentOf(St.S->getBeginLoc());
      C.insertBefore(St.S->getBeginLoc(),
                     "// accel-migrate(" + std::string(Info.Id) +
                         "): counts the samples of each batch (" +
                         Ctx.text(St.RHS->getSourceRange()) +
                         " is not the size of every batch on every process)\n" + Indent);
      if (!Defer)
        Count = Fn + Acc + ", " + Count + ")";
      C.replace(St.RHS->getSourceRange(), Count);
      continue;
    }
    if (!Defer)
      C.insertBefore(St.RHS->getBeginLoc(), Fn + Acc + ", ");
    wrapUnits(C, St, Loop, Padded);
    if (!Defer)
      C.insertAfter(St.RHS->getEndLoc(), ")");
  }
  if (Defer) {
    std::string Name = A.D->getName().str();
    After +=
        "\n" + Ctx.indentOf(Loop->getBeginLoc()) + Name + " = " + Fn + Acc + ", " + Name + ");";
  }
  LoopChange.Parts.insert(LoopChange.Parts.end(), C.Parts.begin(), C.Parts.end());
  LoopChange.CallsCurrent |= C.CallsCurrent; // After, inserted by LoopChange, too
  return true;
}

// `x = <expr>` of a number declared outside the loop (a scalar kept past the step).
void MetricsMigration::collectAssignments(const Stmt* S, std::vector<Step>& Out) {
  if (!S || isa<LambdaExpr>(S))
    return;
  if (const auto* B = dyn_cast<BinaryOperator>(S); B && B->getOpcode() == BO_Assign) {
    const ValueDecl* D = referencedDecl(B->getLHS());
    if (D && isa<VarDecl>(D) && !MA->declaredInLoop(D) && D->getType()->isArithmeticType())
      Out.push_back({S, B->getLHS(), B->getRHS(), MA->of(B->getRHS())});
    return;
  }
  for (const Stmt* C : S->children())
    collectAssignments(C, Out);
}

// A per-sample tensor of this process's part of the batch, in scope at St, that counts the
// samples St's value was computed from: in its expression, or in the initialisers of the
// loop locals it reads (`loss` of `loss.item<double>()`). A loop local first; a whole
// tensor split by accelerate-manual-batching is named by its share (process_share again:
// a view, and the same share noted again).
std::string MetricsMigration::assignedUnit(const Step& St, const std::string& Acc) {
  std::vector<const Expr*> Units;
  MA->perSampleUnits(St.RHS, Units);
  // Through the loop locals the value reads, and theirs (`float v = loss.item<float>();`
  // reads `loss`, made from `output`): the nearer ones first, a few levels deep.
  std::vector<const Expr*> Level{St.RHS}, Next;
  llvm::SmallPtrSet<const VarDecl*, 8> Seen;
  for (int Depth = 0; Depth < 4 && !Level.empty(); ++Depth, Level.swap(Next)) {
    Next.clear();
    for (const Expr* R : Level)
      anyOf(R, [&](const Stmt* X) {
        const auto* E = dyn_cast<Expr>(X);
        const VarDecl* V = E ? MA->loopLocal(E) : nullptr;
        if (V && V->getInit() && Seen.insert(V).second) {
          MA->perSampleUnits(V->getInit(), Units);
          Next.push_back(V->getInit());
        }
        return false;
      });
  }
  std::string Shared;
  for (const Expr* U : Units) {
    if (isa<CallExpr>(U))
      continue;
    if (const VarDecl* V = MA->loopLocal(U); V && !inScopeAt(V, St.S))
      continue;
    std::string T = Ctx.text(U->getSourceRange());
    if (T.empty())
      continue;
    if (!Ctx.need<ShardedBatches>().Slices.count(U))
      return T;
    if (Shared.empty())
      Shared = "accelerate::process_share(" + Acc + ", " + T + ")";
  }
  return Shared;
}

void MetricsMigration::migrateAssignments(const Stmt* Loop, const Stmt* Body, bool Padded,
                                          const std::vector<Accumulator>& Accs) {
  std::vector<Step> Steps;
  collectAssignments(Body, Steps);
  for (const Step& St : Steps) {
    const ValueDecl* D = referencedDecl(St.LHS);
    bool Sum = St.M == Measure::SampleSum && !Padded;  // a padded batch's sum counts repeats
    if (isRuntimeMetricCall(ignoreImplicit(St.RHS))) { // a second run
      Ctx.provide<ReducedMetrics>().Values.insert(D);
      continue;
    }
    if ((St.M != Measure::BatchMean && !Sum) ||
        llvm::any_of(Accs, [D](const Accumulator& A) { return A.D == D; }) ||
        isSuppressedByNolint(Ctx.SM.getBufferData(Ctx.SM.getMainFileID()),
                             Ctx.SM.getFileOffset(Ctx.SM.getExpansionLoc(St.S->getBeginLoc())),
                             Info.Id))
      continue;
    Change C(Info.Id, St.S->getBeginLoc());
    std::string Acc = Ctx.accel(St.S, C);
    std::string Unit = Sum ? "" : assignedUnit(St, Acc);
    if (!unconditional(St, Loop) || (!Sum && Unit.empty())) {
      Ctx.warn(St.S->getBeginLoc(), Info.Id,
               "this value is computed from this process's part of the batch and kept past "
               "the step, but not on every step (or with no per-sample tensor in scope to "
               "count its samples): each process would keep its own part; make it the whole "
               "batch's on every process with accelerate::batch_mean (a mean) or "
               "sum_across_processes (a sum)");
      continue;
    }
    C.insertBefore(St.RHS->getBeginLoc(),
                   (Sum ? "accelerate::sum_across_processes(" : "accelerate::batch_mean(") + Acc +
                       ", ");
    C.insertAfter(St.RHS->getEndLoc(), Sum ? ")" : ", " + Unit + ")");
    if (Ctx.commit(C))
      Ctx.provide<ReducedMetrics>().Values.insert(D); // the same on every process now
  }
}

// The values a print call shows: printf's and fprintf's arguments after the format, the
// right operand of `<<` on a std::ostream.
static std::vector<const Expr*> shownValues(const CallExpr* C) {
  std::vector<const Expr*> Shown;
  std::string N = calleeName(C);
  if (N == "printf" || N == "std::printf" || N == "fprintf" || N == "std::fprintf") {
    for (unsigned I = N.find("fprintf") == std::string::npos ? 1 : 2; I < C->getNumArgs(); ++I)
      Shown.push_back(C->getArg(I));
  } else if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(C);
             Op && Op->getOperator() == OO_LessLess && Op->getNumArgs() == 2) {
    const CXXRecordDecl* RD = Op->getArg(0)->getType()->getAsCXXRecordDecl();
    if (RD && RD->getName() == "basic_ostream")
      Shown.push_back(Op->getArg(1));
  }
  return Shown;
}

// A value of the batch printed inside the loop (`printf("%f", loss.item<double>())`,
// `std::cout << loss.item()`) is this process's part of the batch, and accelerate-main-process
// makes the main process alone print it: the whole batch's value is computed right before
// the print statement, on every process (a collective), and the print shows it, so the main
// process prints what one process printed. Where that cannot be done safely a note names
// the difference that stays.
void MetricsMigration::migratePrints(const Stmt* Loop, const Stmt* Body, bool Padded) {
  // Code that uses the runtime already (a second run, or migrated by hand) was told.
  if (llvm::any_of(Ctx.Includes, [](const IncludeSite& I) {
        return StringRef(I.Name).starts_with("accelerate/");
      }))
    return;
  std::set<unsigned> Noted; // lines: one note per print statement (a `<<` chain)
  anyOf(Body, [&](const Stmt* X) {
    const auto* C = dyn_cast<CallExpr>(X);
    if (!C)
      return false;
    unsigned Line = Ctx.SM.getExpansionLineNumber(C->getBeginLoc());
    for (const Expr* E : shownValues(C)) {
      Measure M = MA->of(E);
      if ((M != Measure::BatchMean && M != Measure::SampleSum) ||
          reducePrinted(Loop, C, E, M, Padded) || !Noted.insert(Line).second)
        continue;
      Ctx.note(C->getBeginLoc(), Info.Id,
               "this prints a value of this process's part of the batch, which the tool "
               "cannot make the whole batch's here (the print runs under a condition that "
               "may differ between processes or after a jump that may, shows a sum over a "
               "padded batch or a value the "
               "runtime cannot reduce, or names a tensor split in place): on N processes the "
               "main process shows its "
               "share's value (training is the same); print accelerate::batch_mean of it, "
               "computed on every process");
    }
    return false;
  });
}

// Whether every process reaches S whenever one does: the conditions between the loop's body
// and S are the same on every process (a counter, a constant), not values that can differ
// between processes (PerProcessValues, the analysis accelerate-decide-together uses: the
// batch, and variables set under such conditions, `if (loss < eps) low = true;`).
bool MetricsMigration::sameOnEveryProcess(const Stmt* S, const Stmt* Loop) {
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

// A `continue`, `break`, `return` or `goto` before S in the loop's body that not every
// process takes alike (`if (torch::isnan(loss).item<bool>()) continue;`): a process that
// jumps would skip S's collective while the others wait in it.
bool MetricsMigration::jumpsBefore(const Stmt* S, const Stmt* Body, const Stmt* Loop) {
  return anyOf(Body, [&](const Stmt* X) {
    return (isa<ContinueStmt>(X) || isa<BreakStmt>(X) || isa<ReturnStmt>(X) || isa<GotoStmt>(X)) &&
           Ctx.SM.isBeforeInTranslationUnit(X->getBeginLoc(), S->getBeginLoc()) &&
           !sameOnEveryProcess(X, Loop);
  });
}

// A name for a printed value made the whole batch's: `batch_loss` for a value of `loss`,
// not used in the function (a whole-word search of its text) nor given there before.
std::string MetricsMigration::freshName(const Expr* Value, const Stmt* At) {
  std::string Base = "batch_value";
  anyOf(Value, [&](const Stmt* X) {
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    if (DR && isa<VarDecl>(DR->getDecl()))
      Base = "batch_" + DR->getDecl()->getName().str();
    return DR != nullptr;
  });
  const Stmt* Fn = functionBody(At);
  std::string Text = Fn ? Ctx.text(Fn->getSourceRange()) : "";
  auto Used = [&](const std::string& N) {
    if (Named.count({Fn, N}))
      return true;
    for (size_t I = Text.find(N); I != std::string::npos; I = Text.find(N, I + 1)) {
      auto Ident = [](char Ch) { return isAlphanumeric(Ch) || Ch == '_'; };
      if (!(I > 0 && Ident(Text[I - 1])) &&
          !(I + N.size() < Text.size() && Ident(Text[I + N.size()])))
        return true;
    }
    return false;
  };
  std::string Name = Base;
  for (int K = 2; Used(Name); ++K)
    Name = Base + "_" + std::to_string(K);
  Named.insert({Fn, Name});
  return Name;
}

// Shown (a BatchMean or SampleSum value inside Print) is replaced by a name declared right
// before Print's statement as the whole batch's value: accelerate::batch_mean weighted by
// each process's rows, or sum_across_processes. False (nothing changed) where it would not
// be safe or exact.
bool MetricsMigration::reducePrinted(const Stmt* Loop, const CallExpr* Print, const Expr* Shown,
                                     Measure M, bool Padded) {
  if (M == Measure::SampleSum && Padded)
    return false; // a padded batch's sum counts the repeated samples
  const Stmt* Container = nullptr;
  const Stmt* S = Ctx.enclosingStatement(Print, &Container);
  // The value is declared before the statement (outside the main process's guard, which
  // begins at the statement: ReducedMetrics::Prints); a statement that is the body of an
  // if or a loop gets braces around the two.
  if (!S || !isa<Expr>(S) || !Container || !sameOnEveryProcess(S, Loop) ||
      jumpsBefore(S, loopBody(Loop), Loop))
    return false;
  bool Wrap = !isa<CompoundStmt>(Container);
  SourceLocation Semi = Wrap ? nextTokenLoc(Ctx, S->getEndLoc(), tok::semi) : SourceLocation();
  if (Wrap && Semi.isInvalid())
    return false;
  // `t.item<T>()` and `t.item()` (a c10::Scalar) are made the whole batch's through the
  // tensor, in its own type: the main process prints a number of the type the original
  // printed (a float's mean, not a double's mean of floats).
  const Expr* V = ignoreImplicit(Shown);
  MemberCall MC;
  // (In a template the tensor's type may be dependent: the measure says it is the batch's.)
  auto Reducible = [](const Expr* E) { return isTensor(E->getType()) || E->isTypeDependent(); };
  if (const auto* Item = dyn_cast<CallExpr>(V); Item && getMemberCall(Item, MC) &&
                                                MC.Name == "item" && MC.Object && !MC.IsArrow &&
                                                Reducible(MC.Object))
    V = ignoreImplicit(MC.Object);
  else if (!Reducible(V) && !V->getType()->isArithmeticType())
    return false;
  std::string Text = Ctx.text(V->getSourceRange());
  // The value's text is copied as written: not when part of it is a whole tensor or slice
  // that accelerate-manual-batching rewrites to this process's share.
  auto Split = [&](const Stmt* X) {
    const auto* E = dyn_cast<Expr>(X);
    return E && Ctx.need<ShardedBatches>().Slices.count(E->IgnoreParenImpCasts());
  };
  if (Text.empty() || anyOf(V, Split))
    return false;
  Change C(Info.Id, S->getBeginLoc());
  std::string Acc = Ctx.accel(S, C);
  std::string Value = "accelerate::sum_across_processes(" + Acc + ", " + Text + ")";
  if (M == Measure::BatchMean) {
    std::string Unit = assignedUnit(Step{S, nullptr, V, M}, Acc);
    if (Unit.empty())
      return false;
    Value = "accelerate::batch_mean(" + Acc + ", " + Text + ", " + Unit + ")";
  }
  std::string Name = freshName(V, S);
  std::string Indent = Ctx.indentOf(S->getBeginLoc());
  std::string Declare = "const auto " + Name + " = " + Value + ";";
  C.insertBefore(S->getBeginLoc(), "// accel-migrate(" + std::string(Info.Id) +
                                       "): the whole batch's value, on every process; the "
                                       "main process prints it\n" +
                                       Indent +
                                       (Wrap ? "{ " + Declare + " " : Declare + "\n" + Indent));
  C.replace(V->getSourceRange(), Name);
  if (Wrap)
    C.insertAfter(Semi, " }");
  if (!Ctx.commit(C))
    return false;
  Ctx.provide<ReducedMetrics>().Prints.insert(S);
  return true;
}

void MetricsMigration::migrateLoop(const Stmt* Loop, const VarDecl* BatchVar, const Stmt* Body,
                                   bool Padded) {
  MeasureAnalysis M(Ctx, Loop, BatchVar);
  MA = &M;
  std::vector<Accumulator> Accs;
  collectSteps(Body, M, Accs);
  Current = &Accs;
  const Stmt* Fn = functionBody(Loop);
  std::vector<Accumulator> Todo;
  for (Accumulator& A : Accs) {
    bool Migrated = llvm::any_of(A.Steps, [](const Step& S) {
      return anyOf(S.RHS, [](const Stmt* X) {
        const auto* E = dyn_cast<Expr>(X);
        return E && isRuntimeMetricCall(E);
      });
    });
    if (Migrated || (Fn && alreadyReduced(A.D, Fn))) {
      Ctx.provide<ReducedMetrics>().Values.insert(
          A.D); // a second run: reduced (or gathered) already
      continue;
    }
    classify(A, Loop);
    Todo.push_back(A);
  }
  Accs = Todo;
  findCounters(Accs, Loop);
  // One change per loop: the reductions after it are one insertion (clang-tidy's --fix
  // treats several insertions at one place as a conflict).
  std::vector<const ValueDecl*> Done;
  std::string After;
  std::unique_ptr<Change> C;
  for (const Accumulator& A : Accs) {
    if (!C)
      C = std::make_unique<Change>(Info.Id, A.Steps.front().S->getBeginLoc());
    if (emit(A, Loop, Padded, *C, After))
      Done.push_back(A.D);
  }
  if (!After.empty())
    C->insertAfter(Loop->getEndLoc(), After);
  if (C && !Done.empty() && Ctx.commit(*C)) {
    for (const ValueDecl* D : Done)
      Ctx.provide<ReducedMetrics>().Values.insert(D);
    Ctx.provide<ReducedMetrics>().Loops.insert(Loop);
  }
  migrateAssignments(Loop, Body, Padded, Accs);
  migratePrints(Loop, Body, Padded);
  MA = nullptr;
  Current = nullptr;
}

} // namespace

void runGatherMetrics(MigrationContext& Ctx, const RuleInfo& Info) {
  MetricsMigration(Ctx, Info).run();
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule GatherMetricsRuleEntry({
    GatherMetricsInfo,
    runGatherMetrics,
    /*Needs=*/{AnalysisId::PreparedLoaders, AnalysisId::ShardedBatches},
    /*Provides=*/{AnalysisId::ReducedMetrics, AnalysisId::AcceleratorRequests},
    /*Rank=*/100,
});

} // namespace accel
