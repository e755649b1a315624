// Device selection becomes the accelerator's device; CPU-only code, comparisons and
// parameters are left alone.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>
#include <iostream>

void helper(torch::Device device) {
  // CHECK: void helper(torch::Device device) {
  auto t = torch::ones({2}, torch::Device(torch::kCUDA, 0));
  // CHECK: auto t = torch::ones({2}, accelerate::Accelerator::current().device());
  auto u = t.to(torch::kCUDA);
  // CHECK: auto u = t.to(accelerate::Accelerator::current().device());
  auto v = t.to(device);
  // CHECK: auto v = t.to(device);
}

int main() {
  torch::Device device(torch::kCUDA);
  // CHECK: torch::Device device(accelerator.device());
  torch::DeviceType device_type = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  // CHECK: torch::DeviceType device_type = accelerator.device().type();
  torch::Device from_type(device_type);
  // CHECK: torch::Device from_type(accelerator.device());
  auto chosen = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  // CHECK: auto chosen = accelerator.device();
  torch::Device d = torch::kCPU;
  // CHECK: torch::Device d = accelerator.device();
  if (torch::cuda::is_available()) {
    std::cerr << "CUDA available" << std::endl;
    d = torch::Device(torch::kCUDA);
    // CHECK: d = accelerator.device();
  } else {
    d = torch::kCPU;
    // CHECK: d = accelerator.device();
  }
  torch::Device named("cuda:0");
  // CHECK: torch::Device named(accelerator.device());
  auto x = torch::randn({3}).to(torch::kCUDA);
  // CHECK: auto x = torch::randn({3}).to(accelerator.device());
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  // CHECK: auto opts = torch::TensorOptions().device(accelerator.device());

  // Negative cases.
  torch::Device cpu(torch::kCPU);
  // CHECK: torch::Device cpu(torch::kCPU);
  bool on_gpu = device.type() == torch::kCUDA;
  // CHECK: bool on_gpu = device.type() == torch::kCUDA;
  if (torch::cuda::is_available()) {
    // CHECK: if (torch::cuda::is_available()) {
  }
  int n = torch::cuda::device_count();
  // CHECK: // accel-migrate(accelerate-custom-device):
  // CHECK-NEXT: int n = torch::cuda::device_count();
  auto y = x.to(torch::Device(torch::kCUDA, n));
  // CHECK: // accel-migrate(accelerate-custom-device):
  // CHECK-NEXT: auto y = x.to(torch::Device(torch::kCUDA, n));
  helper(device);
  return 0;
}
// DIAG: device.cpp:[[@LINE-9]]:11: warning: {{.*}} [accelerate-custom-device]
// DIAG: device.cpp:[[@LINE-7]]:17: warning: a CUDA device with a computed index {{.*}} [accelerate-custom-device]
