// Tests on values computed per process that decide a loop exit or collective work are
// decided together: on the loss averaged over the processes when it is a per-batch mean,
// else with set_trigger()/check_trigger(); reduced metrics need nothing.
// RUN: %check-rule
// RUN: %accel-migrate %t.cpp -o %t2.cpp -- %stub-flags
// RUN: diff %t.cpp %t2.cpp
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

#include <chrono>
#include <iostream>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

template <typename Loader>
void train_epoch(Net& model, torch::optim::Optimizer& optimizer, Loader& loader) {
  for (auto& batch : loader) {
    optimizer.zero_grad();
    auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
    loss.backward();
    optimizer.step();
    if (loss.template item<float>() < 1e-3f)
      return;
    // CHECK: // accel-migrate(accelerate-decide-together): decided on the value averaged over the processes
    // CHECK-NEXT: if (accelerate::Accelerator::current().reduce(loss, accelerate::ReduceOp::Mean).template item<float>() < 1e-3f)
  }
}

template <typename Loader>
double evaluate(Net& model, Loader& loader) {
  torch::NoGradGuard no_grad;
  double loss_sum = 0;
  int64_t count = 0;
  for (auto& batch : loader) {
    loss_sum += torch::nll_loss(model->forward(batch.data), batch.target, {}, torch::Reduction::Sum).template item<double>();
    count += batch.data.size(0);
  }
  return loss_sum / count;
}

int main() {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("d"), 64);
  auto val_loader = torch::data::make_data_loader(torch::data::datasets::MNIST("v"), 64);

  // A per-batch mean: reduced before the test.
  for (int epoch = 0; epoch < 10; ++epoch) {
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
      if (loss.item<float>() < 1e-3f) {
        std::cout << "converged\n";
        break;
      }
      // CHECK: // accel-migrate(accelerate-decide-together): decided on the value averaged over the processes
      // CHECK-NEXT: if (accelerator.reduce(loss, accelerate::ReduceOp::Mean).item<float>() < 1e-3f) {
    }
  }

  // A clock and a sum over this process's samples: the trigger, around a return and a
  // continue that skips backward.
  auto start = std::chrono::steady_clock::now();
  int64_t skipped = 0;
  for (auto& batch : *loader) {
    auto loss = torch::nll_loss(model->forward(batch.data), batch.target, {}, torch::Reduction::Sum);
    if (loss.item<float>() > 1e4f) {
      ++skipped;
      continue;
    }
    // CHECK: // accel-migrate(accelerate-decide-together): decided together: a process where the condition holds calls set_trigger()
    // CHECK-NEXT: if (loss.item<float>() > 1e4f) accelerator.set_trigger();
    // CHECK-NEXT: if (accelerator.check_trigger()) {
    loss.backward();
    optimizer.step();
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60))
      return 1;
    // CHECK: if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) accelerator.set_trigger();
    // CHECK-NEXT: if (accelerator.check_trigger())
    // CHECK-NEXT: return 1;
    else if (skipped > 10)
      break;
    // CHECK: else {
    // CHECK-NEXT: // accel-migrate(accelerate-decide-together): decided together
    // CHECK-NEXT: if (skipped > 10) accelerator.set_trigger();
    // CHECK-NEXT: if (accelerator.check_trigger())
    // CHECK-NEXT: break;
    // CHECK-NEXT: }
  }

  // A flag set on this process's loss: the loop condition is checked together.
  bool converged = false;
  while (!converged) {
    train_epoch(model, optimizer, *loader);
    for (auto& batch : *loader) {
      auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
      if (loss.item<float>() < 0.01f)
        converged = true;
    }
  }
  // CHECK: // accel-migrate(accelerate-decide-together): the loop condition depends on this process's values
  // CHECK-NEXT: while (true) {
  // CHECK-NEXT: if (converged) accelerator.set_trigger();
  // CHECK-NEXT: if (accelerator.check_trigger()) break;
  // CHECK-NEXT: train_epoch(model, optimizer, *loader);

  // Early stopping on a validation loss that is reduced across processes: nothing to do.
  double best = 1e9;
  int bad_epochs = 0;
  for (int epoch = 0; epoch < 100; ++epoch) {
    train_epoch(model, optimizer, *loader);
    double val = evaluate(model, *val_loader);
    if (val < best) {
      best = val;
      bad_epochs = 0;
    } else if (++bad_epochs >= 3) {
      break;
    }
    // CHECK: double val = evaluate(model, *val_loader);
    // CHECK-NEXT: if (val < best) {
  }

  // The last batch's loss kept in a local: made the whole batch's mean where it is assigned
  // (accelerate-gather-metrics, weighted by each process's real samples), so the same on
  // every process: the condition needs nothing more.
  double last = 1.0;
  for (int epoch = 0; epoch < 10 && last > 0.01; ++epoch) {
    for (auto& batch : *loader) {
      auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
      loss.backward();
      last = loss.item<double>();
    }
  }
  // CHECK: double last = 1.0;
  // CHECK-NEXT: for (int epoch = 0; epoch < 10 && last > 0.01; ++epoch) {
  // CHECK: last = accelerate::batch_mean(accelerator, loss.item<double>(), batch.data);

  // A deadline in a for loop's condition: checked together at the top of each iteration.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  for (int epoch = 0; epoch < 100 && std::chrono::steady_clock::now() < deadline; ++epoch) {
    train_epoch(model, optimizer, *loader);
  }
  // CHECK: for (int epoch = 0; ; ++epoch) {
  // CHECK-NEXT: if (!(epoch < 100 && std::chrono::steady_clock::now() < deadline)) accelerator.set_trigger();
  // CHECK-NEXT: if (accelerator.check_trigger()) break;

  // A do-while loop on a clock: warned.
  do {
    train_epoch(model, optimizer, *loader);
  } while (std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // CHECK: // accel-migrate(accelerate-decide-together): this test depends on a value computed by each process
  // CHECK-NEXT: do {
  return 0;
}
// DIAG: decide_together.cpp:[[@LINE-7]]:3: warning: this test depends on a value computed by each process{{.*}} [accelerate-decide-together]
