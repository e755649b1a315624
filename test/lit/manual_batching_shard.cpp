// Hand-cut batches of a training loop are split between the processes
// (accelerate::process_share); loops that do not train, cut along another dimension or
// write into the slices keep the warning.
// RUN: %check-rule
// RUN: %accel-migrate %t.cpp -o %t2.cpp -- %stub-flags 2> %t2.err
// RUN: diff %t.cpp %t2.cpp
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <vector>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

int main() {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::Tensor inputs = torch::randn({1000, 3}), targets = torch::randn({1000, 1});
  const int64_t n = 1000, batch_size = 50;
  for (int epoch = 0; epoch < 5; ++epoch) {
    double epoch_loss = 0;
    int64_t seen = 0;
    auto perm = torch::randperm(n);
    for (int64_t i = 0; i < n; i += batch_size) {
      auto idx = perm.slice(0, i, std::min(i + batch_size, n));
      auto x = inputs.index_select(0, idx);
      auto y = targets.slice(0, i, i + batch_size);
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->forward(x), y);
      loss.backward();
      optimizer.step();
      epoch_loss += loss.item<double>();
      seen += x.size(0);
    }
    // CHECK: // accel-migrate(accelerate-manual-batching): each batch is split between the processes (accelerate::process_share), so together they train on the same batches as one process
    // CHECK-NEXT: for (int64_t i = 0; i < n; i += batch_size) {
    // CHECK-NEXT: auto idx = accelerate::process_share(accelerator, perm.slice(0, i, std::min(i + batch_size, n)));
    // CHECK-NEXT: auto x = inputs.index_select(0, idx);
    // CHECK-NEXT: auto y = accelerate::process_share(accelerator, targets.slice(0, i, i + batch_size));
    // Per-batch means are averaged, sample counts summed, once after the loop:
    // CHECK: epoch_loss += loss.item<double>();
    // CHECK-NEXT: seen += x.size(0);
    // CHECK-NEXT: }
    // CHECK-NEXT: epoch_loss = accelerate::mean_across_processes(accelerator, epoch_loss);
    // CHECK-NEXT: seen = accelerate::sum_across_processes(accelerator, seen);
    std::printf("%f %ld\n", epoch_loss, static_cast<long>(seen));
  }

  // Batches stacked from a vector of samples.
  std::vector<torch::Tensor> samples(100, torch::randn({3}));
  for (size_t start = 0; start < samples.size(); start += 10) {
    std::vector<torch::Tensor> rows(samples.begin() + start, samples.begin() + start + 10);
    auto x = torch::stack(rows);
    torch::mse_loss(model->forward(x), x).backward();
  }
  // CHECK: auto x = accelerate::process_share(accelerator, torch::stack(rows));

  // No training: every process evaluating everything is correct; warned as before.
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; i < n; i += batch_size) {
    auto out = model->forward(inputs.slice(0, i, i + batch_size));
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): batches sliced by hand
  // CHECK-NEXT: for (int64_t i = 0; i < n; i += batch_size) {
  // CHECK-NEXT: auto out = model->forward(inputs.slice(0, i, i + batch_size));
  return 0;
}

void columns(Net& model, torch::optim::SGD& optimizer, torch::Tensor features) {
  // Cut along dim 1: not a batch of samples.
  for (int64_t j = 0; j < 8; ++j) {
    auto loss = model->forward(features.slice(1, j, j + 1)).mean();
    loss.backward();
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): batches sliced by hand
  // CHECK-NEXT: for (int64_t j = 0; j < 8; ++j) {
  // Written into: splitting would leave rows unwritten.
  torch::Tensor out = torch::zeros({100, 3});
  for (int64_t i = 0; i < 100; i += 10) {
    out.slice(0, i, i + 10).copy_(model->forward(features.slice(0, i, i + 10)));
    model->forward(out).mean().backward();
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): batches sliced by hand
  // CHECK-NEXT: for (int64_t i = 0; i < 100; i += 10) {
}
// DIAG: manual_batching_shard.cpp:[[@LINE-26]]:3: warning: {{.*}} [accelerate-manual-batching]
// DIAG: manual_batching_shard.cpp:[[@LINE-16]]:3: warning: {{.*}} [accelerate-manual-batching]
// DIAG: manual_batching_shard.cpp:[[@LINE-9]]:3: warning: {{.*}} [accelerate-manual-batching]
// DIAG-NOT: accelerate-unprepared-loader
