// accelerate-device: a program's own "CUDA or exit" check follows the launcher. The
// condition `torch::cuda::is_available()` of a check whose no-CUDA branch leaves the program
// (a return from main, a throw, a noreturn call such as std::exit or TORCH_CHECK's failure)
// becomes `accelerator.device().is_cuda() || accelerator.options().cpu().value()`: the
// migrated program stops where the original stopped (no CUDA), unless `accelerate launch
// --cpu` asked for the CPU. Other uses of is_available() are left alone.
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

void require_cuda() {
  if (!torch::cuda::is_available())
  // DIAG: cuda_required.cpp:[[@LINE-1]]:8: note: the program's CUDA requirement now follows the launcher{{.*}} [accelerate-device]
    throw std::runtime_error("this program needs a GPU");
  // CHECK: if (!(accelerate::Accelerator::current().device().is_cuda() || accelerate::Accelerator::current().options().cpu().value()))
}

// A return from a helper does not leave the program: not a requirement.
torch::Device pick() {
  if (!torch::cuda::is_available())
    return torch::kCPU;
  // CHECK: if (!torch::cuda::is_available())
  return torch::kCPU;
}

int main() {
  // CHECK: accelerate::Accelerator accelerator;
  if (!torch::cuda::is_available()) {
  // DIAG: cuda_required.cpp:[[@LINE-1]]:8: note: the program's CUDA requirement now follows the launcher{{.*}} [accelerate-device]
    // CHECK-NEXT: if (!(accelerator.device().is_cuda() || accelerator.options().cpu().value())) {
    std::cerr << "CUDA is not available, exiting" << std::endl;
    return 1;
  }
  if (torch::cuda::is_available() == false)
  // DIAG: cuda_required.cpp:[[@LINE-1]]:7: note: the program's CUDA requirement now follows the launcher{{.*}} [accelerate-device]
    std::exit(1);
  // CHECK: if ((accelerator.device().is_cuda() || accelerator.options().cpu().value()) == false)
  if (torch::cuda::is_available()) {
  // DIAG: cuda_required.cpp:[[@LINE-1]]:7: note: the program's CUDA requirement now follows the launcher{{.*}} [accelerate-device]
    // CHECK: if (accelerator.device().is_cuda() || accelerator.options().cpu().value()) {
    std::cerr << "training on the GPU" << std::endl;
  } else {
    std::abort();
  }
  TORCH_CHECK(torch::cuda::is_available(), "CUDA required");
  // DIAG: cuda_required.cpp:[[@LINE-1]]:15: note: the program's CUDA requirement now follows the launcher{{.*}} [accelerate-device]
  // CHECK: TORCH_CHECK((accelerator.device().is_cuda() || accelerator.options().cpu().value()), "CUDA required");
  require_cuda();

  // Negative: a choice, not a requirement.
  if (torch::cuda::is_available())
    std::cerr << "CUDA available" << std::endl;
  // CHECK: if (torch::cuda::is_available())
  if (!torch::cuda::is_available()) {
    // CHECK: if (!torch::cuda::is_available()) {
    std::cerr << "no CUDA: training on the CPU" << std::endl;
  }
  // Training makes `accelerator` take per-process values (backward on this process's
  // batches): the migrated checks must still not be per-process decisions
  // (accelerate-decide-together) when the output is migrated again (Inputs/fixpoint.sh).
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("d"), 64);
  for (auto& batch : *loader) {
    auto loss = torch::nll_loss(batch.data, batch.target);
    loss.backward();
  }
  return pick().is_cuda();
}
// Each rewritten check is reported as a note, never a warning.
// DIAG-NOT: warning:
