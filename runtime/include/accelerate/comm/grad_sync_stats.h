#pragma once
// Counters of the gradient synchronisation (comm room), returned by
// Accelerator::grad_sync_stats(). Included by accelerator.h.

#include <cstdint>

namespace accelerate {

// Counters of the gradient synchronisation of all prepared models (see docs/runtime-api.md).
struct GradSyncStats {
  int64_t models = 0;                    // prepared models with synchronised gradients
  int64_t buckets = 0;                   // buckets over all of them
  int64_t passes = 0;                    // synchronised backward passes
  int64_t launched_during_backward = 0;  // bucket all-reduces started while backward ran
  int64_t launched_at_end = 0;           // ... started only when backward had finished
  int64_t shared_memory_models = 0;      // models whose buckets are in shared memory (same-host processes)
  int64_t copied_gradients = 0;  // gradients copied into a bucket (not already there, see docs/shared-memory.md)
  double copy_seconds = 0;       // spent preparing buckets (those copies) before all-reduces
  double wait_seconds = 0;       // from the end of backward until all buckets were all-reduced
};

}  // namespace accelerate
