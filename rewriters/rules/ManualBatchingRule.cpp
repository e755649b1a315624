// accelerate-manual-batching: batches cut by hand from whole-dataset tensors in a counted
// training loop (`for (i = 0; i < n; i += bs) { x.slice(0, i, i + bs) ... backward }`, or a
// batch stacked from a vector range) are split between the processes: each batch is
// wrapped in accelerate::process_share(...), so every process runs the same iterations
// (the same collectives) on its share of the same global batch, as a prepared loader with
// split_batches does. Loops that do not train, slice along another dimension or write into
// the slices keep a warning. Loops over a loader the tool could not prepare, and training
// loops whose data nothing splits, are warned about under accelerate-unprepared-loader
// (UnpreparedLoaderRule.cpp). What the rule splits is found by
// analyses/TrainingBatches.cpp; this file writes the edits and warnings.

#include "rules/UnpreparedLoaderRule.h"

#include "analyses/CallFacts.h"
#include "analyses/TrainingBatches.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo ManualBatchingInfo = {
    "accelerate-manual-batching", "hand-cut batches split between the processes",
    "batches sliced by hand from whole-dataset tensors are not sharded: every process "
    "would train on all of them; give each process its own range with "
    "accelerator.process_range(begin, end) or use a dataset with "
    "accelerator.prepare_data_loader"};

