// Corpus (NOT safely migratable): a hand-written batch iterator instead of a
// torch::data loader.
// Idioms: a user `BatchIterator` class holding whole tensors and a shuffled order,
//   `while (it.next(x, y))` loops, batches moved with `.to(device)`, evaluation counting
//   correct predictions with an explicit denominator, std::cout logging.
// Expected: the tool sees no loader to prepare: it migrates the device/model/optimizer/
//   backward parts but must warn that the data is not sharded (rule id + comment).
#include <torch/torch.h>

#include <iostream>

class BatchIterator {
 public:
  BatchIterator(torch::Tensor x, torch::Tensor y, int64_t batch, bool shuffle)
      : x_(std::move(x)), y_(std::move(y)), batch_(batch), shuffle_(shuffle) { reset(); }
  void reset() {
    pos_ = 0;
    order_ = shuffle_ ? torch::randperm(x_.size(0)) : torch::arange(x_.size(0));
  }
  bool next(torch::Tensor& x, torch::Tensor& y) {
    if (pos_ >= x_.size(0)) return false;
    auto idx = order_.slice(0, pos_, pos_ + batch_);
    pos_ += batch_;
    x = x_.index_select(0, idx);
    y = y_.index_select(0, idx);
    return true;
  }
  int64_t size() const { return x_.size(0); }

 private:
  torch::Tensor x_, y_, order_;
  int64_t batch_, pos_ = 0;
  bool shuffle_;
};

int main() {
  torch::manual_seed(41);
  torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  auto features = torch::randn({600, 3});
  auto labels = (features.pow(2).sum(1).sqrt() > 1.5).to(torch::kLong);
  BatchIterator train(features.slice(0, 0, 480), labels.slice(0, 0, 480), 32, true);
  BatchIterator test(features.slice(0, 480), labels.slice(0, 480), 60, false);

  torch::nn::Sequential model(torch::nn::Linear(3, 16), torch::nn::ReLU(), torch::nn::Linear(16, 2));
  model->to(device);
  torch::optim::Adam optimizer(model->parameters(), 0.01);

  torch::Tensor x, y;
  for (int epoch = 0; epoch < 5; ++epoch) {
    train.reset();
    while (train.next(x, y)) {
      optimizer.zero_grad();
      auto loss = torch::cross_entropy_loss(model->forward(x.to(device)), y.to(device));
      loss.backward();
      optimizer.step();
    }
    torch::NoGradGuard no_grad;
    test.reset();
    int64_t correct = 0;
    while (test.next(x, y)) {
      correct += model->forward(x.to(device)).argmax(1).eq(y.to(device)).sum().item<int64_t>();
    }
    std::cout << "epoch " << epoch << " accuracy " << double(correct) / test.size() << std::endl;
  }
}
