#pragma once
// Metrics summed over the batches of a sharded loop: each process adds what its own
// samples contribute, and one reduction makes the total what one process would have
// counted. accel-migrate writes these for `correct += pred.eq(y).sum().item<int64_t>()`,
// `loss_sum += loss.item<double>() * data.size(0)` and the like (docs/rules.md,
// accelerate-gather-metrics), instead of gathering whole batches at every step.

#include <accelerate/accelerator/accelerator.h>

#include <cstdint>
#include <type_traits>

namespace accelerate {

// The rows of `per_sample` (a tensor of the batch being processed, samples along dim 0)
// that are this process's real samples. That is every row, except on the last batch of an
// epoch that even_batches padding completed with repeated samples: there the repeats are
// dropped, exactly the rows gather_for_metrics drops from the gathered batch. 0-dim
// tensors come back unchanged. Local: no communication.
torch::Tensor real_samples(Accelerator& accelerator, const torch::Tensor& per_sample);

// How many of this process's `rows` rows of the batch being processed are real samples
// (real_samples(accelerator, t).size(0) for a tensor t of `rows` rows).
int64_t real_count(Accelerator& accelerator, int64_t rows);

namespace detail {
double reduce_number(Accelerator& accelerator, double value, ReduceOp op);
int64_t reduce_number(Accelerator& accelerator, int64_t value, ReduceOp op);
bool padded_round(Accelerator& accelerator);
double weighted_mean(Accelerator& accelerator, double value, int64_t count);
int64_t batch_rows(Accelerator& accelerator, const torch::Tensor& per_sample);
torch::Tensor weighted_mean(Accelerator& accelerator, const torch::Tensor& value, int64_t count);
}  // namespace detail

// A per-batch mean (a default-reduced loss, x.mean(), correct / size) that this process
// computed over its real samples of the batch being processed, made the mean over the
// real samples of every process. `per_sample` is a tensor of the batch as the loader gave
// it (before real_samples), from which this process's count of real samples follows.
// On the last batch of an epoch that even_batches padding completed, the processes hold
// different numbers of real samples (some none: their `value` is a mean of nothing, NaN),
// so the batch's mean is the count-weighted mean of theirs: one all-reduce, the same
// value on every process; a mean of it across processes (mean_across_processes) is then
// that value again. Elsewhere, and on one process, `value` itself, no communication.
template <typename T>
T real_mean(Accelerator& accelerator, const T& value, const torch::Tensor& per_sample) {
  if (!detail::padded_round(accelerator)) return value;
  const int64_t count = real_count(accelerator, per_sample.dim() == 0 ? 1 : per_sample.size(0));
  if constexpr (std::is_same_v<T, torch::Tensor>) {
    return detail::weighted_mean(accelerator, value, count);
  } else {
    static_assert(std::is_arithmetic_v<T>, "accelerate::real_mean: expected a number or a torch::Tensor");
    return static_cast<T>(detail::weighted_mean(accelerator, static_cast<double>(value), count));
  }
}

// A per-batch mean (a default-reduced loss, x.mean()) that this process computed over its
// part of the batch being processed, made the mean over the whole batch, in every step: for
// a value kept from the last batch (`last_loss = loss.item<double>()`, `if (loss < eps)
// break;`), where one process's part would otherwise stand for the batch. `per_sample` is a
// tensor of this process's part: a prepared loader's batch, or what process_share returned
// (a copy of one row, on a process that holds none of the batch's rows, counts for
// nothing). One all-reduce on N processes, so every process must call it; one process:
// `value` itself.
template <typename T>
T batch_mean(Accelerator& accelerator, const T& value, const torch::Tensor& per_sample) {
  if (accelerator.num_processes() == 1) return value;
  const int64_t count = detail::batch_rows(accelerator, per_sample);
  if constexpr (std::is_same_v<T, torch::Tensor>) {
    return detail::weighted_mean(accelerator, value, count);
  } else {
    static_assert(std::is_arithmetic_v<T>, "accelerate::batch_mean: expected a number or a torch::Tensor");
    return static_cast<T>(detail::weighted_mean(accelerator, static_cast<double>(value), count));
  }
}

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
