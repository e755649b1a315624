// A GPU tutorial's style: the program refuses to start without CUDA, then puts everything on
// torch::kCUDA. Migrated, the check follows the launcher (`accelerate launch --cpu` asks for
// the CPU), so the same training runs on 1 and 2 CPU processes here.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>

class Points : public torch::data::datasets::Dataset<Points> {
 public:
  Points(torch::Tensor x, torch::Tensor y) : x_(std::move(x)), y_(std::move(y)) {}
  torch::data::Example<> get(size_t i) override { return {x_[i], y_[i]}; }
  torch::optional<size_t> size() const override { return x_.size(0); }

 private:
  torch::Tensor x_, y_;
};

struct LinearRegression : torch::nn::Module {
  explicit LinearRegression(int64_t in) : fc(register_module("fc", torch::nn::Linear(in, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc->forward(x); }
  torch::nn::Linear fc;
};

int main() {
  if (!torch::cuda::is_available()) {
    std::cerr << "This example needs a CUDA device. Exiting." << std::endl;
    return 1;
  }
  torch::Device device = torch::kCUDA;

  const int64_t kSamples = 240;
  const int64_t kFeatures = 4;
  const int64_t kBatchSize = 24;
  const int kEpochs = 4;

  torch::manual_seed(3);
  auto x = torch::randn({kSamples, kFeatures});
  auto w = torch::arange(1, kFeatures + 1, torch::kFloat).unsqueeze(1);
  auto y = x.mm(w) + 0.05 * torch::randn({kSamples, 1});
  auto dataset = Points(x, y).map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(dataset), kBatchSize);

  auto model = std::make_shared<LinearRegression>(kFeatures);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));

  double last_loss = 0;
  for (int epoch = 1; epoch <= kEpochs; ++epoch) {
    double epoch_loss = 0;
    int64_t batches = 0;
    for (auto& batch : *loader) {
      auto inputs = batch.data.to(device);
      auto targets = batch.target.to(device);
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(inputs), targets);
      loss.backward();
      optimizer.step();
      epoch_loss += loss.item<double>();
      ++batches;
    }
    last_loss = epoch_loss / batches;
    std::printf("epoch %d: loss %.6f\n", epoch, last_loss);
  }
  double checksum = 0;
  for (const auto& p : model->parameters())
    checksum += p.sum().item<double>();
  std::printf("final: loss=%.6f checksum=%.6f\n", last_loss, checksum);
  return 0;
}
