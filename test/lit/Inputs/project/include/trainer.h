#pragma once
// Shared by train.cpp and eval.cpp: migrated once.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

class Trainer {
 public:
  Trainer() : device_(torch::kCUDA) {
    model_->to(device_);
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), 0.1);
  }
  void step(torch::Tensor x) {
    optimizer_->zero_grad();
    auto loss = model_->forward(x.to(device_)).sum();
    loss.backward();
    optimizer_->step();
  }
  Net& model() { return model_; }

 private:
  torch::Device device_;
  Net model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
};
