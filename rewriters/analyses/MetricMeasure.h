#pragma once
// What a value computed in the body of a sharded loop measures, so that a sum of it over
// the batches can be combined across processes (accelerate-gather-metrics):
//   PerSample  a tensor with one row per sample of this process's batch (batch.data,
//              model->forward(data), output.argmax(1));
//   SampleSum  a sum over this process's samples (pred.eq(y).sum(), a Sum-reduced loss,
//              data.size(0), loss.item() * data.size(0)): processes' values add up;
//   BatchMean  a mean over this process's samples (a default-reduced loss, x.mean()): the
//              whole batch's value is the mean of the processes' values;
//   Uniform    the same on every process (constants, hyper-parameters, model attributes);
//   Unknown    anything else (a user function of the batch, products of sums, ...).
// Not part of the library's interface.

#include "analyses/RuleSupport.h"

#include <llvm/ADT/DenseMap.h>

namespace accel {

enum class Measure { Uniform, PerSample, SampleSum, BatchMean, Unknown };

// The module object a call runs through: `m(x, ...)` (a ModuleHolder's operator(), its
// object seen through a derived-to-base cast) or `m->forward(x, ...)` / `m.forward(x, ...)`,
// seen through a holder's operator->; nullptr for other calls. Input: its first argument.
const clang::Expr* moduleCallObject(const clang::CallExpr* C, const clang::Expr** Input = nullptr);
// A loss function or loss module call (`nll_loss`, `cross_entropy`, `criterion(out, y)`
// with a *Loss module), and whether its reduction is spelled as a sum.
bool isLossCall(const clang::CallExpr* C);
bool hasSumReduction(MigrationContext& Ctx, const clang::CallExpr* C);
// Calls of the runtime that make a value the same on every process, or that already hand
// out this process's real samples: code around them was migrated already.
bool isRuntimeMetricCall(const clang::Expr* E);

class MeasureAnalysis {
 public:
  // Loop: the sharded loop; BatchVar: its range-for variable (nullptr for hand-batched
  // loops, whose per-sample tensors are the loop's locals).
  MeasureAnalysis(MigrationContext& Ctx, const clang::Stmt* Loop, const clang::VarDecl* BatchVar)
      : Ctx(Ctx), Loop(Loop), BatchVar(BatchVar) {}

  Measure of(const clang::Expr* E);
  // The expressions in E that name per-sample tensors (the batch and its members, tensors
  // declared in the loop whose measure is PerSample), in source order; not inside calls of
  // the runtime (already migrated).
  void perSampleUnits(const clang::Expr* E, std::vector<const clang::Expr*>& Out);
  bool declaredInLoop(const clang::ValueDecl* D) const;
  // A variable declared in the loop (its initialiser gives its measure).
  const clang::VarDecl* loopLocal(const clang::Expr* E) const;

 private:
  Measure ofDecl(const clang::VarDecl* V);
  Measure ofCall(const clang::CallExpr* C);
  Measure ofMemberCall(const clang::CallExpr* C, const MemberCall& M);
  Measure ofBinary(clang::BinaryOperatorKind Op, const clang::Expr* L, const clang::Expr* R);
  Measure combine(const clang::Stmt* S);
  Measure combineAll(std::initializer_list<Measure> Ms);
  bool isBatch(const clang::Expr* E) const;

  MigrationContext& Ctx;
  const clang::Stmt* Loop;
  const clang::VarDecl* BatchVar;
  llvm::DenseMap<const clang::VarDecl*, Measure> Memo;
};

} // namespace accel
