// Training data from a hand-written iterator: the rest is migrated, the loop is warned.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags 2> %t.err
// RUN: %strip %t.cpp | FileCheck %s
// RUN: FileCheck %s --check-prefix=DIAG < %t.err
// (%accel-migrate also migrates its output again: it must re-parse and be a fixed
// point; see Inputs/fixpoint.sh.)
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
  // CHECK: accelerator.backward(loss);
  return 0;
}
// DIAG: handwritten_loader.cpp:16:3: warning: this training loop {{.*}} [accelerate-unprepared-loader]
