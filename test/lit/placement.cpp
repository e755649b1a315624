// Batches from a prepared loader arrive on the device: their placement is removed. Other
// tensors keep theirs; hard-coded .cuda() becomes .to(accelerator device).
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

void evaluate(Net& model, torch::Device device) {
  model->to(device);
  // Not prepared here (a parameter): kept, harmless on the accelerator's device.
  // CHECK: model->to(device);
}

int main() {
  torch::Device device(torch::kCUDA);
  Net model;
  model->to(device);
  // CHECK-NOT: model->to(device);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("d"), 64);
  for (auto& batch : *loader) {
    auto data = batch.data.to(device), targets = batch.target.cuda();
    // CHECK: auto data = batch.data, targets = batch.target;
    batch.data = batch.data.to(device);
    // CHECK-NOT: batch.data = batch.data
    auto noise = torch::randn({2}).to(device);
    // CHECK: auto noise = torch::randn({2}).to(device);
    auto extra = torch::randn({2}).cuda();
    // CHECK: auto extra = torch::randn({2}).to(accelerator.device());
    auto as_double = batch.data.to(torch::kDouble);
    // CHECK: auto as_double = batch.data.to(torch::kDouble);
    auto out = model->forward(data);
  }
  evaluate(model, device);
  return 0;
}
