#pragma once
// The data set of verify_probe.cpp and of its traced original, verify_original.cpp: rows of
// two tensors. LibTorch only, so the traced original still links no libaccelerate.
#include <torch/torch.h>

#include <utility>

namespace verify_test {

struct Rows : torch::data::datasets::Dataset<Rows> {
  Rows(torch::Tensor x, torch::Tensor y) : x(std::move(x)), y(std::move(y)) {}
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  c10::optional<size_t> size() const override { return static_cast<size_t>(x.size(0)); }
  torch::Tensor x, y;
};

}  // namespace verify_test
