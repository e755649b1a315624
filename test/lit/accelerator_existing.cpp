// Code that already declares an Accelerator in main (partly migrated by hand, or by an
// earlier run) gets the remaining rewrites and keeps its one Accelerator, under its name.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags
// RUN: %strip %t.cpp | FileCheck %s
// RUN: %strip %t.cpp | grep -c "accelerate::Accelerator " | FileCheck %s --check-prefix=ONE
#include <torch/torch.h>
#include <accelerate/accelerate.h>

int main() {
  accelerate::Accelerator acc;
  torch::nn::Linear model(4, 2);
  auto loss = model->forward(torch::randn({8, 4})).sum();
  loss.backward();
  return 0;
}
// CHECK: accelerate::Accelerator acc;
// CHECK: acc.backward(loss);
// ONE: {{^}}1{{$}}
