// Corpus: {fmt} logging and progress output.
// Idioms: `fmt::print` per step and per epoch, `std::cerr` warnings, a progress line with
//   `\r` via fputs, `.to(device)` on batches, eval() + InferenceMode accuracy count with
//   the dataset size as denominator, torch::save.
// Expected: fully migratable (logging guarded to the main process).
#include <torch/torch.h>
#include <fmt/core.h>

#include <cstdio>
#include <iostream>

struct Moons : torch::data::datasets::Dataset<Moons> {
  torch::Tensor x, y;
  explicit Moons(int64_t n) {
    y = torch::randint(2, {n}, torch::kLong);
    auto t = torch::rand({n}) * 3.14159;
    auto yf = y.to(torch::kFloat);
    x = torch::stack({torch::cos(t) + yf, torch::sin(t) * (1 - 2 * yf) + 0.5 * yf}, 1) +
        0.1 * torch::randn({n, 2});
  }
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

int main() {
  torch::manual_seed(43);
  torch::Device device = torch::kCPU;
  if (torch::cuda::is_available()) {
    device = torch::kCUDA;
  } else {
    std::cerr << "warning: CUDA not available, training on CPU\n";
  }

  torch::nn::Sequential model(torch::nn::Linear(2, 32), torch::nn::ReLU(), torch::nn::Linear(32, 2));
  model->to(device);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));

  auto train_loader = torch::data::make_data_loader(Moons(512).map(torch::data::transforms::Stack<>()), 32);
  auto val = Moons(256).map(torch::data::transforms::Stack<>());
  const size_t val_size = val.size().value();
  auto val_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(val), 64);

  for (int epoch = 1; epoch <= 4; ++epoch) {
    int step = 0;
    for (auto& batch : *train_loader) {
      opt.zero_grad();
      auto loss = torch::cross_entropy_loss(model->forward(batch.data.to(device)), batch.target.to(device));
      loss.backward();
      opt.step();
      if (++step % 4 == 0) {
        std::fputs(fmt::format("\repoch {} step {:3d} loss {:.4f}", epoch, step, loss.item<float>()).c_str(), stdout);
      }
    }
    std::fputs("\n", stdout);

    model->eval();
    int64_t correct = 0;
    {
      c10::InferenceMode guard;
      for (auto& batch : *val_loader) {
        auto pred = model->forward(batch.data.to(device)).argmax(1);
        correct += pred.eq(batch.target.to(device)).sum().item<int64_t>();
      }
    }
    model->train();
    fmt::print("epoch {} val accuracy {:.4f}\n", epoch, static_cast<double>(correct) / val_size);
  }
  torch::save(model, "fmt_logging_model.pt");
}
