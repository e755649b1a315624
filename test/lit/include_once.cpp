// The runtime header is included once, after the last LibTorch include.
// RUN: %check-rule
// RUN: %strip %t.cpp | grep -c "accelerate/accelerate.h" | FileCheck %s --check-prefix=COUNT
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
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
