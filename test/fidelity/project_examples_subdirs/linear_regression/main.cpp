// y = 2x - 1 from noisy samples with a single linear layer.
#include <torch/torch.h>

#include <iostream>

struct Samples : torch::data::datasets::Dataset<Samples> {
  Samples() {
    auto gen = at::detail::createCPUGenerator(21);
    x = torch::rand({320, 1}, gen) * 4 - 2;
    y = 2 * x - 1 + 0.1 * torch::randn({320, 1}, gen);
  }
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
  torch::Tensor x, y;
};

int main() {
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  torch::manual_seed(0);
  torch::nn::Linear line(1, 1);
  line->to(device);
  torch::optim::SGD optimizer(line->parameters(), 0.05);
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Samples().map(torch::data::transforms::Stack<>()), 32);
  for (int epoch = 0; epoch < 20; ++epoch)
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = torch::mse_loss(line->forward(batch.data.to(device)), batch.target.to(device));
      loss.backward();
      optimizer.step();
    }
  double w = line->weight.item<double>(), b = line->bias.item<double>();
  std::cout << "final: w=" << w << " b=" << b << std::endl;
}
