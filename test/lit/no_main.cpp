// A file without main (a library of helpers) reaches the Accelerator through current() and
// declares none.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags
// RUN: %strip %t.cpp | FileCheck %s
// RUN: %accel-migrate %t.cpp -o %t2.cpp -- %stub-flags
// RUN: diff %t.cpp %t2.cpp
#include <torch/torch.h>

// CHECK-NOT: accelerate::Accelerator accelerator;
void train_step(torch::Tensor loss, torch::optim::Optimizer& opt) {
  opt.zero_grad();
  loss.backward();
  // CHECK: accelerate::Accelerator::current().backward(loss);
  opt.step();
}
