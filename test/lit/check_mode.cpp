// --check reports what a rewrite would change, as clang-tidy does (location, source line,
// caret, fix-it, a note with the reason), writes nothing and exits 1; on migrated code it
// reports nothing and exits 0.
// RUN: rm -rf %t && mkdir -p %t && cp %s %t/train.cpp
// RUN: %accel-migrate --check %t/train.cpp -- %stub-flags > %t/out 2> %t/err; test $? -eq 1
// RUN: FileCheck %s < %t/out
// RUN: FileCheck %s --check-prefix=SUMMARY < %t/err
// RUN: diff %s %t/train.cpp
// RUN: %accel-migrate %t/train.cpp -o %t/migrated.cpp -- %stub-flags
// RUN: %accel-migrate --check %t/migrated.cpp -- %stub-flags > %t/out2 2> %t/err2
// RUN: count 0 < %t/out2
// RUN: FileCheck %s --check-prefix=CLEAN < %t/err2
// A file that does not compile cannot be checked: exit 3, nothing reported as findings.
// RUN: echo 'int main() { return undefined_name; }' > %t/broken.cpp
// RUN: %accel-migrate --check %t/broken.cpp -- %stub-flags 2> %t/err3; test $? -eq 3
// RUN: FileCheck %s --check-prefix=BROKEN < %t/err3
#include <torch/torch.h>

int main() {
  torch::Device device(torch::kCUDA);
  torch::nn::Linear model(4, 2);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  model->to(device);
  auto loss = model->forward(torch::randn({8, 4}).to(device)).sum();
  loss.backward();
  optimizer.step();
  return 0;
}
// CHECK: train.cpp:{{[0-9]+}}:1: warning: include <accelerate/accelerate.h> [accelerate-include]
// CHECK: train.cpp:{{[0-9]+}}:12: warning: declare the Accelerator at the start of main [accelerate-accelerator]
// CHECK: train.cpp:{{[0-9]+}}:12: note: one accelerate::Accelerator per process
// CHECK: train.cpp:{{[0-9]+}}:17: warning: device selection -> accelerator.device() [accelerate-device]
// CHECK-NEXT: {{^( *[0-9]* \|)?}}  torch::Device device(torch::kCUDA);
// CHECK-NEXT: {{^( *[0-9]* \|)?}}                ^      ~~~~~~~~~~~~
// CHECK-NEXT: {{^( *[0-9]* \|)?}}                       accelerator.device()
// CHECK: train.cpp:{{[0-9]+}}:3: warning: accelerator.prepare(models, optimizers, schedulers) [accelerate-prepare]
// CHECK: train.cpp:{{[0-9]+}}:3: warning: remove placement that prepare makes redundant [accelerate-placement]
// CHECK: train.cpp:{{[0-9]+}}:3: warning: loss.backward() -> accelerator.backward(loss) [accelerate-backward]
// CHECK-NEXT: {{^( *[0-9]* \|)?}}  loss.backward();
// CHECK-NEXT: {{^( *[0-9]* \|)?}}  ^   ~~~~~~~~~~
// CHECK-NEXT: {{^( *[0-9]* \|)?}}  accelerator.backward(
// CHECK-NEXT: train.cpp:{{[0-9]+}}:3: note: accelerator.backward(loss) applies loss scaling
// CHECK-NOT: warning:
// SUMMARY: train.cpp: {{[0-9]+}} findings
// SUMMARY: accel-migrate: {{[0-9]+}} findings in 1 of 1 files; run without --check to apply them
// CLEAN: migrated.cpp: 0 findings
// CLEAN: accel-migrate: 0 findings in 0 of 1 files
// BROKEN: error: use of undeclared identifier 'undefined_name'
// BROKEN: not migrated: {{.*}}broken.cpp
