#pragma once
// Facts about what a statement does, looking through the calls it makes to functions of
// the file being migrated: whether it trains (a backward call) and whether it does
// collective work (something every process must do the same number of times).
// Not part of the library's interface.

#include "analyses/RuleSupport.h"

#include <functional>

namespace accel {

// `loss.backward()`, `ptr->backward()`, `accelerator.backward(loss)`.
bool isBackwardCall(const clang::CallExpr* C);
// A call that is collective once migrated: backward, the Accelerator's collectives
// (gather, reduce, wait_for_everyone, check_trigger, prepare, save_state, ...), the
// runtime's sums across processes, make_data_loader/prepare_data_loader (a shared seed).
bool isCollectiveCall(const clang::CallExpr* C);

// The statements for which Direct(S) holds, and the functions of the main file whose
// bodies contain one, directly or through calls to other such functions.
class CallFacts {
 public:
  using Pred = std::function<bool(const clang::Stmt*)>;
  CallFacts(MigrationContext& Ctx, Pred Direct);
  bool in(const clang::Stmt* S) const;
  bool function(const clang::FunctionDecl* FD) const;

 private:
  bool calls(const clang::Stmt* S) const;
  Pred Direct;
  llvm::SmallPtrSet<const clang::FunctionDecl*, 16> Functions;
};

// Backward somewhere in S (through the file's own functions).
CallFacts trainingFacts(MigrationContext& Ctx);
// Collective work in S: collective calls, and the loops and functions where
// accelerate-gather-metrics inserted reductions.
CallFacts collectiveFacts(MigrationContext& Ctx);

} // namespace accel
