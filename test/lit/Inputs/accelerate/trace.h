// Stub of the runtime's accelerate/trace.h (runtime/include/accelerate/trace.h): the two
// calls `accel-migrate --trace-only` writes, so that its output parses again in the lit tests.
#pragma once
#include <torch/torch.h>

namespace accelerate {
namespace trace {
const torch::Tensor& loss(const torch::Tensor& l);
torch::Tensor after_step(torch::Tensor result, const torch::optim::Optimizer& optimizer);
}  // namespace trace
}  // namespace accelerate
