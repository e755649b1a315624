// Corpus: gradient accumulation written by hand.
// Idioms: `(loss / accumulation_steps).backward()` every batch with `optimizer.step()`
//   every k batches, `torch::nn::utils::clip_grad_norm_` before the step,
//   `torch::nn::utils::clip_grad_value_`, a warm-up LR set through param_groups,
//   a device chosen by a ternary on `torch::cuda::is_available()` into `auto`.
// Expected: fully migratable (the accumulation pattern is kept as written).
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

struct Sines : torch::data::datasets::Dataset<Sines> {
  torch::Tensor x = torch::rand({384, 1}) * 6 - 3;
  torch::Tensor y = torch::sin(x * 2) + 0.3 * x;
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
};

int main() {
  torch::manual_seed(47);
  auto device = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  torch::nn::Sequential net(torch::nn::Linear(1, 48), torch::nn::SiLU(), torch::nn::Linear(48, 48),
                            torch::nn::SiLU(), torch::nn::Linear(48, 1));
  net->to(device);
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(4e-3));

  const int accumulation_steps = 4;
  const double base_lr = 4e-3;
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      Sines().map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions(8));

  int64_t micro_step = 0, update = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    double epoch_loss = 0;
    for (auto& batch : *loader) {
      auto loss = torch::mse_loss(net->forward(batch.data.to(device)), batch.target.to(device));
      (loss / accumulation_steps).backward();
      epoch_loss += loss.item<double>();
      if (++micro_step % accumulation_steps == 0) {
        const double warmup = std::min(1.0, (update + 1) / 10.0);
        for (auto& group : optimizer.param_groups()) {
          static_cast<torch::optim::AdamOptions&>(group.options()).lr(base_lr * warmup);
        }
        torch::nn::utils::clip_grad_value_(net->parameters(), 10.0);
        torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
        optimizer.step();
        optimizer.zero_grad();
        ++update;
      }
    }
    std::printf("epoch %d loss %.5f updates %lld\n", epoch, epoch_loss, static_cast<long long>(update));
  }
  return 0;
}
