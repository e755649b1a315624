// A classifier whose training lives in the program's own header
// (accelerator_header_trains.cpp); main() only calls fit(). Line numbers are checked there.
#pragma once
#include <torch/torch.h>

struct Classifier {
  torch::nn::Linear model{4, 2};
  void fit(torch::Tensor x, torch::Tensor y) {
    torch::optim::SGD opt(model->parameters(), 0.1);
    auto loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    opt.step();
  }
};
