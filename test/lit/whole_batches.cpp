// Training on the whole data set at every step, and on a batch the program draws itself at
// every step: the tensors that enter the model and its loss are split between the processes
// (accelerate::process_share at each use in the loop), and a loss kept past the step becomes
// the whole batch's (accelerate::batch_mean). Loops the tool cannot follow keep the warning.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

#include <tuple>
#include <utility>

std::pair<torch::Tensor, torch::Tensor> get_batch(int64_t n) {
  auto x = torch::randn({n, 3});
  return {x, x.sum(1)};
}

void full_batch() {
  auto x_train = torch::randn({1001, 3});
  auto y_train = torch::randn({1001, 1});
  torch::nn::Linear model(3, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  double last = 0;
  for (int epoch = 0; epoch < 100; ++epoch) {
    auto output = model->forward(x_train);
    auto loss = torch::mse_loss(output, y_train);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    last = loss.item<double>();
    if (epoch % 10 == 0)
      std::printf("loss %f\n", loss.item<double>());
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): the batch of each step (x_train, y_train) is split between the processes
  // CHECK-NEXT: for (int epoch = 0; epoch < 100; ++epoch) {
  // CHECK-NEXT: auto output = model->forward(accelerate::process_share({{[^,]*}}, x_train));
  // CHECK-NEXT: auto loss = torch::mse_loss(output, accelerate::process_share({{[^,]*}}, y_train));
  // CHECK: last = accelerate::batch_mean({{[^,]*}}, loss.item<double>(), output);
  // The printed loss is made the whole batch's before the main process prints it.
  // CHECK: if (epoch % 10 == 0)
  // CHECK-NEXT: // accel-migrate(accelerate-gather-metrics): the whole batch's value, on every process; the main process prints it
  // CHECK-NEXT: { const auto [[B:batch_loss[_0-9]*]] = accelerate::batch_mean({{[^,]*}}, loss, output); { if ({{.*}}.is_main_process()) { std::printf("loss %f\n", [[B]].item<double>()); } } }
  auto eval = torch::mse_loss(model->forward(x_train), y_train);
  // CHECK: auto eval = torch::mse_loss(model->forward(x_train), y_train);
}

void drawn_batches() {
  torch::nn::Linear fc(3, 1);
  torch::optim::SGD optimizer(fc->parameters(), torch::optim::SGDOptions(0.1));
  float loss = 0;
  for (int64_t step = 1;; ++step) {
    auto [batch_x, batch_y] = get_batch(33);
    optimizer.zero_grad();
    auto output = torch::mse_loss(fc(batch_x), batch_y);
    loss = output.item<float>();
    output.backward();
    optimizer.step();
    if (loss < 1e-3 || step == 1000)
      break;
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): the batch of each step (batch_x, batch_y)
  // CHECK: auto output = torch::mse_loss(fc(accelerate::process_share({{[^,]*}}, batch_x)), accelerate::process_share({{[^,]*}}, batch_y));
  // CHECK-NEXT: loss = accelerate::batch_mean({{[^,]*}}, output.item<float>(), accelerate::process_share({{[^,]*}}, batch_x));
}

// pytorch/examples' regression draws its batch into variables declared first and assigned
// through std::tie: the drawn batch stays whole where it is written (every process draws it
// alike; a share there would not compile: std::tie takes references), its share is taken
// where it is read.
void tied_batches() {
  torch::nn::Linear fc(3, 1);
  torch::optim::SGD optimizer(fc->parameters(), torch::optim::SGDOptions(0.1));
  for (int64_t step = 1; step < 100; ++step) {
    torch::Tensor batch_x, batch_y;
    std::tie(batch_x, batch_y) = get_batch(33);
    optimizer.zero_grad();
    auto output = torch::mse_loss(fc(batch_x), batch_y);
    output.backward();
    optimizer.step();
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): the batch of each step (batch_x, batch_y)
  // CHECK: std::tie(batch_x, batch_y) = get_batch(33);
  // CHECK: auto output = torch::mse_loss(fc(accelerate::process_share({{[^,]*}}, batch_x)), accelerate::process_share({{[^,]*}}, batch_y));
}

// The data set held in the members of a trainer class, set in its constructor and read by
// the training method (test/public soumik-linear-regression): split where it is read.
class Trainer {
 public:
  torch::Tensor xTrain, yTrain;
  torch::nn::Linear model{nullptr};
  Trainer() : xTrain(torch::randn({15, 1})), yTrain(torch::randn({15, 1})), model(1, 1) {}
  void train() {
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
    for (int epoch = 0; epoch < 60; ++epoch) {
      auto output = model(xTrain);
      auto loss = torch::mse_loss(output, this->yTrain);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    // CHECK: // accel-migrate(accelerate-manual-batching): the batch of each step (xTrain, yTrain) is split between the processes
    // CHECK-NEXT: for (int epoch = 0; epoch < 60; ++epoch) {
    // CHECK-NEXT: auto output = model(accelerate::process_share({{[^,]*}}, xTrain));
    // CHECK-NEXT: auto loss = torch::mse_loss(output, accelerate::process_share({{[^,]*}}, this->yTrain));
  }
};

int main() {
  full_batch();
  drawn_batches();
  tied_batches();
  Trainer().train();
  return 0;
}
