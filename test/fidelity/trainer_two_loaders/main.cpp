// Personal-project style: a Trainer class owns the model, the optimizer and both data
// loaders; the loader members are declared together with decltype of make_data_loader.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

namespace {

struct Blobs : torch::data::datasets::Dataset<Blobs> {
  Blobs(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    labels_ = torch::randint(0, 3, {n}, gen, torch::kLong);
    auto centers = torch::tensor({{0.0, 1.5}, {1.3, -0.8}, {-1.3, -0.8}});
    points_ = centers.index_select(0, labels_) + 0.6 * torch::randn({n, 2}, gen);
  }
  torch::data::Example<> get(size_t i) override { return {points_[i], labels_[i]}; }
  torch::optional<size_t> size() const override { return points_.size(0); }

 private:
  torch::Tensor points_, labels_;
};

using Batches = torch::data::datasets::MapDataset<Blobs, torch::data::transforms::Stack<>>;

class Trainer {
 public:
  explicit Trainer(torch::Device device)
      : device_(device),
        model_(torch::nn::Linear(2, 16), torch::nn::ReLU(), torch::nn::Linear(16, 3)),
        optimizer_(model_->parameters(), torch::optim::SGDOptions(0.1)) {
    model_->to(device_);
    train_loader_ = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        Blobs(1024, 1).map(torch::data::transforms::Stack<>()), 32);
    eval_loader_ = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        Blobs(512, 2).map(torch::data::transforms::Stack<>()), 32);
  }

  void fit(int epochs) {
    for (int epoch = 0; epoch < epochs; ++epoch) {
      model_->train();
      for (auto& batch : *train_loader_) {
        auto x = batch.data.to(device_), y = batch.target.to(device_);
        optimizer_.zero_grad();
        auto loss = torch::nn::functional::cross_entropy(model_->forward(x), y);
        loss.backward();
        optimizer_.step();
      }
    }
  }

  double accuracy() {
    torch::NoGradGuard no_grad;
    model_->eval();
    int64_t correct = 0;
    for (auto& batch : *eval_loader_) {
      auto x = batch.data.to(device_), y = batch.target.to(device_);
      correct += model_->forward(x).argmax(1).eq(y).sum().item<int64_t>();
    }
    return static_cast<double>(correct) / 512;
  }

  double weight_sum() {
    double s = 0;
    for (const auto& p : model_->parameters()) s += p.sum().item<double>();
    return s;
  }

 private:
  torch::Device device_;
  torch::nn::Sequential model_;
  torch::optim::SGD optimizer_;
  decltype(torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::declval<Batches>(), 32)) train_loader_, eval_loader_;
};

}  // namespace

int main() {
  torch::manual_seed(0);
  Trainer trainer(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  trainer.fit(5);
  double accuracy = trainer.accuracy(), weights = trainer.weight_sum();
  std::cout << std::setprecision(8) << "final: accuracy=" << accuracy << " weight_sum=" << weights
            << '\n';
}
