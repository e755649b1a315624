// The runtime header is included once, after the last LibTorch include.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags
// RUN: %strip %t.cpp | FileCheck %s
// (%accel-migrate also migrates its output again: it must re-parse and be a fixed
// point; see Inputs/fixpoint.sh.)
// RUN: %strip %t.cpp | grep -c "accelerate/accelerate.h" | FileCheck %s --check-prefix=COUNT
#include <vector>
#include <torch/torch.h>
#include <string>
// CHECK: #include <vector>
// CHECK-NEXT: #include <torch/torch.h>
// CHECK-NEXT: #include <accelerate/accelerate.h>
// CHECK-NEXT: #include <string>
// COUNT: 1

int main() {
  torch::Tensor loss;
  loss.backward();
}
