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

#include "analyses/MetricAccumulators.h"

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

// What the edits of one sharded loop share. Padded: a loop over a prepared loader, whose
// last batch may hold repeated samples (even_batches); hand-cut batches are never padded.
struct LoopScope {
  const Stmt* Loop;
  const Stmt* Body;
  bool Padded;
  MeasureAnalysis& MA;
};

bool suppressed(MigrationContext& Ctx, const RuleInfo& Info, const Stmt* S) {
  return isSuppressedByNolint(Ctx.SM.getBufferData(Ctx.SM.getMainFileID()),
                              Ctx.SM.getFileOffset(Ctx.SM.getExpansionLoc(S->getBeginLoc())),
                              Info.Id);
}

// V is declared before S in a block that contains S.
bool inScopeAt(MigrationContext& Ctx, const VarDecl* V, const Stmt* S) {
  const DeclStmt* DS = nullptr;
  const CompoundStmt* Block = Ctx.declaringBlock(V, &DS);
  return Block && Ctx.SM.isBeforeInTranslationUnit(DS->getEndLoc(), S->getBeginLoc()) &&
         Ctx.SM.isBeforeInTranslationUnit(S->getEndLoc(), Block->getEndLoc());
}

// real_mean all-reduces on a padded last batch: every process must run the step.
bool unconditional(MigrationContext& Ctx, const Stmt* S, const Stmt* Loop) {
  const Stmt* A =
      nearestAncestor(Ctx, S,
                      stmt(ast_matchers::anyOf(ifStmt(), switchStmt(), conditionalOperator(),
                                               binaryOperator(hasAnyOperatorName("&&", "||")),
                                               loopStmt(), lambdaExpr(), cxxTryStmt())));
  return A == Loop;
}

