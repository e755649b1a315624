// torch::nn::utils::clip_grad_norm_/clip_grad_value_ -> the accelerator's.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck both the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

namespace utils = torch::nn::utils;

int main() {
  std::vector<torch::Tensor> params;
  double norm = torch::nn::utils::clip_grad_norm_(params, 1.0);
  // CHECK: double norm = accelerator.clip_grad_norm_(params, 1.0);
  torch::nn::utils::clip_grad_norm_(params, 0.5, 1.0);
  // CHECK: accelerator.clip_grad_norm_(params, 0.5, 1.0);
  utils::clip_grad_value_(params, 0.1);
  // CHECK: accelerator.clip_grad_value_(params, 0.1);
  torch::nn::utils::clip_grad_norm_(params, 0.5, 2.0, true);
  // DIAG: clip_grad.cpp:[[@LINE-1]]:3: warning: clip_grad_norm_ with error_if_nonfinite {{.*}} [accelerate-clip-grad]
  // CHECK: // accel-migrate(accelerate-clip-grad):
  // CHECK-NEXT: torch::nn::utils::clip_grad_norm_(params, 0.5, 2.0, true);
  return norm > 0;
}
