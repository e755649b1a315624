#pragma once
// What sharded data parallel holds on this process (fsdp room), returned by
// Accelerator::fsdp_stats(). Included by accelerator.h.

#include <cstdint>

namespace accelerate {

// docs/fsdp.md; zeros without sharding.
struct FsdpStats {
  int64_t models = 0;                 // prepared models under SHARD_GRAD_OP / FULL_SHARD
  int64_t units = 0;                  // FSDP units over all of them
  int64_t parameters = 0;             // their trainable parameters (elements)
  int64_t local_parameters = 0;       // elements of the shards this process holds (padding included)
  int64_t gathered_units = 0;         // units whose full parameters are in memory now
  int64_t largest_unit = 0;           // elements of the largest unit
  int64_t gathers = 0;                // all-gathers of units so far
  int64_t reductions = 0;             // reduce-scatters of unit gradients so far
  int64_t prefetches = 0;             // gathers started ahead of their use (FULL_SHARD prefetch)
  int64_t prefetch_hits = 0;          // ... of which the read they were started for waited for them
  int64_t most_gathered = 0;          // the most units in memory at once, prefetched ones included
  int64_t overlapped_reductions = 0;  // reduce-scatters that ran beside the next unit's backward
};

}  // namespace accelerate
