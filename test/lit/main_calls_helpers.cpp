// All the training code is in helpers (they reach the Accelerator through current()) and
// main only calls them: main still constructs the Accelerator, first, or current() would
// throw at run time.
// RUN: %check-rule
// RUN: FileCheck %s --check-prefix=ERR --allow-empty < %t.err
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

void step(torch::Tensor loss) {
  loss.backward();
  // CHECK: accelerate::Accelerator::current().backward(loss);
}

int main(int argc, char** argv) {
  // CHECK: int main(int argc, char** argv) {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  // CHECK-NEXT: auto x = torch::ones({2});
  auto x = torch::ones({2});
  step(x.sum());
  return 0;
}
// ERR-NOT: defines no main()
