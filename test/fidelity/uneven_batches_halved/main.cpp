// The launch-script style: the batch size is an argument, and the script halves it when it
// starts two processes, so the global batch stays the same (no --split_batches). The data
// set is not a multiple of the global batch (1001 samples, 64: the last global batch holds
// 41, 32 on one process and 9 on the other). Two models, each with its own key: one step
// per batch (plain), and gradients accumulated by hand over two batches (accumulate).
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

const int64_t kSamples = 1001, kEpochs = 3, kAccumulate = 2;

struct Rows : torch::data::datasets::Dataset<Rows> {
  Rows(torch::Tensor x, torch::Tensor y) : x(std::move(x)), y(std::move(y)) {}
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
  torch::Tensor x, y;
};

torch::nn::Sequential make_net() {
  torch::manual_seed(5);
  return torch::nn::Sequential(torch::nn::Linear(3, 8), torch::nn::ReLU(), torch::nn::Linear(8, 1));
}

double checksum(torch::nn::Sequential& net) {
  double s = 0;
  for (const auto& p : net->parameters())
    s += p.sum().item<double>() + p.pow(2).sum().item<double>();
  return s;
}

int main(int argc, char** argv) {
  int64_t batch_size = 64;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--batch-size") == 0)
      batch_size = std::atoll(argv[i + 1]);
  torch::manual_seed(2);
  auto x = torch::rand({kSamples, 3}) * 2 - 1;
  auto y = torch::sin(x.sum(1, true)) + 0.05 * torch::randn({kSamples, 1});
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Rows(x, y).map(torch::data::transforms::Stack<>()), batch_size);

  auto plain = make_net();
  torch::optim::Adam plain_opt(plain->parameters(), torch::optim::AdamOptions(1e-2));
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch)
    for (auto& batch : *loader) {
      plain_opt.zero_grad();
      auto loss = torch::mse_loss(plain->forward(batch.data), batch.target);
      loss.backward();
      plain_opt.step();
    }

  auto accum = make_net();
  torch::optim::Adam accum_opt(accum->parameters(), torch::optim::AdamOptions(1e-2));
  int64_t seen = 0;
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch)
    for (auto& batch : *loader) {
      auto loss = torch::mse_loss(accum->forward(batch.data), batch.target) / kAccumulate;
      loss.backward();
      if (++seen % kAccumulate == 0) {
        accum_opt.step();
        accum_opt.zero_grad();
      }
    }
  double plain_sum = checksum(plain), accum_sum = checksum(accum);
  std::printf("final: plain=%.10g accumulate=%.10g\n", plain_sum, accum_sum);
}
