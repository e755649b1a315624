// A value of this process's part of the batch printed inside a sharded loop (the loss, a
// count of correct samples) is made the whole batch's before the print, on every process
// (accelerate::batch_mean, sum_across_processes: collectives), and the main process prints
// that: on N processes the line shows what one process showed. The main process's guard
// begins after the computation (it is split where an output statement before it was
// guarded with it). Where the value cannot be made the whole batch's safely, a note says
// that the main process prints its share's value.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>
#include <cstdio>
#include <iostream>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

void loader_loop() {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), 0.01);
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("d"), 64);
  int step = 0;
  for (auto& batch : *loader) {
    optimizer.zero_grad();
    auto output = model->forward(batch.data);
    auto loss = torch::nll_loss(output, batch.target);
    loss.backward();
    optimizer.step();
    if (++step % 100 == 0) {
      std::cout << "step " << step << "\n";
      std::cout << "loss " << loss.item<float>() << std::endl;
    }
    // CHECK: if (++step % 100 == 0) {
    // CHECK-NEXT: if (accelerate::Accelerator::current().is_main_process()) {
    // CHECK-NEXT: std::cout << "step " << step << "\n";
    // CHECK-NEXT: }
    // CHECK-NEXT: // accel-migrate(accelerate-gather-metrics): the whole batch's value, on every process; the main process prints it
    // CHECK-NEXT: const auto [[L1:batch_loss[_0-9]*]] = accelerate::batch_mean(accelerate::Accelerator::current(), loss, output);
    // CHECK-NEXT: if (accelerate::Accelerator::current().is_main_process()) {
    // CHECK-NEXT: std::cout << "loss " << [[L1]].item<float>() << std::endl;
    // CHECK-NEXT: }
    // CHECK-NEXT: }
    // A condition on the batch may hold on some processes only: a collective under it
    // would wait forever.
    if (loss.item<double>() < 0.5)
      std::cout << "low " << loss.item<double>() << "\n";
    // DIAG: printed_batch_values.cpp:[[@LINE-1]]:7: note: this prints a value of this process's part of the batch, which the tool cannot make the whole batch's here {{.*}} [accelerate-gather-metrics]
    // CHECK: { if (accelerate::Accelerator::current().is_main_process()) { std::cout << "low " << loss.item<double>() << "\n"; } }
    // A sum over a padded batch counts the repeated samples.
    std::cout << "correct " << output.argmax(1).eq(batch.target).sum().item<int64_t>() << "\n";
    // DIAG: printed_batch_values.cpp:[[@LINE-1]]:5: note: this prints a value of this process's part of the batch, which the tool cannot make the whole batch's here {{.*}} [accelerate-gather-metrics]
    // CHECK: std::cout << "correct " << output.argmax(1).eq(batch.target).sum().item<int64_t>() << "\n";
  }
}

