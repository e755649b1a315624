// Training data from a hand-written iterator: the rest is migrated, the loop is warned.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct Batches {
  bool next(torch::Tensor& x);
};

int main() {
  Batches it;
  torch::Tensor x;
  for (int epoch = 0; epoch < 2; ++epoch) {
    while (it.next(x)) {
      auto loss = x.sum();
      loss.backward();
    }
  }
  // CHECK: // accel-migrate(accelerate-unprepared-loader): this training loop does not iterate
  // CHECK-NEXT: for (int epoch = 0; epoch < 2; ++epoch) {
  // CHECK: accelerator.backward(loss, accelerate::LossReduction::Sum);
  return 0;
}
// DIAG: handwritten_loader.cpp:[[@LINE-11]]:3: warning: this training loop {{.*}} [accelerate-unprepared-loader]
