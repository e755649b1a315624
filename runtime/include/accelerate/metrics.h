#pragma once
// Metrics summed over the batches of a sharded loop: each process adds what its own
// samples contribute, and one reduction makes the total what one process would have
// counted. accel-migrate writes these for `correct += pred.eq(y).sum().item<int64_t>()`,
// `loss_sum += loss.item<double>() * data.size(0)` and the like (docs/rules.md,
// accelerate-gather-metrics), instead of gathering whole batches at every step.

#include <accelerate/accelerator.h>

#include <cstdint>
#include <type_traits>

namespace accelerate {

// The rows of `per_sample` (a tensor of the batch being processed, samples along dim 0)
// that are this process's real samples. That is every row, except on the last batch of an
// epoch that even_batches padding completed with repeated samples: there the repeats are
// dropped, exactly the rows gather_for_metrics drops from the gathered batch. 0-dim
// tensors come back unchanged. Local: no communication.
torch::Tensor real_samples(Accelerator& accelerator, const torch::Tensor& per_sample);

namespace detail {
double reduce_number(Accelerator& accelerator, double value, ReduceOp op);
int64_t reduce_number(Accelerator& accelerator, int64_t value, ReduceOp op);
}  // namespace detail

// The sum over all processes of a number (or tensor) each process computed: one
// all-reduce, the same result on every process. One process: the value itself.
template <typename T>
T sum_across_processes(Accelerator& accelerator, const T& value) {
  if constexpr (std::is_same_v<T, torch::Tensor>) {
    return accelerator.reduce(value, ReduceOp::Sum);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(detail::reduce_number(accelerator, static_cast<int64_t>(value), ReduceOp::Sum));
  } else {
    static_assert(std::is_floating_point_v<T>,
                  "accelerate::sum_across_processes: expected a number or a torch::Tensor");
    return static_cast<T>(detail::reduce_number(accelerator, static_cast<double>(value), ReduceOp::Sum));
  }
}

// The mean over all processes: for per-batch means (a mean-reduced loss summed over
// batches), which average to the whole batch's mean when the processes' shares are equal.
template <typename T>
T mean_across_processes(Accelerator& accelerator, const T& value) {
  if constexpr (std::is_same_v<T, torch::Tensor>) {
    return accelerator.reduce(value, ReduceOp::Mean);
  } else {
    static_assert(std::is_arithmetic_v<T>, "accelerate::mean_across_processes: expected a number or a torch::Tensor");
    return static_cast<T>(detail::reduce_number(accelerator, static_cast<double>(value), ReduceOp::Mean));
  }
}

}  // namespace accelerate
