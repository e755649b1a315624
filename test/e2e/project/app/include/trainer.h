// Fits a small MLP to a noisy plane. The model, optimizer, loaders and device live in
// Trainer; both sources include this header.
#pragma once

#include <torch/torch.h>

#include <iostream>
#include <memory>

struct Config {
  int64_t epochs = 4;
  int64_t batch_size = 32;
  int64_t train_size = 512;
  int64_t test_size = 256;
  double lr = 0.05;
  uint64_t seed = 11;
};

// y = 2 x0 - 3 x1 + 1 + noise
class PlaneData : public torch::data::datasets::Dataset<PlaneData> {
 public:
  explicit PlaneData(int64_t n) {
    x_ = torch::randn({n, 2});
    y_ = (x_.select(1, 0) * 2 - x_.select(1, 1) * 3 + 1 + 0.1 * torch::randn({n})).unsqueeze(1);
  }
  torch::data::Example<> get(size_t i) override { return {x_[i], y_[i]}; }
  torch::optional<size_t> size() const override { return x_.size(0); }

 private:
  torch::Tensor x_, y_;
};

using PlaneBatches =
    torch::data::datasets::MapDataset<PlaneData, torch::data::transforms::Stack<>>;
using PlaneLoader =
    torch::data::StatelessDataLoader<PlaneBatches, torch::data::samplers::SequentialSampler>;

class Trainer {
 public:
  explicit Trainer(const Config& config)
      : config_(config),
        device_(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU),
        model_(torch::nn::Linear(2, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1)) {
    model_->to(device_);
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(),
                                                     torch::optim::SGDOptions(config.lr));
    train_loader_ = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        PlaneData(config.train_size).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(config.batch_size));
    test_loader_ = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        PlaneData(config.test_size).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(64));
  }

  void fit() {
    for (int64_t epoch = 1; epoch <= config_.epochs; ++epoch) {
      model_->train();
      for (auto& batch : *train_loader_) {
        auto inputs = batch.data.to(device_);
        auto targets = batch.target.to(device_);
        optimizer_->zero_grad();
        auto loss = torch::mse_loss(model_->forward(inputs), targets);
        loss.backward();
        optimizer_->step();
      }
      std::cout << "epoch " << epoch << " done" << std::endl;
    }
  }

  // Mean squared error over the whole test set.
  double evaluate() {
    torch::NoGradGuard no_grad;
    model_->eval();
    double sum = 0;
    for (auto& batch : *test_loader_) {
      auto inputs = batch.data.to(device_);
      auto targets = batch.target.to(device_);
      auto outputs = model_->forward(inputs);
      sum += torch::mse_loss(outputs, targets, at::Reduction::Sum).item<double>();
    }
    return sum / config_.test_size;
  }

  // Sum of every parameter: equal on every process when the replicas stay in sync.
  double parameter_sum() {
    torch::NoGradGuard no_grad;
    double s = 0;
    for (const auto& p : model_->parameters()) s += p.sum().item<double>();
    return s;
  }

 private:
  Config config_;
  torch::Device device_;
  torch::nn::Sequential model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<PlaneLoader> train_loader_;
  std::unique_ptr<PlaneLoader> test_loader_;
};

// report.cpp
void print_final(double test_mse, double parameter_sum);