void whole_batch() {
  auto x = torch::randn({15, 1});
  auto y = torch::randn({15, 1});
  torch::nn::Linear model(1, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  for (int epoch = 0; epoch < 10; ++epoch) {
    auto out = model->forward(x);
    auto loss = torch::mse_loss(out, y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    // A number of a tensor (`item<T>()`, or `item()`: a c10::Scalar) is made the whole
    // batch's through the tensor, in the tensor's type, as the original computed it.
    std::cout << "Epoch " << epoch << " loss=" << loss.item() << std::endl;
    // CHECK: const auto [[L2:batch_loss[_0-9]*]] = accelerate::batch_mean(accelerate::Accelerator::current(), loss, out);
    // CHECK-NEXT: if (accelerate::Accelerator::current().is_main_process()) {
    // CHECK-NEXT: std::cout << "Epoch " << epoch << " loss=" << [[L2]].item() << std::endl;
    // A print that is the body of a loop (or an if) gets braces around the two.
    for (int k = 0; k < 1; ++k)
      std::printf("%d %f\n", k, loss.item<double>());
    // CHECK: for (int k = 0; k < 1; ++k)
    // CHECK-NEXT: // accel-migrate(accelerate-gather-metrics): the whole batch's value, on every process; the main process prints it
    // CHECK-NEXT: { const auto [[L3:batch_loss[_0-9]*]] = accelerate::batch_mean(accelerate::Accelerator::current(), loss, out); { if (accelerate::Accelerator::current().is_main_process()) { std::printf("%d %f\n", k, [[L3]].item<double>()); } } }
    // A sum over a hand-cut batch's samples: summed over the processes.
    std::printf("sq %f\n", torch::mse_loss(out, out.detach(), torch::Reduction::Sum).item<double>());
    // CHECK: const auto [[V:batch_value[_0-9]*]] = accelerate::sum_across_processes(accelerate::Accelerator::current(), torch::mse_loss(out, out.detach(), torch::Reduction::Sum));
    // CHECK-NEXT: if (accelerate::Accelerator::current().is_main_process()) {
    // CHECK-NEXT: std::printf("sq %f\n", [[V]].item<double>());
    // A number kept in a loop local first (`float loss_val = loss.item<float>();`): its
    // rows are found through the locals it is made from.
    float loss_val = loss.item<float>();
    std::cout << "Loss: " << loss_val << std::endl;
    // CHECK: const auto [[K:batch_loss_val[_0-9]*]] = accelerate::batch_mean(accelerate::Accelerator::current(), loss_val, out);
    // CHECK-NEXT: if (accelerate::Accelerator::current().is_main_process()) {
    // CHECK-NEXT: std::cout << "Loss: " << [[K]] << std::endl;
    // Not where the value names the whole tensor that each process takes its share of (its
    // text, rewritten in place, cannot also be copied).
    std::printf("sq %f\n", torch::mse_loss(out, y, torch::Reduction::Sum).item<double>());
    // DIAG: printed_batch_values.cpp:[[@LINE-1]]:5: note: this prints a value of this process's part of the batch, which the tool cannot make the whole batch's here {{.*}} [accelerate-gather-metrics]
    // CHECK: std::printf("sq %f\n", torch::mse_loss(out, accelerate::process_share(accelerate::Accelerator::current(), y), torch::Reduction::Sum).item<double>());
  }
}

// A jump before the print that some processes may take and others not: the computation
// would leave the others waiting.
void skipped_steps() {
  auto x = torch::randn({15, 1});
  auto y = torch::randn({15, 1});
  torch::nn::Linear model(1, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  for (int epoch = 0; epoch < 10; ++epoch) {
    auto out = model->forward(x);
    auto loss = torch::mse_loss(out, y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (loss.item<double>() > 100)
      continue;
    std::cout << "loss " << loss.item<double>() << "\n";
    // DIAG: printed_batch_values.cpp:[[@LINE-1]]:5: note: this prints a value of this process's part of the batch, which the tool cannot make the whole batch's here {{.*}} [accelerate-gather-metrics]
  }
}

// A condition on a variable that the loop sets from the batch (declared outside it): it
// too may hold on some processes only.
void flagged() {
  auto x = torch::randn({15, 1});
  auto y = torch::randn({15, 1});
  torch::nn::Linear model(1, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  bool low = false;
  for (int epoch = 0; epoch < 10; ++epoch) {
    auto out = model->forward(x);
    auto loss = torch::mse_loss(out, y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (loss.item<double>() < 0.5)
      low = true;
    if (low)
      std::cout << "low loss " << loss.item<double>() << "\n";
    // DIAG: printed_batch_values.cpp:[[@LINE-1]]:7: note: this prints a value of this process's part of the batch, which the tool cannot make the whole batch's here {{.*}} [accelerate-gather-metrics]
  }
}

int main() {
  loader_loop();
  whole_batch();
  skipped_steps();
  flagged();
}
