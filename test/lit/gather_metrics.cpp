// Evaluation metrics are computed from gathered tensors; mean-reduced per-batch values are
// left with a warning.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags 2> %t.err
// RUN: %strip %t.cpp | FileCheck %s
// RUN: FileCheck %s --check-prefix=DIAG < %t.err
// (%accel-migrate also migrates its output again: it must re-parse and be a fixed
// point; see Inputs/fixpoint.sh.)
#include <torch/torch.h>
#include <cstdio>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

template <typename DataLoader>
void test(Net& model, torch::Device device, DataLoader& data_loader, size_t dataset_size) {
  torch::NoGradGuard no_grad;
  model->eval();
  double test_loss = 0;
  int32_t correct = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model->forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum)
                     .template item<float>();
    // CHECK: test_loss += torch::nll_loss(accelerate::Accelerator::current().gather_for_metrics(output), accelerate::Accelerator::current().gather_for_metrics(targets), /*weight=*/{}, torch::Reduction::Sum)
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    // CHECK: correct += accelerate::Accelerator::current().gather_for_metrics(pred).eq(accelerate::Accelerator::current().gather_for_metrics(targets)).sum().template item<int64_t>();
  }
  test_loss /= dataset_size;
  // CHECK: test_loss /= dataset_size;
  std::printf("loss %.4f acc %.3f\n", test_loss, static_cast<double>(correct) / dataset_size);
}

int main() {
  Net model;
  torch::Device device(torch::kCPU);
  auto test_loader = torch::data::make_data_loader(torch::data::datasets::MNIST("d"), 64);
  test(model, device, *test_loader, 10000);
  {
    torch::InferenceMode guard;
    double sum_loss = 0, mean_loss = 0;
    int64_t total = 0, steps = 0;
    torch::Tensor column_sum = torch::zeros({10});
    for (auto& batch : *test_loader) {
      auto out = model->forward(batch.data);
      auto loss = torch::nll_loss(out, batch.target, {}, torch::Reduction::Sum);
      // CHECK: auto loss = torch::nll_loss(accelerator.gather_for_metrics(out), accelerator.gather_for_metrics(batch.target), {}, torch::Reduction::Sum);
      sum_loss += loss.item<double>();
      // CHECK: sum_loss += loss.item<double>();
      auto mean = torch::nll_loss(out, batch.target);
      mean_loss += mean.item<double>();
      // CHECK: // accel-migrate(accelerate-gather-metrics): this metric accumulates a mean-reduced
      // CHECK-NEXT: mean_loss += mean.item<double>();
      total += batch.target.size(0);
      // CHECK: total += accelerator.gather_for_metrics(batch.target).size(0);
      steps += 1;
      // CHECK: steps += 1;
      column_sum += out.sum(0);
      // CHECK: column_sum += accelerator.gather_for_metrics(out).sum(0);
    }
  }
  // Training loops (no evaluation scope) are not touched.
  double train_loss = 0;
  for (auto& batch : *test_loader) {
    auto out = model->forward(batch.data);
    train_loss += torch::nll_loss(out, batch.target).item<double>();
    // CHECK: train_loss += torch::nll_loss(out, batch.target).item<double>();
  }
  return 0;
}
// DIAG: gather_metrics.cpp:54:7: warning: this metric accumulates a mean-reduced {{.*}} [accelerate-gather-metrics]
