// A model in the program's own header (per_sample_randomness_header.cpp): its forward()
// draws a dropout mask per sample. Line numbers are checked there: keep them.
#pragma once
#include <torch/torch.h>

struct DropNetImpl : torch::nn::Module {
  DropNetImpl() : fc(register_module("fc", torch::nn::Linear(4, 2))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::nn::functional::dropout(x);
    return fc(x);
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(DropNet);
