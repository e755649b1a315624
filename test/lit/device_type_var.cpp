// accelerate-device, torch::DeviceType variables (a Device does not convert to one: .type()).
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

int main() {
  torch::DeviceType type = torch::kCPU;
  // CHECK: torch::DeviceType type = accelerator.device().type();
  if (torch::cuda::is_available())
    type = torch::kCUDA;
  // CHECK: type = accelerator.device().type();
  torch::Device device(type);
  // CHECK: torch::Device device(accelerator.device());
  torch::DeviceType scoped = torch::DeviceType::CUDA;
  // CHECK: torch::DeviceType scoped = accelerator.device().type();
  torch::DeviceType braced{torch::kCUDA};
  // CHECK: torch::DeviceType braced{accelerator.device().type()};
  torch::DeviceType cpu = torch::kCPU;
  // CHECK: torch::DeviceType cpu = torch::kCPU;
  return device.is_cuda() + (scoped == torch::kCUDA) + (braced == torch::kCUDA) + (cpu == torch::kCUDA);
}
