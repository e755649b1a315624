// real_samples, real_mean and the sums and means across processes (<accelerate/metrics.h>).
#include <accelerate/helpers/metrics.h>

#include <accelerate/accelerator/detail/accelerator_access.h>

#include <algorithm>

namespace accelerate {

int64_t real_count(Accelerator& accelerator, int64_t rows) {
  const LoaderState& s = accelerator.loader_state();
  // The loader says what its batch holds: real samples first, then padding (only in a
  // batch with no real sample, data_split.h).
  if (s.active && s.batch_real >= 0 && rows == s.batch_real + s.batch_padded) return s.batch_real;
  if (!s.end_of_dataloader || s.remainder < 0) return rows;
  // In a padded last round every process holds a batch of the same size, and the gathered
  // round (rank order) starts with the `remainder` real samples: this process's rows are
  // [rank * rows, (rank + 1) * rows) of it.
  const int64_t first = accelerator.process_index() * rows;
  return std::clamp<int64_t>(s.remainder - first, 0, rows);
}

torch::Tensor real_samples(Accelerator& accelerator, const torch::Tensor& per_sample) {
  if (per_sample.dim() == 0) return per_sample;
  const int64_t rows = per_sample.size(0);
  const int64_t keep = real_count(accelerator, rows);
  return keep == rows ? per_sample : per_sample.narrow(0, 0, keep);
}

namespace detail {

double reduce_number(Accelerator& accelerator, double value, ReduceOp op) {
  if (accelerator.num_processes() == 1) return value;
  return accelerator.reduce(torch::tensor({value}, torch::kDouble), op).item<double>();
}

int64_t reduce_number(Accelerator& accelerator, int64_t value, ReduceOp op) {
  if (accelerator.num_processes() == 1) return value;
  return accelerator.reduce(torch::tensor({value}, torch::kInt64), op).item<int64_t>();
}

bool padded_round(Accelerator& accelerator) {
  const LoaderState& s = accelerator.loader_state();
  return accelerator.num_processes() > 1 && s.end_of_dataloader && s.remainder >= 0;
}

int64_t batch_rows(Accelerator& accelerator, const torch::Tensor& per_sample) {
  const int64_t rows = per_sample.dim() == 0 ? 1 : per_sample.size(0);
  if (accelerator.loader_state().active) return real_count(accelerator, rows);
  const int64_t shared = AcceleratorAccess::share_real_rows(accelerator, rows);
  return shared >= 0 ? shared : rows;
}

// A process without real samples adds nothing: its value (a mean of nothing) is NaN, and
// NaN * 0 would still be NaN.
double weighted_mean(Accelerator& accelerator, double value, int64_t count) {
  const double weighted = count > 0 ? value * static_cast<double>(count) : 0.0;
  auto both = accelerator.reduce(torch::tensor({weighted, static_cast<double>(count)}, torch::kDouble), ReduceOp::Sum);
  return both[0].item<double>() / both[1].item<double>();
}

torch::Tensor weighted_mean(Accelerator& accelerator, const torch::Tensor& value, int64_t count) {
  auto as_double = value.to(torch::kDouble);
  auto weighted = count > 0 ? as_double * static_cast<double>(count) : torch::zeros_like(as_double);
  auto total = accelerator.reduce(weighted, ReduceOp::Sum);
  const double counted = static_cast<double>(reduce_number(accelerator, count, ReduceOp::Sum));
  return (total / counted).to(value.scalar_type());
}

}  // namespace detail

}  // namespace accelerate
