// Personal-project style: fit a small MLP to a noisy curve. The whole data set lives in two
// tensors; each epoch shuffles it with randperm and cuts the batches by hand, keeping a
// running loss and the mean absolute error of the epoch.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

int main() {
  torch::manual_seed(7);
  const int64_t n = 2048, batch_size = 64, epochs = 6;
  auto x = torch::linspace(-3.0, 3.0, n).unsqueeze(1);
  auto y = torch::sin(2.0 * x) + 0.3 * x + 0.05 * torch::randn({n, 1});

  auto device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  torch::nn::Sequential net(torch::nn::Linear(1, 32), torch::nn::ReLU(), torch::nn::Linear(32, 32),
                            torch::nn::ReLU(), torch::nn::Linear(32, 1));
  net->to(device);
  x = x.to(device);
  y = y.to(device);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-2));

  double last_loss = 0, last_mae = 0;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    auto perm = torch::randperm(n, torch::TensorOptions().device(device).dtype(torch::kLong));
    double loss_sum = 0, abs_err = 0;
    int64_t batches = 0, count = 0;
    for (int64_t i = 0; i < n; i += batch_size) {
      auto idx = perm.slice(0, i, std::min(i + batch_size, n));
      auto xb = x.index_select(0, idx);
      auto yb = y.index_select(0, idx);
      auto pred = net->forward(xb);
      auto loss = torch::mse_loss(pred, yb);
      opt.zero_grad();
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
      abs_err += (pred - yb).abs().sum().item<double>();
      count += xb.size(0);
      ++batches;
    }
    last_loss = loss_sum / batches;
    last_mae = abs_err / count;
    std::printf("epoch %ld: mse %.5f  mae %.5f\n", static_cast<long>(epoch), last_loss, last_mae);
  }
  double weight_sum = 0;
  for (const auto& p : net->parameters())
    weight_sum += p.sum().item<double>();
  std::printf("final: mse=%.6f mae=%.6f weight_sum=%.6f\n", last_loss, last_mae, weight_sum);
}
