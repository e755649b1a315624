// accelerate-batch-shape on a program whose loaders are prepared already (a second run, or
// code written against the runtime): the batch size is followed through
// prepare_data_loader's argument as through make_data_loader's, here a parameter of the
// training function and an options variable set after its declaration.
// RUN: %check-rule
#include <accelerate/accelerate.h>
#include <torch/torch.h>

using namespace torch::data;

void train(accelerate::Accelerator& accelerator, int64_t batch_size) {
  auto loader = accelerator.prepare_data_loader(datasets::MNIST("d").map(transforms::Stack<>()), batch_size);
  for (auto& batch : *loader) {
    auto x = batch.data.view({batch_size, -1});
    // CHECK: auto x = batch.data.view({batch.data.size(0), -1});
    // DIAG: batch_shape_prepared.cpp:[[@LINE-2]]:31: note: `batch_size`, the loader's batch size, is now batch.data.size(0) {{.*}} [accelerate-batch-shape]
  }
}

int main() {
  accelerate::Accelerator accelerator;
  const int64_t eval_batch = 25;
  DataLoaderOptions options;
  options.batch_size(eval_batch);
  auto eval_loader = accelerator.prepare_data_loader(datasets::MNIST("d").map(transforms::Stack<>()), options);
  for (const auto& batch : *eval_loader) {
    auto ones = torch::ones({eval_batch, 1});
    // CHECK: auto ones = torch::ones({batch.data.size(0), 1});
    // DIAG: batch_shape_prepared.cpp:[[@LINE-2]]:30: note: `eval_batch`{{.*}}
  }
  train(accelerator, 32);
  return 0;
}
