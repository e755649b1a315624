// accelerate-device, the CPU first and CUDA assigned later in an `if` (the form of issue #29:
// it became `torch::Device accelerator.device();` as C++14).
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::Device device = torch::kCPU;
  // CHECK: torch::Device device = accelerator.device();
  if (torch::cuda::is_available())
    device = torch::kCUDA;
  // CHECK: device = accelerator.device();
  torch::Device direct(torch::kCPU);
  // CHECK: torch::Device direct(accelerator.device());
  if (torch::cuda::is_available()) {
    std::cerr << "CUDA available: training on GPU" << std::endl;
    direct = torch::Device(torch::kCUDA);
    // CHECK: direct = accelerator.device();
  }
  torch::Device spelled = torch::Device(torch::kCPU);
  // CHECK: torch::Device spelled = accelerator.device();
  if (torch::cuda::is_available()) spelled = torch::Device("cuda:0");
  // CHECK: if (torch::cuda::is_available()) spelled = accelerator.device();
  auto deduced = torch::Device(torch::kCPU);
  // CHECK: auto deduced = accelerator.device();
  if (torch::cuda::is_available()) deduced = torch::kCUDA;
  // CHECK: if (torch::cuda::is_available()) deduced = accelerator.device();
  return device.is_cuda() + direct.is_cuda() + spelled.is_cuda() + deduced.is_cuda();
}
