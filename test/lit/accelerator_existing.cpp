// Code that already declares an Accelerator in main (partly migrated by hand, or by an
// earlier run) gets the remaining rewrites and keeps its one Accelerator, under its name.
// RUN: %check-rule
// RUN: %strip %t.cpp | grep -c "accelerate::Accelerator " | FileCheck %s --check-prefix=ONE
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
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
// CHECK: acc.backward(loss, accelerate::LossReduction::Sum);
// ONE: {{^}}1{{$}}
