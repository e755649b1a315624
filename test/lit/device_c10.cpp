// accelerate-device, c10::Device and c10::DeviceType spelled out (and at::).
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

int main() {
  c10::Device device(c10::kCUDA);
  // CHECK: c10::Device device(accelerator.device());
  c10::Device copied = c10::DeviceType::CUDA;
  // CHECK: c10::Device copied = accelerator.device();
  c10::DeviceType type = c10::kCUDA;
  // CHECK: c10::DeviceType type = accelerator.device().type();
  at::Device at_device = at::Device(at::kCUDA, 0);
  // CHECK: at::Device at_device = accelerator.device();
  c10::Device cpu(c10::kCPU);
  // CHECK: c10::Device cpu(c10::kCPU);
  return device.is_cuda() + copied.is_cuda() + (type == c10::kCUDA) + at_device.is_cuda() + cpu.is_cuda();
}
