#pragma once
// What rules learn about a translation unit and hand to later rules. Each analysis is a
// type; a rule reads one only if the rule table says it needs it and writes one only if
// the table says it provides it (MigrationContext checks both), so the table's order is
// the order the data really flows in.

#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <string>
#include <vector>

namespace accel {

enum class AnalysisId : unsigned {
  PreparedLoaders,
  PreparedObjects,
  ShardedBatches,
  ReducedMetrics,
  AcceleratorRequests,
  AcceleratorDecision,
  Count
};
const char* analysisName(AnalysisId Id);

// Data loaders that are (now) prepared: each process iterates its own shard.
struct PreparedLoaders {
  static constexpr AnalysisId Id = AnalysisId::PreparedLoaders;
  llvm::SmallPtrSet<const clang::ValueDecl*, 8> Vars;
};

// Models and optimizers (and other objects) passed to prepare().
struct PreparedObjects {
  static constexpr AnalysisId Id = AnalysisId::PreparedObjects;
  llvm::SmallPtrSet<const clang::ValueDecl*, 8> Vars;
};

// Hand-batched loops whose batches are now split between the processes, and the slicing
// calls that give each process its share (accelerate-manual-batching).
struct ShardedBatches {
  static constexpr AnalysisId Id = AnalysisId::ShardedBatches;
  llvm::SmallPtrSet<const clang::Stmt*, 4> Loops;
  llvm::SmallPtrSet<const clang::Expr*, 8>
      Slices; // slice calls, or whole tensors (each wrapped in process_share)
};

// Accumulators over sharded loops that are reduced across processes (the same value on
// every process once the loop is over) and the loops that reduce them
// (accelerate-gather-metrics).
struct ReducedMetrics {
  static constexpr AnalysisId Id = AnalysisId::ReducedMetrics;
  llvm::SmallPtrSet<const clang::ValueDecl*, 8> Values;
  llvm::SmallPtrSet<const clang::Stmt*, 4> Loops;
  // Print statements before which the whole batch's value of what they print is computed
  // (a collective): a main-process guard must begin at them, not before.
  llvm::SmallPtrSet<const clang::Stmt*, 4> Prints;
};

// What the edits of all rules ask of main's Accelerator: that it exist, that it be
// named in main, and statements to run right after it for objects that exist before main.
struct AcceleratorRequests {
  static constexpr AnalysisId Id = AnalysisId::AcceleratorRequests;
  bool Runtime = false; // some edit uses the accelerate API
  bool Local = false;   // some edit names main's `accelerator`
  llvm::SmallPtrSet<const clang::VarDecl*, 4> DeferredGlobals; // `= accelerator.device()`
  std::vector<std::string> MainPrologue; // `{acc}` stands for the Accelerator's name
};

// What accelerate-accelerator decided: whether main constructs an Accelerator and whether
// the file uses the runtime at all (so needs the include).
struct AcceleratorDecision {
  static constexpr AnalysisId Id = AnalysisId::AcceleratorDecision;
  bool MainHasAccelerator = false;
  bool UsesRuntime = false;
};

} // namespace accel
