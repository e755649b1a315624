// Whole-tensor training the tool cannot split safely keeps the warning: a loss that is not
// a loss function of the model's output and the batch (a target could stay whole while the
// input is split), and a batch that the loop changes.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

void normalise(torch::Tensor& t);

// A member data set with a method of the class called in the loop that may change it
// (a non-const one): not split, warned.
class Shuffling {
 public:
  torch::Tensor x, y;
  torch::nn::Linear model{nullptr};
  void reshuffle();
  void train(torch::optim::Optimizer& optimizer) {
    for (int epoch = 0; epoch < 10; ++epoch) {
      reshuffle();
      auto loss = torch::mse_loss(model(x), y);
      loss.backward();
      optimizer.step();
    }
    // CHECK: // accel-migrate(accelerate-unprepared-loader): this training loop does not iterate
    // CHECK-NEXT: for (int epoch = 0; epoch < 10; ++epoch) {
    // CHECK-NEXT: reshuffle();
    // CHECK-NEXT: auto loss = torch::mse_loss(model(x), y);
  }
};

int main() {
  auto x = torch::randn({64, 3});
  auto y = torch::randn({64, 1});
  torch::nn::Linear model(3, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  for (int epoch = 0; epoch < 10; ++epoch) {
    auto out = model->forward(x);
    auto loss = (out + y).mean();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  // CHECK: // accel-migrate(accelerate-unprepared-loader): this training loop does not iterate
  // CHECK-NEXT: for (int epoch = 0; epoch < 10; ++epoch) {
  // CHECK-NEXT: auto out = model->forward(x);
  for (int epoch = 0; epoch < 10; ++epoch) {
    x = x + y;
    auto loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
  }
  // CHECK: // accel-migrate(accelerate-unprepared-loader): this training loop does not iterate
  // CHECK-NEXT: for (int epoch = 0; epoch < 10; ++epoch) {
  // CHECK-NEXT: x = x + y;
  // CHECK-NEXT: auto loss = torch::mse_loss(model->forward(x), y);
  // A batch passed by non-const reference to a function of the loop (which may read it as
  // well as write it): not split, warned.
  for (int epoch = 0; epoch < 10; ++epoch) {
    normalise(x);
    auto loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
  }
  // CHECK: // accel-migrate(accelerate-unprepared-loader): this training loop does not iterate
  // CHECK-NEXT: for (int epoch = 0; epoch < 10; ++epoch) {
  // CHECK-NEXT: normalise(x);
  return 0;
}
// DIAG: whole_batches_refused.cpp:[[@LINE-31]]:3: warning: this training loop {{.*}} [accelerate-unprepared-loader]
// DIAG: whole_batches_refused.cpp:[[@LINE-22]]:3: warning: this training loop {{.*}} [accelerate-unprepared-loader]
// DIAG: whole_batches_refused.cpp:[[@LINE-12]]:3: warning: this training loop {{.*}} [accelerate-unprepared-loader]
