// process_share (<accelerate/process_share.h>).
#include <accelerate/process_share.h>

namespace accelerate {

torch::Tensor process_share(Accelerator& accelerator, const torch::Tensor& batch) {
  if (batch.dim() == 0 || accelerator.num_processes() == 1) return batch;
  const int64_t n = batch.size(0);
  const auto [first, last] = accelerator.process_range(0, n);
  if (first == last && n > 0) return batch.narrow(0, n - 1, 1);
  return batch.narrow(0, first, last - first);
}

}  // namespace accelerate
