// Stands for LibTorch's own inline API reached with -I (not as a system header): its calls
// to dropout are not the program's (per_sample_randomness_header.cpp).
#pragma once
#include <torch/torch.h>

inline torch::Tensor libtorch_like_dropout(torch::Tensor x) {
  return torch::nn::functional::dropout(x);
}
