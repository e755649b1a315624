// NOLINT(accelerate-<id>) on a line, or NOLINTNEXTLINE on the line before, keeps that
// rule away from the line in rewrites and in --check (as clang-tidy does with its own
// checks); other ids and other tools' NOLINTs do not.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags
// RUN: %strip %t.cpp | FileCheck %s
// RUN: %accel-migrate --check %s -- %stub-flags > %t.out; test $? -eq 1
// The suppressed lines stay as they are on a second run (and no second Accelerator).
// (%accel-migrate also migrates its output again: it must re-parse and be a fixed
// point; see Inputs/fixpoint.sh.)
// RUN: FileCheck %s --check-prefix=DIAG < %t.out
#include <torch/torch.h>

int main() {
  torch::nn::Linear model(4, 2);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto a = model->forward(torch::randn({8, 4})).sum();
  auto b = model->forward(torch::randn({8, 4})).sum();
  auto c = model->forward(torch::randn({8, 4})).sum();
  auto d = model->forward(torch::randn({8, 4})).sum();
  auto e = model->forward(torch::randn({8, 4})).sum();
  a.backward();  // NOLINT(accelerate-backward)
  // CHECK: a.backward();  // NOLINT(accelerate-backward)
  // NOLINTNEXTLINE(accelerate-*)
  b.backward();
  // CHECK: {{^}}  b.backward();
  c.backward();  // NOLINT(bugprone-use-after-move)
  // CHECK: accelerator.backward(c, accelerate::LossReduction::Sum);  // NOLINT(bugprone-use-after-move)
  d.backward();  // NOLINT
  // CHECK: {{^}}  d.backward();  // NOLINT
  e.backward();  // NOLINT(readability-x, accelerate-backward)
  // CHECK: {{^}}  e.backward();
  optimizer.step();
  return 0;
}
// DIAG-NOT: :18:{{.*}}[accelerate-backward]
// DIAG: nolint.cpp:{{[0-9]+}}:3: warning: loss.backward() -> accelerator.backward(loss) [accelerate-backward]
// DIAG-NOT: [accelerate-backward]
