// Written the way the pytorch/examples C++ programs are: every setting lives in one global
// options object whose defaults are member initialisers, the device type among them; main
// downgrades it to the CPU when CUDA is missing; train() is a template over the loader.
#include <torch/torch.h>

#include <cinttypes>
#include <cstdio>
#include <iostream>

struct Options {
  int64_t batch_size = 32;
  int64_t epochs = 4;
  double lr = 0.02;
  double momentum = 0.5;
  int64_t log_interval = 6;
  uint64_t seed = 3;
  torch::DeviceType device = torch::kCUDA;
};

static Options options;

// y = x . w + 0.5 + noise, from its own generator so that every run sees the same data.
class LinearData : public torch::data::datasets::Dataset<LinearData> {
 public:
  LinearData(int64_t n, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    inputs_ = torch::randn({n, 8}, gen);
    auto w = torch::linspace(-1.0, 1.0, 8).unsqueeze(1);
    targets_ = inputs_.mm(w) + 0.5 + 0.05 * torch::randn({n, 1}, gen);
  }
  torch::data::Example<> get(size_t index) override { return {inputs_[index], targets_[index]}; }
  torch::optional<size_t> size() const override { return inputs_.size(0); }
  const torch::Tensor& inputs() const { return inputs_; }
  const torch::Tensor& targets() const { return targets_; }

 private:
  torch::Tensor inputs_, targets_;
};

struct Regressor : torch::nn::Module {
  Regressor()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};

template <typename DataLoader>
void train(int64_t epoch, Regressor& model, torch::Device device, DataLoader& data_loader,
           torch::optim::Optimizer& optimizer) {
  model.train();
  int64_t batch_idx = 0;
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = torch::mse_loss(output, targets);
    loss.backward();
    optimizer.step();
    if (batch_idx++ % options.log_interval == 0)
      std::printf("Train Epoch: %" PRId64 " [batch %" PRId64 "] Loss: %.4f\n", epoch,
                  batch_idx, loss.template item<float>());
  }
}

int main() {
  if (!torch::cuda::is_available())
    options.device = torch::kCPU;
  torch::Device device(options.device);
  torch::manual_seed(options.seed);

  Regressor model;
  model.to(device);
  torch::optim::SGD optimizer(
      model.parameters(), torch::optim::SGDOptions(options.lr).momentum(options.momentum));

  auto train_loader =
      torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
          LinearData(768, options.seed).map(torch::data::transforms::Stack<>()),
          options.batch_size);
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch)
    train(epoch, model, device, *train_loader, optimizer);

  // Evaluation on the whole held-out set at once.
  model.eval();
  torch::NoGradGuard no_grad;
  LinearData test(256, options.seed + 1);
  auto prediction = model.forward(test.inputs().to(device));
  double test_mse = torch::mse_loss(prediction, test.targets().to(device)).item<double>();
  double weight_sum = 0;
  for (const auto& p : model.parameters())
    weight_sum += p.sum().item<double>();
  std::printf("Test set: MSE %.6f\n", test_mse);
  std::cout << "final: test_mse=" << test_mse << " weight_sum=" << weight_sum << std::endl;
}
