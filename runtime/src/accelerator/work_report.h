#pragma once
// The work report (ACCELERATE_WORK_REPORT, docs/runtime-api.md): how much work this process
// did, so that a harness can check that N processes split the work instead of each doing
// all of it (issue 47). Private to the accelerator room.
#include <cstdint>

namespace accelerate {
namespace detail {

struct WorkCounts {
  int64_t backward_calls = 0;   // Accelerator::backward
  int64_t optimizer_steps = 0;  // optimizer_step() calls that stepped
  int64_t samples = 0;          // real samples of prepared loaders and process_share
  int64_t padded_samples = 0;   // repeated ones (even_batches padding, process_share's copied row)

  WorkCounts& operator+=(const WorkCounts& o) {
    backward_calls += o.backward_calls;
    optimizer_steps += o.optimizer_steps;
    samples += o.samples;
    padded_samples += o.padded_samples;
    return *this;
  }
};

// Writes <dir>/work-rank<rank>.json when ACCELERATE_WORK_REPORT names a directory (else
// nothing): {"rank": R, "world_size": N, "backward_calls": B, "optimizer_steps": S,
// "samples": n, "padded_samples": p}. Written whole (a temporary file renamed); a failure is
// printed to stderr, never thrown (it runs in destructors and at exit).
void write_work_report(int64_t rank, int64_t world_size, const WorkCounts& counts);

}  // namespace detail
}  // namespace accelerate
