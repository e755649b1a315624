// A tutorial-style classifier with dropout between its layers: on 1 process the migrated
// program must draw the original's masks (the same numbers); on 2 processes each process
// draws masks for its half of the batch only, which the tool announces with a note.
#include <torch/torch.h>

#include <cstdio>

struct Blobs : torch::data::datasets::Dataset<Blobs> {
  Blobs() {
    auto gen = at::detail::createCPUGenerator(11);
    labels = torch::randint(0, 4, {512}, gen, torch::kLong);
    points = torch::one_hot(labels, 4).to(torch::kFloat).repeat({1, 2}) + 0.7 * torch::randn({512, 8}, gen);
  }
  torch::data::Example<> get(size_t i) override { return {points[i], labels[i]}; }
  torch::optional<size_t> size() const override { return points.size(0); }
  torch::Tensor points, labels;
};

int main() {
  torch::manual_seed(4);
  torch::nn::Sequential net(torch::nn::Linear(8, 32), torch::nn::ReLU(), torch::nn::Dropout(0.3),
                            torch::nn::Linear(32, 4));
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Blobs().map(torch::data::transforms::Stack<>()), 32);
  double weights = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    net->train();
    for (auto& batch : *loader) {
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(batch.data), batch.target);
      loss.backward();
      opt.step();
    }
  }
  for (const auto& p : net->parameters())
    weights += p.pow(2).sum().item<double>();
  std::printf("final: weights=%.10g\n", weights);
}
