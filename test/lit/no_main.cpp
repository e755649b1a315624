// A file without main (a library of helpers) reaches the Accelerator through current() and
// declares none; the tool says who must construct it.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
// DIAG: note: {{.*}}no_main.cpp: defines no main(): its migrated code reaches the Accelerator through accelerate::Accelerator::current(), which throws unless the program's main() constructed one first: make `accelerate::Accelerator accelerator;` the first statement of main() in the file that defines it (project mode, -p BUILD --in-root DIR, adds it there)
#include <torch/torch.h>

// CHECK-NOT: accelerate::Accelerator accelerator;
void train_step(torch::Tensor loss, torch::optim::Optimizer& opt) {
  opt.zero_grad();
  loss.backward();
  // CHECK: accelerate::Accelerator::current().backward(loss);
  opt.step();
}
