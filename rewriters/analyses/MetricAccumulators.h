#pragma once
// The finding half of accelerate-gather-metrics (rules/GatherMetricsRule.cpp edits what
// this finds): which loops iterate a prepared loader, what each accumulation in a sharded
// loop sums (`acc += <expr>`, classified by MetricMeasure.h), which accumulators only count
// samples, whether a reduction may wait until after the loop, and whether every process
// reaches a statement whenever one does. Nothing here edits.
// Not part of the library's interface.

#include "analyses/MetricMeasure.h"
#include "analyses/PerProcessValues.h"

#include <memory>
#include <vector>

namespace accel {

// One `acc += RHS` (or `x = RHS` for a value kept past the step) and what RHS measures.
struct MetricStep {
  const clang::Stmt* S;
  const clang::Expr* LHS;
  const clang::Expr* RHS;
  Measure M;
};

// A variable or field declared outside the loop and summed in it.
struct MetricAccumulator {
  const clang::ValueDecl* D = nullptr;
  std::vector<MetricStep> Steps;
  Measure M = Measure::Uniform; // the steps' common measure, Unknown when they differ
  bool Counter = false;         // a constant per batch that counts samples
};

// The range-for loops of the main file over a prepared loader: a variable the data-loader
// rule prepared, a parameter that receives one (`test(model, *test_loader)`), or a template
// parameter whose batches have `.data` or `.target` (a loader passed in by the caller).
std::vector<const clang::CXXForRangeStmt*> preparedLoaderLoops(MigrationContext& Ctx);

// The accumulations of a sharded loop's body, found once per loop.
struct LoopAccumulators {
  std::vector<MetricAccumulator> Todo;          // classified, counters marked: to reduce
  std::vector<const clang::ValueDecl*> Reduced; // reduced already (a second run)
};
LoopAccumulators findAccumulators(MigrationContext& Ctx, MeasureAnalysis& MA,
                                  const clang::Stmt* Loop, const clang::Stmt* Body);

// Whether A's reduction may run once after Loop: A starts at zero right before it, the loop
// runs at most once per execution of the declaration, nothing but the accumulations touches
// A until the loop ends, and the loop is left only at its end.
bool canDeferReduction(MigrationContext& Ctx, const MetricAccumulator& A, const clang::Stmt* Loop);

// The body of the function around S (nullptr outside one).
const clang::Stmt* functionBodyOf(MigrationContext& Ctx, const clang::Stmt* S);

// Whether every process reaches a statement of a sharded loop's body whenever one does: the
// conditions between the body and it are the same on every process (PerProcessValues, the
// analysis accelerate-decide-together uses), and no jump before it is taken by some
// processes only. Made once per file (its analysis walks the file at the first question).
class ReachedByEveryProcess {
 public:
  explicit ReachedByEveryProcess(MigrationContext& Ctx) : Ctx(Ctx) {}
  bool sameOnEveryProcess(const clang::Stmt* S, const clang::Stmt* Loop);
  // A `continue`, `break`, `return` or `goto` before S in Body that not every process takes
  // alike (`if (torch::isnan(loss).item<bool>()) continue;`).
  bool jumpsBefore(const clang::Stmt* S, const clang::Stmt* Body, const clang::Stmt* Loop);

 private:
  MigrationContext& Ctx;
  std::unique_ptr<PerProcessValues> PP;
};

} // namespace accel