// A per-sample tensor of this process's part of the batch, in scope at St, that counts the
// samples St's value was computed from: in its expression, or in the initialisers of the
// loop locals it reads (`loss` of `loss.item<double>()`). A loop local first; a whole
// tensor split by accelerate-manual-batching is named by its share (process_share again:
// a view, and the same share noted again).
std::string assignedUnit(MigrationContext& Ctx, MeasureAnalysis& MA, const MetricStep& St,
                         const std::string& Acc) {
  std::vector<const Expr*> Units;
  MA.perSampleUnits(St.RHS, Units);
  // Through the loop locals the value reads, and theirs (`float v = loss.item<float>();`
  // reads `loss`, made from `output`): the nearer ones first, a few levels deep.
  std::vector<const Expr*> Level{St.RHS}, Next;
  llvm::SmallPtrSet<const VarDecl*, 8> Seen;
  for (int Depth = 0; Depth < 4 && !Level.empty(); ++Depth, Level.swap(Next)) {
    Next.clear();
    for (const Expr* R : Level)
      anyOf(R, [&](const Stmt* X) {
        const auto* E = dyn_cast<Expr>(X);
        const VarDecl* V = E ? MA.loopLocal(E) : nullptr;
        if (V && V->getInit() && Seen.insert(V).second) {
          MA.perSampleUnits(V->getInit(), Units);
          Next.push_back(V->getInit());
        }
        return false;
      });
  }
  std::string Shared;
  for (const Expr* U : Units) {
    if (isa<CallExpr>(U))
      continue;
    if (const VarDecl* V = MA.loopLocal(U); V && !inScopeAt(Ctx, V, St.S))
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

// The accumulators of one sharded loop, reduced across processes: each step's value made of
// this process's real samples, the sum or mean taken over the processes at every step or
// once after the loop. One change per loop: the reductions after it are one insertion
// (clang-tidy's --fix treats several insertions at one place as a conflict).
class AccumulatorEdits {
 public:
  AccumulatorEdits(MigrationContext& Ctx, const RuleInfo& Info, const LoopScope& L,
                   const std::vector<MetricAccumulator>& Accs,
                   llvm::SmallPtrSet<const VarDecl*, 4>& WrappedInits)
      : Ctx(Ctx), Info(Info), L(L), Accs(Accs), WrappedInits(WrappedInits) {}

  // The accumulators rewritten (empty when the change was not committed).
  std::vector<const ValueDecl*> run() {
    std::vector<const ValueDecl*> Done;
    std::string After;
    std::unique_ptr<Change> C;
    for (const MetricAccumulator& A : Accs) {
      if (!C)
        C = std::make_unique<Change>(Info.Id, A.Steps.front().S->getBeginLoc());
      if (emit(A, *C, After))
        Done.push_back(A.D);
    }
    if (!After.empty())
      C->insertAfter(L.Loop->getEndLoc(), After);
    if (!C || Done.empty() || !Ctx.commit(*C))
      return {};
    return Done;
  }

 private:
  bool emit(const MetricAccumulator& A, Change& LoopChange, std::string& After);
  std::string countText(const MetricStep& St);
  void wrapUnits(Change& C, const MetricStep& St);
  bool realInputs(const Expr* Part, const MetricStep& St, std::vector<const Expr*>& Units,
                  std::vector<const VarDecl*>& Inits, std::vector<const Expr*>& Counts);
  bool onlyMetricsRead(const VarDecl* V, const Stmt* At);
  const VarDecl* metricLocal(const Stmt* X);
  void batchMeans(const Expr* E, std::vector<const Expr*>& Means);
  bool inside(const Stmt* S, const std::vector<const Expr*>& Parts) const;

  MigrationContext& Ctx;
  const RuleInfo& Info;
  const LoopScope& L;
  const std::vector<MetricAccumulator>& Accs;
  llvm::SmallPtrSet<const VarDecl*, 4>& WrappedInits; // narrowed already (in this file)
};

// Adds A's rewrite to LoopChange (and its reduction after the loop to After); false when A
// is left as it is.
bool AccumulatorEdits::emit(const MetricAccumulator& A, Change& LoopChange, std::string& After) {
  const MetricStep& First = A.Steps.front();
  for (const MetricStep& St : A.Steps)
    if (suppressed(Ctx, Info, St.S))
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
  bool Defer = canDeferReduction(Ctx, A, L.Loop);
  for (const MetricStep& St : A.Steps) {
    if (!A.Counter) {
      if (!Defer)
        C.insertBefore(St.RHS->getBeginLoc(), Fn + Acc + ", ");
      wrapUnits(C, St);
      if (!Defer)
        C.insertAfter(St.RHS->getEndLoc(), ")");
      continue;
    }
    std::string Unit = countText(St);
    if (Unit.empty()) {
      Ctx.warn(St.S->getBeginLoc(), Info.Id,
               "this count is divided into a metric summed over samples, but no per-sample "
               "tensor of the batch is in scope to count the batch's samples; count them by "
               "hand (accelerate::real_samples(accelerator, target).size(0)) and sum them "
               "over the processes");
      return false;
    }
    std::string Count = L.Padded ? "accelerate::real_samples(" + Acc + ", " + Unit + ").size(0)"
                                 : Unit + ".size(0)";
    std::string Indent = Ctx.indentOf(St.S->getBeginLoc());
    C.insertBefore(St.S->getBeginLoc(), "// accel-migrate(" + std::string(Info.Id) +
                                            "): counts the samples of each batch (" +
                                            Ctx.text(St.RHS->getSourceRange()) +
                                            " is not the size of every batch on every process)\n" +
                                            Indent);
    if (!Defer)
      Count = Fn + Acc + ", " + Count + ")";
    C.replace(St.RHS->getSourceRange(), Count);
  }
  if (Defer) {
    std::string Name = A.D->getName().str();
    After +=
        "\n" + Ctx.indentOf(L.Loop->getBeginLoc()) + Name + " = " + Fn + Acc + ", " + Name + ");";
  }
  LoopChange.Parts.insert(LoopChange.Parts.end(), C.Parts.begin(), C.Parts.end());
  LoopChange.CallsCurrent |= C.CallsCurrent; // After, inserted by LoopChange, too
  return true;
}

// `batch.target` for a counter: a per-sample tensor of the batch in scope at the counter's
// statement (it becomes `accelerate::real_samples(acc, batch.target).size(0)`).
std::string AccumulatorEdits::countText(const MetricStep& St) {
  for (const MetricAccumulator& A : Accs) {
    if (A.M != Measure::SampleSum || A.Counter)
      continue;
    for (const MetricStep& S : A.Steps) {
      std::vector<const Expr*> Units;
      L.MA.perSampleUnits(S.RHS, Units);
      for (const Expr* U : Units) {
        if (const VarDecl* V = L.MA.loopLocal(U); V && !inScopeAt(Ctx, V, St.S))
          continue;
        std::string T = Ctx.text(U->getSourceRange());
        if (!T.empty())
          return T;
      }
    }
  }
  return "";
}

// Narrows the per-sample tensors a step reads to this process's real samples. A per-batch
// mean is narrowed only when it can be exact: then real_mean weighs the processes' means by
// their real samples (on a padded batch they differ, and a process that holds none has a
// mean of nothing, NaN); otherwise it is left whole, repeats included.
void AccumulatorEdits::wrapUnits(Change& C, const MetricStep& St) {
  if (!L.Padded)
    return;
  std::string Acc = Ctx.accel(St.S, C);
  std::vector<const Expr*> Means, All, Units;
  std::vector<const VarDecl*> Inits;
  batchMeans(St.RHS, Means);
  // Outside the means: every per-sample tensor, and the inputs of a sum kept in a variable
  // that only the metrics read (`auto loss = nll_loss(..., Reduction::Sum)`).
  L.MA.perSampleUnits(St.RHS, All);
  for (const Expr* U : All)
    if (!inside(U, Means))
      Units.push_back(U);
  anyOf(St.RHS, [&](const Stmt* X) {
    const VarDecl* V = metricLocal(X);
    if (V && !WrappedInits.count(V) && !llvm::is_contained(Inits, V) && !inside(X, Means) &&
        onlyMetricsRead(V, St.S)) {
      Inits.push_back(V);
      L.MA.perSampleUnits(V->getInit(), Units);
    }
    return false;
  });
  bool Steady = unconditional(Ctx, St.S, L.Loop);
  for (const Expr* E : Means) {
    std::vector<const Expr*> MeanUnits, Counts;
    std::vector<const VarDecl*> MeanInits;
    if (!Steady || !realInputs(E, St, MeanUnits, MeanInits, Counts))
      continue;
    std::string Count;
    for (const Expr* U : Counts)
      if (const VarDecl* V = L.MA.loopLocal(U); Count.empty() && (!V || inScopeAt(Ctx, V, St.S)))
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

// The per-sample tensors to narrow so that Part is computed on the real samples: its own,
// and those of the variables it reads that sum or average over the batch (read only by
// the metrics, in steps that every process runs, made from per-sample tensors directly).
// Counts: per-sample tensors that count Part's samples. False when that cannot be done.
bool AccumulatorEdits::realInputs(const Expr* Part, const MetricStep& St,
                                  std::vector<const Expr*>& Units,
                                  std::vector<const VarDecl*>& Inits,
                                  std::vector<const Expr*>& Counts) {
  L.MA.perSampleUnits(Part, Units);
  Counts = Units;
  return !anyOf(Part, [&](const Stmt* X) {
    const VarDecl* V = metricLocal(X);
    if (!V || llvm::is_contained(Inits, V))
      return false;
    if (WrappedInits.count(V)) { // narrowed for an earlier step
      L.MA.perSampleUnits(V->getInit(), Counts);
      return false;
    }
    bool EveryStepSteady = llvm::all_of(Accs, [&](const MetricAccumulator& A) {
      return llvm::all_of(A.Steps, [&](const MetricStep& S) {
        return !refersTo(S.RHS, V) || unconditional(Ctx, S.S, L.Loop);
      });
    });
    if (!EveryStepSteady || !onlyMetricsRead(V, St.S) ||
        anyOf(V->getInit(), [&](const Stmt* Y) { return metricLocal(Y) != nullptr; }))
      return true;
    Inits.push_back(V);
    size_t From = Units.size();
    L.MA.perSampleUnits(V->getInit(), Units);
    Counts.insert(Counts.end(), Units.begin() + From, Units.end());
    return false;
  });
}

// A loop-local variable that sums or averages over the batch (`auto loss = criterion(output,
// target)`) that only the metrics read: its per-sample inputs may be narrowed.
bool AccumulatorEdits::onlyMetricsRead(const VarDecl* V, const Stmt* At) {
  return !anyOf(functionBodyOf(Ctx, At), [&](const Stmt* Y) {
    const auto* DR = dyn_cast<DeclRefExpr>(Y);
    if (!DR || DR->getDecl() != V)
      return false;
    for (const MetricAccumulator& A : Accs)
      for (const MetricStep& S : A.Steps)
        if (anyOf(S.RHS, [DR](const Stmt* Z) { return Z == DR; }))
          return false;
    return true;
  });
}

// A loop-local variable of E that sums or averages over the batch.
const VarDecl* AccumulatorEdits::metricLocal(const Stmt* X) {
  const auto* E = dyn_cast<Expr>(X);
  const VarDecl* V = E ? L.MA.loopLocal(E) : nullptr;
  if (!V || !V->getInit())
    return nullptr;
  Measure M = L.MA.of(E);
  return M == Measure::SampleSum || M == Measure::BatchMean ? V : nullptr;
}

// The largest parts of E that are per-batch means (`loss.item<double>()` in
// `loss.item<double>() * data.size(0)`, or E itself).
void AccumulatorEdits::batchMeans(const Expr* E, std::vector<const Expr*>& Means) {
  if (!E || isRuntimeMetricCall(E))
    return;
  if (L.MA.of(E) == Measure::BatchMean) {
    Means.push_back(E);
    return;
  }
  for (const Stmt* C : E->children())
    if (const auto* CE = dyn_cast_or_null<Expr>(C))
      batchMeans(CE, Means);
}

bool AccumulatorEdits::inside(const Stmt* S, const std::vector<const Expr*>& Parts) const {
  return llvm::any_of(Parts, [&](const Expr* P) { return encloses(Ctx, P, S) || P == S; });
}

// `x = <expr>` of a number declared outside the loop (a scalar kept past the step).
void collectAssignments(MeasureAnalysis& MA, const Stmt* S, std::vector<MetricStep>& Out) {
  if (!S || isa<LambdaExpr>(S))
    return;
  if (const auto* B = dyn_cast<BinaryOperator>(S); B && B->getOpcode() == BO_Assign) {
    const ValueDecl* D = referencedDecl(B->getLHS());
    if (D && isa<VarDecl>(D) && !MA.declaredInLoop(D) && D->getType()->isArithmeticType())
      Out.push_back({S, B->getLHS(), B->getRHS(), MA.of(B->getRHS())});
    return;
  }
  for (const Stmt* C : S->children())
    collectAssignments(MA, C, Out);
}

// A value assigned (not summed) at every step from the batch and kept past the step is made
// the whole batch's: accelerate::batch_mean of a per-batch mean, sum_across_processes of a
// sum over a hand-cut batch's samples; one assigned only on some steps is warned.
void migrateAssignments(MigrationContext& Ctx, const RuleInfo& Info, const LoopScope& L,
                        const std::vector<MetricAccumulator>& Accs) {
  std::vector<MetricStep> Steps;
  collectAssignments(L.MA, L.Body, Steps);
  for (const MetricStep& St : Steps) {
    const ValueDecl* D = referencedDecl(St.LHS);
    bool Sum = St.M == Measure::SampleSum && !L.Padded; // a padded batch's sum counts repeats
    if (isRuntimeMetricCall(ignoreImplicit(St.RHS))) {  // a second run
      Ctx.provide<ReducedMetrics>().Values.insert(D);
      continue;
    }
    if ((St.M != Measure::BatchMean && !Sum) ||
        llvm::any_of(Accs, [D](const MetricAccumulator& A) { return A.D == D; }) ||
        suppressed(Ctx, Info, St.S))
      continue;
    Change C(Info.Id, St.S->getBeginLoc());
    std::string Acc = Ctx.accel(St.S, C);
    std::string Unit = Sum ? "" : assignedUnit(Ctx, L.MA, St, Acc);
    if (!unconditional(Ctx, St.S, L.Loop) || (!Sum && Unit.empty())) {
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
std::vector<const Expr*> shownValues(const CallExpr* C) {
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
// the difference that stays. One per file: the names given and the per-process analysis
// are the file's.
class PrintEdits {
 public:
  PrintEdits(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info), Reach(Ctx) {}
  void run(const LoopScope& L);

 private:
  bool reducePrinted(const LoopScope& L, const CallExpr* Print, const Expr* Shown, Measure M);
  std::string freshName(const Expr* Value, const Stmt* At);

  MigrationContext& Ctx;
  const RuleInfo& Info;
  ReachedByEveryProcess Reach;
  std::set<std::pair<const Stmt*, std::string>> Named; // names given to printed values, by function
};

void PrintEdits::run(const LoopScope& L) {
  // Code that uses the runtime already (a second run, or migrated by hand) was told.
  if (llvm::any_of(Ctx.Includes, [](const IncludeSite& I) {
        return StringRef(I.Name).starts_with("accelerate/");
      }))
    return;
  std::set<unsigned> Noted; // lines: one note per print statement (a `<<` chain)
  anyOf(L.Body, [&](const Stmt* X) {
    const auto* C = dyn_cast<CallExpr>(X);
    if (!C)
      return false;
    unsigned Line = Ctx.SM.getExpansionLineNumber(C->getBeginLoc());
    for (const Expr* E : shownValues(C)) {
      Measure M = L.MA.of(E);
      if ((M != Measure::BatchMean && M != Measure::SampleSum) || reducePrinted(L, C, E, M) ||
          !Noted.insert(Line).second)
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

// A name for a printed value made the whole batch's: `batch_loss` for a value of `loss`,
// not used in the function (a whole-word search of its text) nor given there before.
std::string PrintEdits::freshName(const Expr* Value, const Stmt* At) {
  std::string Base = "batch_value";
  anyOf(Value, [&](const Stmt* X) {
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    if (DR && isa<VarDecl>(DR->getDecl()))
      Base = "batch_" + DR->getDecl()->getName().str();
    return DR != nullptr;
  });
  const Stmt* Fn = functionBodyOf(Ctx, At);
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
bool PrintEdits::reducePrinted(const LoopScope& L, const CallExpr* Print, const Expr* Shown,
                               Measure M) {
  if (M == Measure::SampleSum && L.Padded)
    return false; // a padded batch's sum counts the repeated samples
  const Stmt* Container = nullptr;
  const Stmt* S = Ctx.enclosingStatement(Print, &Container);
  // The value is declared before the statement (outside the main process's guard, which
  // begins at the statement: ReducedMetrics::Prints); a statement that is the body of an
  // if or a loop gets braces around the two.
  if (!S || !isa<Expr>(S) || !Container || !Reach.sameOnEveryProcess(S, L.Loop) ||
      Reach.jumpsBefore(S, loopBody(L.Loop), L.Loop))
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
    std::string Unit = assignedUnit(Ctx, L.MA, MetricStep{S, nullptr, V, M}, Acc);
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

// The rule over one file: every sharded loop (over a prepared loader, or hand-batched and
// split by accelerate-manual-batching), its accumulators, then its kept and printed values.
class MetricsMigration {
 public:
  MetricsMigration(MigrationContext& Ctx, const RuleInfo& Info)
      : Ctx(Ctx), Info(Info), Prints(Ctx, Info) {}

  void run() {
    for (const CXXForRangeStmt* L : preparedLoaderLoops(Ctx))
      migrateLoop(L, L->getLoopVariable(), L->getBody(), /*Padded=*/true);
    for (const Stmt* L : Ctx.need<ShardedBatches>().Loops)
      migrateLoop(L, nullptr, loopBody(L), /*Padded=*/false);
  }

 private:
  void migrateLoop(const Stmt* Loop, const VarDecl* BatchVar, const Stmt* Body, bool Padded) {
    MeasureAnalysis MA(Ctx, Loop, BatchVar);
    LoopScope L{Loop, Body, Padded, MA};
    LoopAccumulators Found = findAccumulators(Ctx, MA, Loop, Body);
    for (const ValueDecl* D : Found.Reduced)
      Ctx.provide<ReducedMetrics>().Values.insert(D); // a second run: reduced (or gathered) already
    std::vector<const ValueDecl*> Done =
        AccumulatorEdits(Ctx, Info, L, Found.Todo, WrappedInits).run();
    for (const ValueDecl* D : Done)
      Ctx.provide<ReducedMetrics>().Values.insert(D);
    if (!Done.empty())
      Ctx.provide<ReducedMetrics>().Loops.insert(Loop);
    migrateAssignments(Ctx, Info, L, Found.Todo);
    Prints.run(L);
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  llvm::SmallPtrSet<const VarDecl*, 4> WrappedInits; // loop locals narrowed (in this file)
  PrintEdits Prints;
};

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
