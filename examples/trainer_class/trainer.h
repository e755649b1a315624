// A reusable trainer: the model, optimizer, loaders and device live in the class, and
// main only configures it. Classifies points of a synthetic 3-armed spiral.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace F = torch::nn::functional;

struct TrainerConfig {
  int64_t epochs = 6;
  int64_t batch_size = 32;
  int64_t train_size = 1536;
  int64_t test_size = 768;
  int64_t hidden = 64;
  double lr = 0.05;
  double max_grad_norm = 1.0;
  std::string optimizer = "sgd";  // or "adam"
  uint64_t seed = 3;
  std::string out_dir = "./out-trainer_class";
};

// Points on three noisy spiral arms; the arm is the class.
class SpiralDataset : public torch::data::datasets::Dataset<SpiralDataset> {
 public:
  explicit SpiralDataset(int64_t n) {
    auto labels = torch::arange(n) % 3;
    auto t = torch::rand({n}) * 3.0 + 0.25;
    auto angle = t * 1.6 + labels.to(torch::kFloat) * (2.0 * M_PI / 3.0);
    points_ = torch::stack({t * torch::cos(angle), t * torch::sin(angle)}, 1) +
              0.3 * torch::randn({n, 2});
    labels_ = labels;
  }
  torch::data::Example<> get(size_t index) override {
    return {points_[index], labels_[index]};
  }
  torch::optional<size_t> size() const override { return points_.size(0); }

 private:
  torch::Tensor points_, labels_;
};

using SpiralBatches = torch::data::datasets::MapDataset<
    SpiralDataset, torch::data::transforms::Stack<torch::data::Example<>>>;
using TrainLoader =
    torch::data::StatelessDataLoader<SpiralBatches, torch::data::samplers::RandomSampler>;
using TestLoader =
    torch::data::StatelessDataLoader<SpiralBatches, torch::data::samplers::SequentialSampler>;

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
};

class Trainer {
 public:
  explicit Trainer(const TrainerConfig& config)
      : config_(config),
        device_(torch::kCPU),
        model_(torch::nn::Linear(2, config.hidden), torch::nn::ReLU(),
               torch::nn::Linear(config.hidden, config.hidden), torch::nn::ReLU(),
               torch::nn::Linear(config.hidden, 3)) {
    const bool cuda_available = torch::cuda::is_available();
    device_ = torch::Device(cuda_available ? torch::kCUDA : torch::kCPU);
    model_->to(device_);

    if (config.optimizer == "sgd") {
      optimizer_ = std::make_unique<torch::optim::SGD>(
          model_->parameters(), torch::optim::SGDOptions(config.lr).momentum(0.9));
    } else if (config.optimizer == "adam") {
      optimizer_ = std::make_unique<torch::optim::Adam>(
          model_->parameters(), torch::optim::AdamOptions(config.lr));
    } else {
      throw std::invalid_argument("unknown optimizer '" + config.optimizer +
                                  "' (expected sgd or adam)");
    }

    train_size_ = config.train_size;
    test_size_ = config.test_size;
    train_loader_ = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        SpiralDataset(config.train_size).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(config.batch_size));
    test_loader_ = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        SpiralDataset(config.test_size).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(128));
  }

  // Returns the mean of the per-batch training losses.
  double train_epoch() {
    model_->train();
    double total = 0;
    int64_t batches = 0;
    for (auto& batch : *train_loader_) {
      auto inputs = batch.data.to(device_);
      auto labels = batch.target.to(device_);
      optimizer_->zero_grad();
      auto loss = F::cross_entropy(model_->forward(inputs), labels);
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.max_grad_norm);
      optimizer_->step();
      total += loss.item<double>();
      ++batches;
    }
    return total / batches;
  }

  EvalResult evaluate() {
    torch::NoGradGuard no_grad;
    model_->eval();
    double loss_sum = 0;
    int64_t correct = 0;
    for (auto& batch : *test_loader_) {
      auto inputs = batch.data.to(device_);
      auto labels = batch.target.to(device_);
      auto logits = model_->forward(inputs);
      loss_sum +=
          F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
              .item<double>();
      correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
    }
    return {loss_sum / test_size_, static_cast<double>(correct) / test_size_};
  }

  void fit() {
    for (int64_t epoch = 1; epoch <= config_.epochs; ++epoch) {
      const double train_loss = train_epoch();
      last_ = evaluate();
      std::cout << "epoch " << epoch << " train_loss=" << train_loss
                << " test_loss=" << last_.loss << " accuracy=" << last_.accuracy << std::endl;
    }
  }

  void save_checkpoint() const {
    std::filesystem::create_directories(config_.out_dir);
    const auto dir = std::filesystem::path(config_.out_dir);
    torch::save(model_, (dir / "trainer_model.pt").string());
    torch::save(*optimizer_, (dir / "trainer_optimizer.pt").string());
    std::cout << "saved checkpoint in " << dir.string() << std::endl;
  }

  const EvalResult& last_result() const { return last_; }

 private:
  TrainerConfig config_;
  torch::Device device_;
  torch::nn::Sequential model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<TrainLoader> train_loader_;
  std::unique_ptr<TestLoader> test_loader_;
  int64_t train_size_ = 0;
  int64_t test_size_ = 0;
  EvalResult last_;
};
