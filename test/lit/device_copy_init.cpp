// accelerate-device, copy-initialised from a DeviceType: `torch::Device d = torch::kCUDA;`.
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

int main() {
  torch::Device device = torch::kCUDA;
  // CHECK: torch::Device device = accelerator.device();
  torch::Device index = torch::Device(torch::kCUDA, 0);
  // CHECK: torch::Device index = accelerator.device();
  torch::Device cpu = torch::kCPU;
  // CHECK: torch::Device cpu = torch::kCPU;
  return device.is_cuda() + index.is_cuda() + cpu.is_cuda();
}
