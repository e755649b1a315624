// Devices held as globals, statics, struct members and class members.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags 2> %t.err
// RUN: %strip %t.cpp | FileCheck %s
// RUN: FileCheck %s --check-prefix=DIAG < %t.err
// (%accel-migrate also migrates its output again: it must re-parse and be a fixed
// point; see Inputs/fixpoint.sh.)
#include <torch/torch.h>

torch::Device g_device(torch::kCUDA);
// Initialised before main, when no Accelerator exists: CPU first, set at the start of main.
// CHECK: torch::Device g_device(torch::kCPU);
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
  Config c;
  Trainer t;
  return lazy().is_cuda();
}
// DIAG: device_storage.cpp:12:1: warning: a constant device at namespace scope