namespace {

// Wraps each of Parts in accelerate::process_share(Acc, ...), commits C, and records the
// loop and the wrapped expressions as sharded (ShardedBatches: the metrics and per-process
// analyses read them). Shared by hand-cut and whole batches.
bool commitShares(MigrationContext& Ctx, Change& C, const std::string& Acc, const Stmt* Loop,
                  const std::vector<const Expr*>& Parts) {
  for (const Expr* P : Parts) {
    C.insertBefore(P->getBeginLoc(), "accelerate::process_share(" + Acc + ", ");
    C.insertAfter(P->getEndLoc(), ")");
  }
  if (!Ctx.commit(C))
    return false;
  Ctx.provide<ShardedBatches>().Loops.insert(Loop);
  for (const Expr* P : Parts)
    Ctx.provide<ShardedBatches>().Slices.insert(P);
  return true;
}

// A counted loop's hand-cut batches (handCutBatches) are split when the loop trains and no
// loop around it is split already; Warned: the loops warned about. True when the loop was
// split (now or by an earlier run).
bool splitHandCut(MigrationContext& Ctx, const RuleInfo& Info, const CallFacts& Training,
                  const ForStmt* F, llvm::SmallPtrSetImpl<const Stmt*>& Warned) {
  std::optional<HandCutLoop> Loop = handCutBatches(Ctx, F);
  if (!Loop)
    return false;
  const std::vector<const Expr*>& Batches = Loop->Batches;
  if (Loop->Shared && Batches.empty()) { // a second run
    Ctx.provide<ShardedBatches>().Loops.insert(F);
    return true;
  }
  if (Batches.empty() && !Loop->Slices)
    return false;
  MigrationContext::Match Matched(Ctx, F->getBeginLoc());
  if (Loop->Unsafe || !Training.in(F->getBody()) || insideShardedLoop(Ctx, F)) {
    if (Loop->Slices) {
      Ctx.warn(F->getBeginLoc(), Info.Id, Info.Explanation);
      Warned.insert(F);
    } else {
      // Every process runs the loop over all the data (an evaluation, or a loop inside a
      // prepared loader's): the same result, without a speed-up.
      Matched.settled();
    }
    return false;
  }
  Change C(Info.Id, F->getBeginLoc());
  std::string Acc = Ctx.accel(F, C);
  C.insertBefore(F->getBeginLoc(),
                 "// accel-migrate(" + std::string(Info.Id) +
                     "): each batch is split between the processes (accelerate::process_share), "
                     "so together they train on the same batches as one process\n" +
                     Ctx.indentOf(F->getBeginLoc()));
  return commitShares(Ctx, C, Acc, F, Batches);
}

// ---- Whole batches: full-batch training and batches the program draws at each step ----

// Splits the batches wholeBatches found in Loop; true when they are split (now, or by an
// earlier run).
bool splitWhole(MigrationContext& Ctx, const RuleInfo& Info, const Stmt* Loop,
                const CallExpr* Backward) {
  WholeBatchSplit Found = wholeBatches(Ctx, Loop, Backward);
  if (Found.What == WholeBatchSplit::Shared) { // a second run
    Ctx.provide<ShardedBatches>().Loops.insert(Loop);
    return true;
  }
  if (Found.What != WholeBatchSplit::Split)
    return false;
  MigrationContext::Match Matched(Ctx, Loop->getBeginLoc());
  Change C(Info.Id, Loop->getBeginLoc());
  std::string Acc = Ctx.accel(Loop, C), Names;
  for (const ValueDecl* D : Found.Batches)
    Names += (Names.empty() ? "" : ", ") + D->getNameAsString();
  C.insertBefore(Loop->getBeginLoc(),
                 "// accel-migrate(" + std::string(Info.Id) + "): the batch of each step (" +
                     Names +
                     ") is split between the processes (accelerate::process_share); a batch "
                     "drawn at each step is drawn alike on every process (the same generator "
                     "state), so together they train on what one process trains on\n" +
                     Ctx.indentOf(Loop->getBeginLoc()));
  return commitShares(Ctx, C, Acc, Loop, Found.Uses);
}

// Training loops on whole tensors or drawn batches (wholeBatches). A program with recurrent
// modules is left to the warning: their inputs may hold the batch in dimension 1
// (sequence first), where process_share would split the time steps.
void splitWholeBatches(MigrationContext& Ctx, const RuleInfo& Info) {
  if (hasRecurrentModules(Ctx))
    return;
  llvm::SmallPtrSet<const Stmt*, 4> Seen;
  for (const CallExpr* Call : userCalls(Ctx)) {
    if (!isBackwardCall(Call) || !Ctx.inMainFile(Call->getBeginLoc()))
      continue;
    const Stmt* Loop = trainingLoop(Ctx, Call);
    if (!Loop || !Seen.insert(Loop).second || Ctx.need<ShardedBatches>().Loops.count(Loop) ||
        insideShardedLoop(Ctx, Loop))
      continue;
    // A range-for walks batches someone made: a loader (LibTorch's, or one prepared by an
    // earlier run, whose batches are this process's already) or a container of batches.
    if (isa<CXXForRangeStmt>(Loop))
      continue;
    splitWhole(Ctx, Info, Loop, Call);
  }
}

// Training (a backward call) in a loop whose data nothing splits: the data comes from
// somewhere the tool cannot shard (a hand-written batch iterator, an arithmetic loss on
// whole tensors, say). Each such loop is named, also when other loops of the file are split.
void warnUnsplitTraining(MigrationContext& Ctx, llvm::SmallPtrSetImpl<const Stmt*>& Warned) {
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (!getMemberCall(Call, M) || M.Name != "backward")
      continue;
    const Stmt* Loop = unsplitTraining(Ctx, Call, Warned);
    if (!Loop || !Warned.insert(Loop).second)
      continue;
    Ctx.warn(Loop->getBeginLoc(), UnpreparedLoaderInfo.Id,
             "this training loop does not iterate a torch::data loader the tool could "
             "prepare, so every process would train on all the data; shard the data by "
             "process_index()/num_processes() or use accelerator.prepare_data_loader");
  }
}

} // namespace

void runManualBatching(MigrationContext& Ctx, const RuleInfo& Info) {
  CallFacts Training = trainingFacts(Ctx);
  llvm::SmallPtrSet<const Stmt*, 4> Warned; // loops warned about
  for (const auto& N : match(forStmt(unless(isInTemplateInstantiation())).bind("f"), Ctx.AST)) {
    const auto* F = N.getNodeAs<ForStmt>("f");
    if (Ctx.inMainFile(F->getBeginLoc()))
      splitHandCut(Ctx, Info, Training, F, Warned);
  }
  if (Warned.empty())
    splitWholeBatches(Ctx, Info);
  for (const CXXForRangeStmt* F : unpreparedLoaderLoops(Ctx)) {
    Ctx.warn(F->getBeginLoc(), UnpreparedLoaderInfo.Id, UnpreparedLoaderInfo.Explanation);
    Warned.insert(F);
  }
  warnUnsplitTraining(Ctx, Warned);
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule ManualBatchingRuleEntry({
    ManualBatchingInfo,
    runManualBatching,
    /*Needs=*/{AnalysisId::PreparedLoaders},
    /*Provides=*/{AnalysisId::ShardedBatches, AnalysisId::AcceleratorRequests},
    /*Rank=*/90,
});

} // namespace accel
