// A training loop the tool cannot split is named even when other loops of the same file
// are split or iterate a prepared loader: a second loop on whole tensors with a loss the
// tool cannot follow (an arithmetic loss) would otherwise train on all the data on every
// process, silently, beside loops that are really distributed.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

using namespace torch;

void split_then_unsplit() {
  auto x = torch::randn({64, 3});
  auto y = torch::randn({64, 1});
  nn::Linear model(3, 1);
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  for (int epoch = 0; epoch < 10; ++epoch) {
    auto loss = torch::mse_loss(model->forward(x), y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): the batch of each step (x, y) is split
  // CHECK-NEXT: for (int epoch = 0; epoch < 10; ++epoch) {
  // CHECK-NEXT: auto loss = torch::mse_loss(model->forward(accelerate::process_share({{[^,]*}}, x)), accelerate::process_share({{[^,]*}}, y));
  for (int epoch = 0; epoch < 10; ++epoch) {
    auto loss = (model->forward(x) + y).mean();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  // CHECK: // accel-migrate(accelerate-unprepared-loader): this training loop does not iterate
  // CHECK-NEXT: for (int epoch = 0; epoch < 10; ++epoch) {
  // CHECK-NEXT: auto loss = (model->forward(x) + y).mean();
}
// DIAG: unsplit_beside_split.cpp:[[@LINE-10]]:3: warning: this training loop {{.*}} [accelerate-unprepared-loader]

void loader_then_tensors() {
  auto loader = data::make_data_loader(data::datasets::MNIST("d").map(data::transforms::Stack<>()), 64);
  nn::Linear model(784, 10);
  optim::SGD optimizer(model->parameters(), optim::SGDOptions(0.1));
  for (auto& batch : *loader) {
    auto loss = torch::nll_loss(model->forward(batch.data.view({-1, 784})), batch.target);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  // CHECK: for (auto& batch : *loader) {
  // A fine-tuning pass on a tensor kept whole, with a loss written by hand.
  auto x = torch::randn({32, 784});
  auto t = torch::randn({32, 10});
  for (int step = 0; step < 5; ++step) {
    auto loss = (model->forward(x) + t).mean();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  // CHECK: // accel-migrate(accelerate-unprepared-loader): this training loop does not iterate
  // CHECK-NEXT: for (int step = 0; step < 5; ++step) {
}
// DIAG: unsplit_beside_split.cpp:[[@LINE-9]]:3: warning: this training loop {{.*}} [accelerate-unprepared-loader]

int main() {
  split_then_unsplit();
  loader_then_tensors();
  return 0;
}
