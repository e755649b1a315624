// Corpus (partly migratable): manual batching by slicing whole-dataset tensors.
// Idioms: the whole dataset moved to the device once, batches cut with
//   `X.slice(0, start, end)` / `narrow` over an index range, a shuffled index tensor with
//   `index_select`, evaluation over the full tensor, loss.backward(), printf logging.
// Expected: the training loop's batches are split between the processes
//   (accelerate::process_share, with an `accel-migrate(accelerate-manual-batching)` note);
//   the evaluation loop over hand-cut slices does not train, so the tool leaves it as it is
//   (every process evaluates everything), warns with its rule id and marks it with an
//   `accel-migrate(...)` comment; the rest (device, model, optimizer, backward, logging)
//   is rewritten.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

int main() {
  torch::manual_seed(31);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);

  const int64_t n = 1000, batch_size = 50;
  auto w = torch::randn({6, 1}, device);
  auto X = torch::randn({n, 6}).to(device);
  auto Y = (X.matmul(w) > 0).squeeze(1).to(torch::kLong);
  auto X_test = torch::randn({300, 6}).to(device);
  auto Y_test = (X_test.matmul(w) > 0).squeeze(1).to(torch::kLong);

  torch::nn::Sequential model(torch::nn::Linear(6, 32), torch::nn::ReLU(), torch::nn::Linear(32, 2));
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));

  for (int epoch = 0; epoch < 5; ++epoch) {
    auto perm = torch::randperm(n, torch::TensorOptions().dtype(torch::kLong).device(device));
    for (int64_t start = 0; start < n; start += batch_size) {
      const int64_t end = std::min(start + batch_size, n);
      auto idx = perm.slice(0, start, end);
      auto xb = X.index_select(0, idx);
      auto yb = Y.index_select(0, idx);
      optimizer.zero_grad();
      auto loss = torch::cross_entropy_loss(model->forward(xb), yb);
      loss.backward();
      optimizer.step();
    }

    torch::NoGradGuard no_grad;
    int64_t correct = 0;
    for (int64_t start = 0; start < X_test.size(0); start += 100) {
      auto xb = X_test.narrow(0, start, std::min<int64_t>(100, X_test.size(0) - start));
      auto yb = Y_test.narrow(0, start, xb.size(0));
      correct += model->forward(xb).argmax(1).eq(yb).sum().item<int64_t>();
    }
    std::printf("epoch %d test accuracy %.4f\n", epoch, double(correct) / X_test.size(0));
  }
  return 0;
}
