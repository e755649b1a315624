// Devices held as globals, statics, struct members and class members.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

torch::Device g_device(torch::kCUDA);
// Initialised before main, when no Accelerator exists: CPU first, set at the start of main.
// CHECK: torch::Device g_device(torch::kCPU);
torch::DeviceType g_type = torch::kCUDA;
// A device type is set to the device's type (a Device does not convert to one).
// CHECK: torch::DeviceType g_type = torch::kCPU;
const torch::Device kFixed(torch::kCUDA);
// CHECK: // accel-migrate(accelerate-custom-device): a constant device
// CHECK-NEXT: const torch::Device kFixed(torch::kCUDA);

struct Config {
  torch::Device device{torch::kCUDA};
  // CHECK: torch::Device device{accelerate::Accelerator::current().device()};
};

class Trainer {
 public:
  Trainer() : device_(torch::kCUDA, 0) {}
  // CHECK: Trainer() : device_(accelerate::Accelerator::current().device()) {}
 private:
  torch::Device device_;
};

torch::Device lazy() {
  static torch::Device device(torch::kCUDA);
  // CHECK: static torch::Device device(accelerate::Accelerator::current().device());
  return device;
}

int main() {
  // CHECK: int main() {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  // CHECK-NEXT: g_device = accelerator.device();
  // CHECK-NEXT: g_type = accelerator.device().type();
  Config c;
  Trainer t;
  return lazy().is_cuda() + (g_type == torch::kCUDA);
}
// DIAG: device_storage.cpp:[[@LINE-32]]:1: warning: a constant device at namespace scope
