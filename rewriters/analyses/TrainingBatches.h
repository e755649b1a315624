#pragma once
// What accelerate-manual-batching (rules/ManualBatchingRule.cpp) finds before it edits: the
// batches a counted loop cuts by hand, the batches of a loop that trains on whole tensors or
// on batches it draws, and the training loops whose data nothing splits. Only the AST and
// the analyses the rule declares are read here (PreparedLoaders, and ShardedBatches as the
// rule has filled it so far: ask at the moment the answer is needed); the rule writes every
// edit and warning. Not part of the library's interface.

#include "analyses/RuleSupport.h"

#include <llvm/ADT/SmallPtrSet.h>

#include <optional>
#include <vector>

namespace accel {

// A counted loop's batches: slices of tensors declared outside it by its counter, and
// tensors stacked in it from a vector range (`torch::stack(...)` of what the loop collected).
struct HandCutLoop {
  std::vector<const clang::Expr*> Batches; // not yet wrapped in process_share
  bool Unsafe = false; // a slice along another dimension, of a loop local, or written to
  bool Shared = false; // a batch wrapped in process_share already (a second run)
  bool Slices = false; // the loop slices tensors by its counter
};
// nullopt when F does not count with one integer variable it declares.
std::optional<HandCutLoop> handCutBatches(MigrationContext& Ctx, const clang::ForStmt* F);

// S runs inside a loop over a prepared loader or over hand-cut batches already split.
bool insideShardedLoop(MigrationContext& Ctx, const clang::Stmt* S);

// The loop that trains on the same tensors at every step (the whole data set) or on a batch
// it draws itself. Split: Batches are the variables whose uses in the loop (Uses) are split
// between the processes; only a loss made by a loss function from the model's output and
// such variables qualifies, as anything else could mix a share with a whole tensor. Shared:
// split by an earlier run. None: anything else.
struct WholeBatchSplit {
  enum Kind { None, Shared, Split } What = None;
  std::vector<const clang::ValueDecl*> Batches;
  std::vector<const clang::Expr*> Uses;
};
WholeBatchSplit wholeBatches(MigrationContext& Ctx, const clang::Stmt* Loop,
                             const clang::CallExpr* Backward);

// The innermost loop around a backward call, in its own function; nullptr if none.
const clang::Stmt* trainingLoop(MigrationContext& Ctx, const clang::CallExpr* Backward);
// The file names a recurrent module (LSTM, GRU, RNN), whose inputs may hold the batch in
// dimension 1.
bool hasRecurrentModules(MigrationContext& Ctx);

// The outermost loop around a backward call in its function when nothing splits its data:
// no loop around it is split here, iterates a loader, splits by itself or is in Warned.
// nullptr when its data is split (or it is in no loop).
const clang::Stmt* unsplitTraining(MigrationContext& Ctx, const clang::CallExpr* Backward,
                                   const llvm::SmallPtrSetImpl<const clang::Stmt*>& Warned);

// Range-for loops over a LibTorch data loader that is neither prepared nor a parameter (the
// caller's to prepare), in the file's order.
std::vector<const clang::CXXForRangeStmt*> unpreparedLoaderLoops(MigrationContext& Ctx);

} // namespace accel
