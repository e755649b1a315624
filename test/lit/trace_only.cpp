// accel-migrate --trace-only: the ORIGINAL with the step trace's calls written in and nothing
// else (no Accelerator, no prepare, no guard): each backward's tensor through
// accelerate::trace::loss, each LibTorch optimizer step through accelerate::trace::after_step
// (the optimizer named, never evaluated twice), the include once; a second run changes
// nothing (%accel-migrate runs it).
// RUN: %accel-migrate --trace-only %s -o %t.cpp -- %stub-flags 2> %t.err
// RUN: %strip %t.cpp | FileCheck %s
// RUN: FileCheck %s --check-prefix=DIAG < %t.err
#include <torch/torch.h>

#include <iostream>
#include <memory>

// CHECK: #include <torch/torch.h>
// CHECK-NEXT: #include <accelerate/trace.h>

torch::optim::SGD& optimizer_of(torch::optim::SGD& s) { return s; }

// A training function templated on its loader: the loss's type is dependent, and its
// `.backward()` is traced as accelerate-backward takes it (a tensor's).
template <typename Loader>
void train(Loader& loader, torch::optim::Optimizer& optimizer) {
  for (auto& batch : loader) {
    auto loss = torch::mse_loss(batch.data, batch.target);
    loss.backward();
    optimizer.step();
  }
  // CHECK: accelerate::trace::loss(loss).backward();
  // CHECK-NEXT: accelerate::trace::after_step(optimizer.step(), optimizer);
}

int main() {
  torch::nn::Linear model(3, 1);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  auto adam = std::make_unique<torch::optim::Adam>(model->parameters());
  torch::optim::StepLR scheduler(sgd, 10);
  auto x = torch::randn({8, 3});
  for (int step = 0; step < 10; ++step) {
    sgd.zero_grad();
    auto loss = torch::mse_loss(model->forward(x), x);
    loss.backward();
    sgd.step();
    scheduler.step();
    // CHECK: accelerate::trace::loss(loss).backward();
    // CHECK-NEXT: accelerate::trace::after_step(sgd.step(), sgd);
    // CHECK-NEXT: scheduler.step();
    (loss + loss).backward();
    // CHECK: accelerate::trace::loss((loss + loss)).backward();
    if (step % 2 == 0)
      adam->step();
    // CHECK: if (step % 2 == 0)
    // CHECK-NEXT: accelerate::trace::after_step(adam->step(), *adam);
    optimizer_of(sgd).step();
    // CHECK: optimizer_of(sgd).step();
    std::cout << loss.item<float>() << "\n";
    // CHECK: std::cout << loss.item<float>() << "\n";
  }
  // CHECK-NOT: accelerate::Accelerator
  // CHECK-NOT: prepare
  return 0;
}
// DIAG: trace_only.cpp:[[@LINE-9]]:5: warning: this optimizer step is not traced: {{.*}} [accelerate-trace-only]
// DIAG: 7 rewrites (accelerate-trace-only 7), 1 warning
