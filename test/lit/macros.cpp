// Edits inside macro expansions are refused (with a warning) unless the whole range is a
// macro argument written in the file; nothing breaks.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

#define BACKWARD(x) x.backward()
#define STEP(body) body

int main() {
  torch::Tensor loss;
  BACKWARD(loss);
  // CHECK: BACKWARD(loss);
  STEP(loss.backward());
  // CHECK: STEP(accelerator.backward(loss));
  TORCH_CHECK(loss.item<double>() > 0, "positive");
  // CHECK: TORCH_CHECK(loss.item<double>() > 0, "positive");
  AT_ASSERT(torch::cuda::is_available());
  // A CUDA requirement written as a macro argument is rewritten there (cuda_required.cpp).
  // CHECK: AT_ASSERT((accelerator.device().is_cuda() || accelerator.options().cpu().value()));
  return 0;
}
// DIAG: macros.cpp:[[@LINE-11]]:3: warning: not rewritten: the code is inside a macro expansion; migrate it by hand [accelerate-backward]
