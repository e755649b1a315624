// Models, optimizers and schedulers are prepared once, after construction and before the
// loop; loss modules are not; placement that prepare makes redundant is removed.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(2, 2))) {}
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::nn::Linear fc;
  // A module's own members are submodules: never prepared on their own.
  // CHECK-NOT: prepare(fc)
};
TORCH_MODULE(Net);

struct Plain : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};

int main() {
  torch::Device device(torch::kCUDA);
  Net model;
  model->to(device);
  auto shared = std::make_shared<Plain>();
  shared->to(device);
  Plain by_value;
  by_value.to(device);
  Plain* raw = new Plain();
  (*raw).to(device);
  torch::nn::Sequential seq(torch::nn::Linear(2, 2), torch::nn::ReLU());
  seq->to(device);
  torch::nn::CrossEntropyLoss criterion;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  auto adam = std::make_unique<torch::optim::Adam>(seq->parameters());
  torch::optim::StepLR scheduler(optimizer, 10);
  // CHECK: Net model;
  // CHECK-NEXT: auto shared = std::make_shared<Plain>();
  // CHECK-NEXT: Plain by_value;
  // CHECK-NEXT: Plain* raw = new Plain();
  // CHECK-NEXT: torch::nn::Sequential seq(torch::nn::Linear(2, 2), torch::nn::ReLU());
  // CHECK-NEXT: torch::nn::CrossEntropyLoss criterion;
  // CHECK-NEXT: torch::optim::SGD optimizer(
  // CHECK-NEXT: auto adam = std::make_unique<torch::optim::Adam>(seq->parameters());
  // CHECK-NEXT: torch::optim::StepLR scheduler(optimizer, 10);
  // CHECK-NEXT: accelerator.prepare(model, shared, by_value, raw, seq, optimizer, adam, scheduler);
  // CHECK-NEXT: for (int epoch
  for (int epoch = 0; epoch < 2; ++epoch) {
    model->train();
    optimizer.zero_grad();
    optimizer.step();
    scheduler.step();
  }
  model->to(torch::kDouble);
  // CHECK: model->to(torch::kDouble);
  model->to(device, torch::kDouble);
  // CHECK: model->to(torch::kDouble);
  if (true) model->to(device);
  // CHECK: if (true) {}
  return 0;
}
