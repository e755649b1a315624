// NOLINT(accelerate-<id>) and NOLINTNEXTLINE suppress a finding of the accelerate-tidy
// checks and of accel-migrate --check alike; another check's NOLINT does not.
// --checks='-*,accelerate-backward' reports that rule only, the same findings as
// accel-migrate --check under that id.
// REQUIRES: tidy-module
// RUN: rm -rf %t && mkdir -p %t
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-*' %s -- %stub-flags > %t/tidy.out 2> /dev/null
// RUN: not %accel-migrate --check %s -- %stub-flags > %t/check.out 2> /dev/null
// RUN: FileCheck %s < %t/tidy.out
// RUN: FileCheck %s < %t/check.out
// RUN: grep 'warning:' %t/tidy.out > %t/tidy.w
// RUN: grep 'warning:' %t/check.out > %t/check.w
// RUN: diff %t/check.w %t/tidy.w
//
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-backward' %s -- %stub-flags > %t/one.out 2> /dev/null
// RUN: FileCheck %s --check-prefix=ONE < %t/one.out
// RUN: grep 'warning:' %t/one.out > %t/one.w
// RUN: grep '\[accelerate-backward\]' %t/check.w > %t/check.backward
// RUN: diff %t/check.backward %t/one.w
// With one check enabled, --fix applies that rule's fixes only: the call is rewritten but
// the Accelerator it names is not declared (docs/clang-tidy.md: enable all of them).
// RUN: cp %s %t/one.cpp
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-backward' --fix %t/one.cpp -- %stub-flags > /dev/null 2>&1
// RUN: grep -v '// ONEFIX' %t/one.cpp | FileCheck %s --check-prefix=ONEFIX
#include <torch/torch.h>

int main() {
  torch::nn::Linear model(4, 2);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto a = model->forward(torch::randn({8, 4})).sum();
  auto b = model->forward(torch::randn({8, 4})).sum();
  auto c = model->forward(torch::randn({8, 4})).sum();
  auto d = model->forward(torch::randn({8, 4})).sum();
  a.backward();  // NOLINT(accelerate-backward)
  // NOLINTNEXTLINE(accelerate-backward)
  b.backward();
  c.backward();  // NOLINT(bugprone-use-after-move)
  d.backward();  // NOLINT(accelerate-*)
  optimizer.step();
  return 0;
}
// CHECK-NOT: :34:{{.*}}[accelerate-backward]
// CHECK-NOT: :36:{{.*}}[accelerate-backward]
// CHECK: tidy_nolint.cpp:37:3: warning: loss.backward() -> accelerator.backward(loss) [accelerate-backward]
// CHECK-NOT: [accelerate-backward]
// ONE: tidy_nolint.cpp:37:3: warning: loss.backward() -> accelerator.backward(loss) [accelerate-backward]
// ONE-NOT: warning:
// ONEFIX-NOT: accelerate::Accelerator accelerator;
// ONEFIX: {{^}}  accelerator.backward(c, accelerate::LossReduction::Sum);  // NOLINT(bugprone-use-after-move)
// ONEFIX-NOT: accelerate::Accelerator accelerator;
