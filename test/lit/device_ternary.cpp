// accelerate-device, a ternary on torch::cuda::is_available() or on a flag computed from it.
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

int main() {
  torch::Device types = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  // CHECK: torch::Device types = accelerator.device();
  torch::Device devices = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  // CHECK: torch::Device devices = accelerator.device();
  torch::Device direct(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  // CHECK: torch::Device direct(accelerator.device());
  const bool use_cuda = torch::cuda::is_available();
  auto flagged = use_cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  // CHECK: auto flagged = accelerator.device();
  torch::DeviceType type = use_cuda ? torch::kCUDA : torch::kCPU;
  // CHECK: torch::DeviceType type = accelerator.device().type();
  return types.is_cuda() + devices.is_cuda() + direct.is_cuda() + flagged.is_cuda() + (type == torch::kCUDA);
}
