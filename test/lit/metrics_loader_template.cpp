// Train/evaluate templates over the loader's type with no call of them in the file (a
// header of helpers, migrated alone or as part of the source that calls them: test/public
// lornatang-lenet): a loop over such a parameter whose batches have .data/.target iterates
// the caller's loader, taken as prepared there (as the training loops on it are), so its
// metrics are reduced across processes and its printed loss is the whole batch's.
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
void train(Net& model, DataLoader& data_loader, torch::optim::Optimizer& optimizer) {
  size_t batch_index = 0;
  for (auto& batch : data_loader) {
    optimizer.zero_grad();
    auto output = model->forward(batch.data);
    auto loss = torch::nll_loss(output, batch.target);
    loss.backward();
    optimizer.step();
    if (++batch_index % 10 == 0)
      std::printf("Loss: %.4f\n", loss.template item<float>());
    // CHECK: { const auto [[L:batch_loss[_0-9]*]] = accelerate::batch_mean(accelerate::Accelerator::current(), loss, output); { if (accelerate::Accelerator::current().is_main_process()) { std::printf("Loss: %.4f\n", [[L]].template item<float>()); } } }
  }
}

template <typename DataLoader>
double evaluate(Net& model, DataLoader& data_loader, size_t dataset_size) {
  double loss = 0;
  size_t correct = 0;
  for (const auto& batch : data_loader) {
    auto output = model->forward(batch.data);
    loss += torch::nll_loss(output, batch.target, {}, torch::Reduction::Sum).template item<double>();
    correct += output.argmax(1).eq(batch.target).sum().template item<int64_t>();
  }
  // CHECK: loss = accelerate::sum_across_processes(accelerate::Accelerator::current(), loss);
  // CHECK-NEXT: correct = accelerate::sum_across_processes(accelerate::Accelerator::current(), correct);
  std::printf("loss %.4f acc %.3f\n", loss / dataset_size, static_cast<double>(correct) / dataset_size);
  return loss;
}

// Not a loader: a template parameter whose elements have no .data/.target.
template <typename Range>
double total(const Range& values) {
  double sum = 0;
  for (const auto& v : values)
    sum += v;
  // CHECK-NOT: sum_across_processes(accelerate::Accelerator::current(), sum)
  return sum;
}
