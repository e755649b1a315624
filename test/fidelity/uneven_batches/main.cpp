// A regression trained in order on a data set that is not a multiple of its batch (1001
// samples in batches of 64: the last holds 41), as most real data sets are (MNIST's 60000
// leave 32). Four models are trained one after the other from the same start, each with
// its own idiom and its own checksum in the `final:` line, so that a difference names the
// idiom: a mean loss through a loader, a sum-reduced loss (Reduction::Sum) through a
// loader, gradients accumulated by hand over two batches (the last pair holds the short
// batch), and batches cut by hand from the same tensors in an index loop.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

const int64_t kSamples = 1001, kBatch = 64, kEpochs = 3, kAccumulate = 2;

struct Rows : torch::data::datasets::Dataset<Rows> {
  Rows(torch::Tensor x, torch::Tensor y) : x(std::move(x)), y(std::move(y)) {}
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return x.size(0); }
  torch::Tensor x, y;
};

torch::nn::Sequential make_net() {
  torch::manual_seed(3);  // every model starts from the same weights
  return torch::nn::Sequential(torch::nn::Linear(4, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
}

double checksum(torch::nn::Sequential& net) {
  double s = 0;
  for (const auto& p : net->parameters())
    s += p.sum().item<double>() + p.pow(2).sum().item<double>();
  return s;
}

int main() {
  torch::manual_seed(1);
  auto x = torch::randn({kSamples, 4});
  auto y = x.matmul(torch::tensor({0.5, -1.0, 2.0, 0.25}).unsqueeze(1)) + 0.1 * torch::randn({kSamples, 1});
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Rows(x, y).map(torch::data::transforms::Stack<>()), kBatch);

  auto mean_net = make_net();
  torch::optim::SGD mean_opt(mean_net->parameters(), torch::optim::SGDOptions(0.05));
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch)
    for (auto& batch : *loader) {
      mean_opt.zero_grad();
      auto loss = torch::mse_loss(mean_net->forward(batch.data), batch.target);
      loss.backward();
      mean_opt.step();
    }

  auto sum_net = make_net();
  torch::optim::SGD sum_opt(sum_net->parameters(), torch::optim::SGDOptions(0.05 / kBatch));
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch)
    for (auto& batch : *loader) {
      sum_opt.zero_grad();
      auto loss = torch::mse_loss(sum_net->forward(batch.data), batch.target, torch::Reduction::Sum);
      loss.backward();
      sum_opt.step();
    }

  auto accum_net = make_net();
  torch::optim::SGD accum_opt(accum_net->parameters(), torch::optim::SGDOptions(0.05));
  int64_t seen = 0;
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch)
    for (auto& batch : *loader) {
      auto loss = torch::mse_loss(accum_net->forward(batch.data), batch.target) / kAccumulate;
      loss.backward();
      if (++seen % kAccumulate == 0) {  // 16 batches an epoch: the last pair is 15 and 16
        accum_opt.step();
        accum_opt.zero_grad();
      }
    }

  auto hand_net = make_net();
  torch::optim::SGD hand_opt(hand_net->parameters(), torch::optim::SGDOptions(0.05));
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch)
    for (int64_t i = 0; i < kSamples; i += kBatch) {
      auto xb = x.slice(0, i, std::min(i + kBatch, kSamples));
      auto yb = y.slice(0, i, std::min(i + kBatch, kSamples));
      hand_opt.zero_grad();
      auto loss = torch::mse_loss(hand_net->forward(xb), yb);
      loss.backward();
      hand_opt.step();
    }

  double mean = checksum(mean_net), sum = checksum(sum_net), accumulate = checksum(accum_net),
         hand = checksum(hand_net);
  std::printf("final: mean=%.10g sum=%.10g accumulate=%.10g hand=%.10g\n", mean, sum, accumulate, hand);
}
