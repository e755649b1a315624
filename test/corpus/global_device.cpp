// Corpus: device as a namespace-scope global, chosen by an if-chain in main.
// Idioms: global `torch::Device`, `if (torch::cuda::is_available()) g_device = ...`,
//   Sequential model, SGD by value, loader passed as `*loader` to a template,
//   `.to(g_device)` on batches, NoGradGuard eval with accuracy over the dataset size,
//   printf logging, torch::save.
// Expected: fully migratable.
#include <torch/torch.h>

#include <cstdio>

torch::Device g_device(torch::kCPU);

struct Points : torch::data::datasets::Dataset<Points> {
  torch::Tensor x, y;
  Points(torch::Tensor a, torch::Tensor b) : x(a), y(b) {}
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

template <typename Loader>
void train_one_epoch(torch::nn::Sequential& net, Loader& loader, torch::optim::SGD& opt) {
  net->train();
  for (auto& batch : loader) {
    auto x = batch.data.to(g_device);
    auto y = batch.target.to(g_device);
    opt.zero_grad();
    auto loss = torch::cross_entropy_loss(net->forward(x), y);
    loss.backward();
    opt.step();
  }
}

template <typename Loader>
double accuracy(torch::nn::Sequential& net, Loader& loader, size_t n) {
  torch::NoGradGuard guard;
  net->eval();
  int64_t correct = 0;
  for (auto& batch : loader) {
    auto out = net->forward(batch.data.to(g_device));
    correct += out.argmax(1).eq(batch.target.to(g_device)).sum().template item<int64_t>();
  }
  return static_cast<double>(correct) / n;
}

int main() {
  torch::manual_seed(0);
  if (torch::cuda::is_available()) {
    g_device = torch::Device(torch::kCUDA);
  }

  auto x = torch::randn({512, 4});
  auto y = (x.sum(1) > 0).to(torch::kLong);
  auto dataset = Points(x, y).map(torch::data::transforms::Stack<>());
  const size_t n = dataset.size().value();
  auto loader = torch::data::make_data_loader(std::move(dataset), 32);
  auto eval_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Points(x, y).map(torch::data::transforms::Stack<>()), 128);

  torch::nn::Sequential net(torch::nn::Linear(4, 16), torch::nn::ReLU(), torch::nn::Linear(16, 2));
  net->to(g_device);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));

  for (int epoch = 0; epoch < 3; ++epoch) {
    train_one_epoch(net, *loader, opt);
    std::printf("epoch %d accuracy %.4f\n", epoch, accuracy(net, *eval_loader, n));
  }
  torch::save(net, "global_device_net.pt");
  return 0;
}
