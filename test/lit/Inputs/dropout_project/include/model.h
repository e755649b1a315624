// per_sample_randomness_project.test: a model header with a dropout call of its own.
#pragma once
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(4, 2))) {}
  torch::Tensor forward(torch::Tensor x) { return fc(torch::nn::functional::dropout(x)); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);
