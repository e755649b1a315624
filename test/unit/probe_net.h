#pragma once
// A two-layer net that records the dtype of its hidden activation, which is what autocast
// changes: shared by the precision tests (precision_test.cpp, cuda_test.cpp).
#include <torch/torch.h>

#include <cstdint>

namespace precision_test {

struct ProbeNetImpl : torch::nn::Module {
  ProbeNetImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::relu(fc1(x));
    hidden_dtype = h.scalar_type();
    return fc2(h);
  }
  torch::nn::Linear fc1, fc2;
  torch::ScalarType hidden_dtype = torch::kDouble;
};
TORCH_MODULE(ProbeNet);

}  // namespace precision_test
