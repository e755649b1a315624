#pragma once
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

class Trainer {
 public:
  Trainer() : device_(torch::kCUDA) {
    model_->to(device_);
    optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters());
  }
  void step(torch::Tensor x) {
    optimizer_->zero_grad();
    auto loss = model_->forward(x.to(device_)).sum();
    loss.backward();
    optimizer_->step();
  }

 private:
  torch::Device device_;
  Net model_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
};
