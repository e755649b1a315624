// Metrics summed over the batches of a prepared loader are summed (or, for per-batch means,
// averaged) across processes; per-sample tensors are narrowed to this process's real
// samples (no padding duplicates). pytorch/examples style, in a helper and in main.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
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
    // CHECK: test_loss += torch::nll_loss(accelerate::real_samples(accelerate::Accelerator::current(), output), accelerate::real_samples(accelerate::Accelerator::current(), targets), /*weight=*/{}, torch::Reduction::Sum)
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    // CHECK: correct += accelerate::real_samples(accelerate::Accelerator::current(), pred).eq(accelerate::real_samples(accelerate::Accelerator::current(), targets)).sum().template item<int64_t>();
  }
  // One reduction each, after the loop.
  // CHECK: }
  // CHECK-NEXT: test_loss = accelerate::sum_across_processes(accelerate::Accelerator::current(), test_loss);
  // CHECK-NEXT: correct = accelerate::sum_across_processes(accelerate::Accelerator::current(), correct);
  test_loss /= dataset_size;
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
      // CHECK: auto loss = torch::nll_loss(accelerate::real_samples(accelerator, out), accelerate::real_samples(accelerator, batch.target), {}, torch::Reduction::Sum);
      sum_loss += loss.item<double>();
      // CHECK: sum_loss += loss.item<double>();
      // A per-batch mean: computed on the real samples, weighed by their count on a padded batch.
      auto mean = torch::nll_loss(out, batch.target);
      // CHECK: auto mean = torch::nll_loss(accelerate::real_samples(accelerator, out), accelerate::real_samples(accelerator, batch.target));
      mean_loss += mean.item<double>();
      // CHECK: mean_loss += accelerate::real_mean(accelerator, mean.item<double>(), out);
      total += batch.target.size(0);
      // CHECK: total += accelerate::real_samples(accelerator, batch.target).size(0);
      steps += 1;
      // CHECK: steps += 1;
      column_sum += out.sum(0);
      // CHECK: column_sum += accelerate::real_samples(accelerator, out).sum(0);
    }
    // CHECK: }
    // CHECK-NEXT: sum_loss = accelerate::sum_across_processes(accelerator, sum_loss);
    // CHECK-NEXT: mean_loss = accelerate::mean_across_processes(accelerator, mean_loss);
    // CHECK-NEXT: total = accelerate::sum_across_processes(accelerator, total);
    // CHECK-NEXT: column_sum = accelerate::sum_across_processes(accelerator, column_sum);
    // CHECK-NOT: steps =
  }
  // Training loops are sharded too: a per-batch mean is averaged over the processes.
  double train_loss = 0;
  for (auto& batch : *test_loader) {
    auto out = model->forward(batch.data);
    train_loss += torch::nll_loss(out, batch.target).item<double>();
    // CHECK: train_loss += accelerate::real_mean(accelerator, torch::nll_loss(accelerate::real_samples(accelerator, out), accelerate::real_samples(accelerator, batch.target)).item<double>(), out);
  }
  // CHECK: }
  // CHECK-NEXT: train_loss = accelerate::mean_across_processes(accelerator, train_loss);
  return 0;
}
// DIAG-NOT: warning:
