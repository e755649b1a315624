#pragma once
// Which values of the migrated program can differ between processes: everything computed
// from this process's batches (the variable of a loop over a prepared loader, the shares of
// hand-cut batches), clocks and C random numbers, and whatever is computed from those:
// through variables (every assignment, compound assignment, initialiser, argument passed by
// non-const reference, non-const member call, increment; and the tests that guard each of
// these), function parameters (every call site of the
// file) and return values of the file's functions. Results of collectives (reduce, gather,
// check_trigger, sum_across_processes) and accumulators accelerate-gather-metrics reduced
// are the same everywhere; so are process_index()/is_main_process() tests, by design.
// Flow-insensitive: a variable is per process when any of its definitions is.
// Not part of the library's interface.

#include "analyses/RuleSupport.h"

#include <llvm/ADT/DenseMap.h>

#include <map>

namespace accel {

class PerProcessValues {
 public:
  explicit PerProcessValues(MigrationContext& Ctx);
  bool perProcess(const clang::Expr* E);
  bool perProcess(const clang::ValueDecl* D);
  // Expressions that define D (initialiser, right-hand sides, calls that may write it).
  const std::vector<const clang::Expr*>& definitions(const clang::ValueDecl* D);
  // The range-for variables that hold this process's batches.
  bool isBatchVariable(const clang::ValueDecl* D) const { return BatchVars.count(D) > 0; }

 private:
  void collect();
  void addCallDefinitions(const clang::CallExpr* C);
  void addGuards(const clang::ValueDecl* D, const clang::Expr* Def);
  bool returnsPerProcess(const clang::FunctionDecl* FD);
  static bool isSameEverywhere(const clang::CallExpr* C);
  static bool isSource(const clang::CallExpr* C);

  MigrationContext& Ctx;
  std::map<const clang::ValueDecl*, std::vector<const clang::Expr*>> Defs;
  llvm::SmallPtrSet<const clang::ValueDecl*, 8> BatchVars;
  llvm::DenseMap<const void*, int> State; // 1 computing, 2 same everywhere, 3 per process
};

} // namespace accel
