// accelerate-device, `auto`: a Device or a DeviceType deduced from the initialiser.
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

int main() {
  auto device = torch::Device(torch::kCUDA);
  // CHECK: auto device = accelerator.device();
  auto named = torch::Device("cuda:0");
  // CHECK: auto named = accelerator.device();
  const auto fixed = torch::Device(torch::kCUDA, 0);
  // CHECK: const auto fixed = accelerator.device();
  auto type = torch::kCUDA;
  // A DeviceType stays a DeviceType.
  // CHECK: auto type = accelerator.device().type();
  auto cpu = torch::Device(torch::kCPU);
  // CHECK: auto cpu = torch::Device(torch::kCPU);
  return device.is_cuda() + named.is_cuda() + fixed.is_cuda() + (type == torch::kCUDA) + cpu.is_cuda();
}
