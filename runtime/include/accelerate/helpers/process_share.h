#pragma once
// This process's share of a batch that every process built whole, for programs that cut
// batches by hand from whole-dataset tensors (`x.slice(0, i, i + bs)`): accel-migrate
// wraps such slices so that the processes split each batch, as a prepared loader with
// split_batches does, and the optimisation sees the same global batch as one process.

#include <accelerate/accelerator/accelerator.h>

namespace accelerate {

// Rows [first, last) of `batch` along dim 0 for this process, contiguous and in process
// order (accelerate::split_range: sizes differ by at most one). A batch with fewer rows
// than processes leaves some processes without a row: they get a copy of the batch's last
// row instead, so that a mean-reduced loss is never taken over an empty tensor (NaN).
// 0-dim tensors and one process: `batch` unchanged.
torch::Tensor process_share(Accelerator& accelerator, const torch::Tensor& batch);

}  // namespace accelerate
