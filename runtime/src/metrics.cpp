// real_samples and the sums and means across processes (<accelerate/metrics.h>).
#include <accelerate/metrics.h>

#include <algorithm>

namespace accelerate {

torch::Tensor real_samples(Accelerator& accelerator, const torch::Tensor& per_sample) {
  const LoaderState& s = accelerator.loader_state();
  if (per_sample.dim() == 0 || !s.end_of_dataloader || s.remainder < 0) return per_sample;
  // In a padded last round every process holds a batch of the same size, and the gathered
  // round (rank order) starts with the `remainder` real samples: this process's rows are
  // [rank * rows, (rank + 1) * rows) of it.
  const int64_t rows = per_sample.size(0);
  const int64_t first = accelerator.process_index() * rows;
  const int64_t keep = std::clamp<int64_t>(s.remainder - first, 0, rows);
  return per_sample.narrow(0, 0, keep);
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

}  // namespace detail

}  // namespace accelerate
