// Fits a cubic with a linear layer over (x, x^2, x^3) features.
#include <torch/torch.h>

#include <iostream>

struct PolyImpl : torch::nn::Module {
  PolyImpl() : fc(register_module("fc", torch::nn::Linear(3, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Poly);

#include "fit.h"

struct Cubic : torch::data::datasets::Dataset<Cubic> {
  explicit Cubic(int64_t n) {
    auto gen = at::detail::createCPUGenerator(42);
    auto x = torch::rand({n, 1}, gen) * 2 - 1;
    features = torch::cat({x, x.pow(2), x.pow(3)}, 1);
    targets = 0.5 * x - 1.5 * x.pow(2) + 2 * x.pow(3) + 0.3 + 0.02 * torch::randn({n, 1}, gen);
  }
  torch::data::Example<> get(size_t i) override { return {features[i], targets[i]}; }
  torch::optional<size_t> size() const override { return features.size(0); }
  torch::Tensor features, targets;
};

int main() {
  torch::Device device = torch::kCPU;
  if (torch::cuda::is_available())
    device = torch::kCUDA;
  torch::manual_seed(2);
  Poly model;
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Cubic(512).map(torch::data::transforms::Stack<>()), 64);
  double last_loss = fit(model, optimizer, *loader, 12, device);
  double weight_sum = model->fc->weight.sum().item<double>() + model->fc->bias.item<double>();
  std::cout << "last batch loss " << last_loss << std::endl;
  std::cout << "final: weight_sum=" << weight_sum << std::endl;
}
