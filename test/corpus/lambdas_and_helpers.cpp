// Corpus: the device reached from lambdas and free helper functions.
// Idioms: local `torch::Device device`, lambdas capturing it by reference (`to_device`,
//   `step`), a helper `evaluate(model, loader, device)` taking the device by value,
//   factory calls with a device argument (`torch::zeros(..., device)`,
//   `torch::randn(...).to(device)`), LR scheduler, printf logging.
// Expected: fully migratable.
#include <torch/torch.h>

#include <cstdio>

struct Noisy : torch::data::datasets::Dataset<Noisy> {
  torch::Tensor x = torch::randn({320, 8});
  torch::Tensor y = (x.slice(1, 0, 4).sum(1) - x.slice(1, 4, 8).sum(1) > 0).to(torch::kLong);
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

template <typename Loader>
double evaluate(torch::nn::Sequential& model, Loader& loader, torch::Device device,
                size_t dataset_size) {
  torch::NoGradGuard no_grad;
  model->eval();
  double loss = 0;
  for (auto& batch : loader) {
    auto out = model->forward(batch.data.to(device));
    loss += torch::cross_entropy_loss(out, batch.target.to(device), {}, torch::Reduction::Sum)
                .template item<double>();
  }
  model->train();
  return loss / dataset_size;
}

int main() {
  torch::manual_seed(21);
  torch::Device device = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  auto to_device = [&device](const torch::Tensor& t) { return t.to(device); };

  torch::nn::Sequential model(torch::nn::Linear(8, 32), torch::nn::GELU(), torch::nn::Linear(32, 2));
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::optim::StepLR scheduler(optimizer, 2);

  auto data = Noisy().map(torch::data::transforms::Stack<>());
  const size_t n = data.size().value();
  auto loader = torch::data::make_data_loader(std::move(data), 40);

  auto bias = torch::zeros({2}, device);
  auto jitter = torch::randn({1, 8}).to(device) * 0.01;
  auto step = [&](const torch::data::Example<>& batch) {
    optimizer.zero_grad();
    auto logits = model->forward(to_device(batch.data) + jitter) + bias;
    auto loss = torch::cross_entropy_loss(logits, to_device(batch.target));
    loss.backward();
    optimizer.step();
    return loss.item<float>();
  };

  for (int epoch = 0; epoch < 4; ++epoch) {
    float last = 0;
    for (auto& batch : *loader) last = step(batch);
    scheduler.step();
    std::printf("epoch %d last %.4f eval %.4f\n", epoch, last, evaluate(model, *loader, device, n));
  }
  return 0;
}
