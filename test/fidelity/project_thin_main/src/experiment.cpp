#include "experiment.h"

#include <torch/torch.h>

#include <iostream>

namespace {

// Two interleaved spirals, labelled by arm.
class Spirals : public torch::data::datasets::Dataset<Spirals> {
 public:
  Spirals(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    auto t = torch::rand({n}, gen) * 3.0 + 0.5;
    labels_ = torch::randint(0, 2, {n}, gen, torch::kLong);
    auto sign = labels_.to(torch::kFloat) * 2 - 1;
    points_ = torch::stack({sign * t * torch::cos(t), sign * t * torch::sin(t)}, 1) +
              0.05 * torch::randn({n, 2}, gen);
  }
  torch::data::Example<> get(size_t i) override { return {points_[i], labels_[i]}; }
  torch::optional<size_t> size() const override { return points_.size(0); }
  torch::Tensor points_, labels_;
};

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : hidden(register_module("hidden", torch::nn::Linear(2, 24))),
        out(register_module("out", torch::nn::Linear(24, 2))) {}
  torch::Tensor forward(torch::Tensor x) { return out(torch::relu(hidden(x))); }
  torch::nn::Linear hidden, out;
};
TORCH_MODULE(Classifier);

}  // namespace

int run_experiment(const ExperimentConfig& config) {
  torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  torch::manual_seed(config.seed);
  Classifier net;
  net->to(device);
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(config.learning_rate));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Spirals(960, config.seed).map(torch::data::transforms::Stack<>()), config.batch_size);

  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    for (auto& batch : *loader) {
      auto x = batch.data.to(device), y = batch.target.to(device);
      sgd.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      sgd.step();
    }
    std::cout << "epoch " << epoch + 1 << " done" << std::endl;
  }

  torch::NoGradGuard no_grad;
  Spirals held_out(400, config.seed + 1);
  auto logits = net->forward(held_out.points_.to(device));
  double accuracy = logits.argmax(1).eq(held_out.labels_.to(device)).to(torch::kDouble).mean().item<double>();
  double weight_sum = 0;
  for (const auto& p : net->parameters())
    weight_sum += p.sum().item<double>();
  std::cout << "final: accuracy=" << accuracy << " weight_sum=" << weight_sum << std::endl;
  return 0;
}
