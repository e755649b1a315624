// A personal project built as C++14 (LibTorch 1.13's standard) that picks its device the
// common way: the CPU first, CUDA when it is there. Before #29 item 8 the migration turned
// `torch::Device device = torch::kCPU;` into `torch::Device accelerator.device();` in C++14.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>

struct Net : torch::nn::Module {
  Net() {
    hidden = register_module("hidden", torch::nn::Linear(3, 16));
    out = register_module("out", torch::nn::Linear(16, 1));
  }
  torch::Tensor forward(torch::Tensor x) { return out->forward(torch::tanh(hidden->forward(x))); }
  torch::nn::Linear hidden{nullptr}, out{nullptr};
};

class Curve : public torch::data::datasets::Dataset<Curve> {
 public:
  explicit Curve(int64_t n) {
    x_ = torch::rand({n, 3}) * 2 - 1;
    y_ = (x_.select(1, 0) * x_.select(1, 1) + x_.select(1, 2).sin()).unsqueeze(1);
  }
  torch::data::Example<> get(size_t i) override { return {x_[i], y_[i]}; }
  torch::optional<size_t> size() const override { return x_.size(0); }

 private:
  torch::Tensor x_, y_;
};

int main() {
  torch::Device device = torch::kCPU;
  if (torch::cuda::is_available()) {
    std::cout << "CUDA is available, training on GPU" << std::endl;
    device = torch::kCUDA;
  }
  torch::DeviceType device_type = torch::kCPU;
  if (torch::cuda::is_available()) device_type = torch::kCUDA;

  torch::manual_seed(11);
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Curve(320).map(torch::data::transforms::Stack<>()), /*batch_size=*/32);

  auto net = std::make_shared<Net>();
  net->to(device);
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(0.01));

  double loss_sum = 0;
  int64_t batches = 0;
  for (int epoch = 0; epoch < 5; ++epoch) {
    loss_sum = 0;
    batches = 0;
    for (auto& batch : *loader) {
      auto x = batch.data.to(device_type);
      auto y = batch.target.to(device_type);
      optimizer.zero_grad();
      auto loss = torch::mse_loss(net->forward(x), y);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    std::printf("epoch %d loss %.6f\n", epoch, loss_sum / batches);
  }
  double checksum = 0;
  for (const auto& p : net->parameters())
    checksum += p.abs().sum().item<double>();
  std::printf("final: loss=%.6f checksum=%.6f\n", loss_sum / batches, checksum);
  return 0;
}
