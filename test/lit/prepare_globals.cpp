// Globals that a helper builds (free functions reaching globals): prepared in main right
// after the call that builds them, so the pointers are set by then.
// RUN: %check-rule
// RUN: FileCheck %s --check-prefix=DIAG --allow-empty < %t.err
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

torch::nn::Linear model{nullptr};
std::unique_ptr<torch::optim::SGD> optimizer;

void build() {
  model = torch::nn::Linear(4, 1);
  optimizer = std::make_unique<torch::optim::SGD>(model->parameters(), 0.1);
}

void setup() { build(); }

void step() {
  optimizer->zero_grad();
  auto loss = model->forward(torch::ones({2, 4})).sum();
  loss.backward();
  optimizer->step();
}

int main() {
  // CHECK: int main() {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  // CHECK-NEXT: setup();
  // CHECK-NEXT: accelerator.prepare(model, optimizer);
  // CHECK-NEXT: for (int i = 0; i < 3; ++i)
  setup();
  for (int i = 0; i < 3; ++i)
    step();
  return 0;
}
// DIAG-NOT: created later than the tool can see
