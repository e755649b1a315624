// accelerate-batch-shape: the batch size a prepared loader was made with, used again to
// shape its batch, becomes the batch's own size (batch.data.size(0)) inside the loop over
// that loader, with a note; where the rule cannot tell which batch a shape is for, it warns
// with the place and leaves the code.
// RUN: %check-rule
#include <torch/torch.h>

using namespace torch::data;

constexpr int64_t kBatchSize = 32;

struct Config {
  int64_t batch_size = 16;
};

// forward() sees no batch: the rule cannot tell the shape is the loader's batch.
struct Net : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    return x.view({kBatchSize, -1});
    // CHECK: return x.view({kBatchSize, -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:20: warning: the loader's batch size shapes a tensor here, but not in a loop over the loader it sizes: {{.*}} [accelerate-batch-shape]
  }
};

int main() {
  const int64_t batch_size = 100;
  const int64_t test_batch_size = 50;
  auto train_loader = make_data_loader(datasets::MNIST("d").map(transforms::Stack<>()), batch_size);
  auto test_loader = make_data_loader(datasets::MNIST("d").map(transforms::Stack<>()),
                                      DataLoaderOptions().batch_size(test_batch_size).workers(2));
  auto loader3 = make_data_loader(datasets::MNIST("d"), DataLoaderOptions(kBatchSize));
  Config cfg;
  DataLoaderOptions opts;
  opts.batch_size(cfg.batch_size);
  auto loader4 = make_data_loader(datasets::MNIST("d"), opts);
  auto loader5 = make_data_loader(datasets::MNIST("d"), 64);
  torch::Tensor hidden = torch::zeros({batch_size, 8});
  // DIAG: batch_shape.cpp:[[@LINE-1]]:40: warning: the loader's batch size shapes a tensor here, but not in a loop over the loader it sizes: {{.*}} [accelerate-batch-shape]
  double running = 0;

  for (auto& batch : *train_loader) {
    auto data = batch.data.view({batch_size, -1});
    // CHECK: auto data = batch.data.view({batch.data.size(0), -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:34: note: `batch_size`, the loader's batch size, is now batch.data.size(0) {{.*}} [accelerate-batch-shape]
    auto flat = data.view({batch_size, 28, -1});
    // CHECK: auto flat = data.view({batch.data.size(0), 28, -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:28: note: `batch_size`{{.*}}
    auto h = hidden.view({batch_size, -1});
    // CHECK: auto h = hidden.view({batch_size, -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:27: warning: the loader's batch size shapes a tensor here, but the tensor it shapes is not made from the loop's batch: {{.*}} [accelerate-batch-shape]
    running += data.sum().item<double>() * batch_size;
    // CHECK: .item<double>() * batch_size;
  }
  for (auto& batch : *test_loader) {
    auto labels = torch::zeros({test_batch_size, 10});
    // CHECK: auto labels = torch::zeros({batch.data.size(0), 10});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:33: note: `test_batch_size`{{.*}}
    int64_t rows = 0;
    for (int64_t i = 0; i < test_batch_size; ++i)
      // CHECK: for (int64_t i = 0; i < batch.data.size(0); ++i)
      // DIAG: batch_shape.cpp:[[@LINE-2]]:29: note: `test_batch_size`{{.*}}
      rows += 1;
    auto wrong = batch.data.view({batch_size, -1});
    // CHECK: auto wrong = batch.data.view({batch_size, -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:35: warning: the loader's batch size shapes a tensor here, but not in a loop over the loader it sizes: {{.*}} [accelerate-batch-shape]
  }
  torch::Device device(torch::kCPU);
  for (auto& batch : *loader3) {
    auto x = batch.data.view({kBatchSize, -1});
    // CHECK: auto x = batch.data.view({batch.data.size(0), -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:31: note: `kBatchSize`{{.*}}
    // A GAN's labels: made by a factory, sized by the batch, placed on the device. The
    // placement stays, on the first migration as on the second (a fixed point, issue 47).
    auto real_labels = torch::zeros({kBatchSize, 1}).to(device);
    // CHECK: auto real_labels = torch::zeros({batch.data.size(0), 1}).to({{.*}});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:38: note: `kBatchSize`{{.*}}
  }
  for (auto& batch : *loader4) {
    auto x = batch.data.view({cfg.batch_size, -1});
    // CHECK: auto x = batch.data.view({batch.data.size(0), -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:31: note: `cfg.batch_size`{{.*}}
  }
  for (auto& batch : *loader5) {
    auto x = batch.data.view({64, -1});
    // CHECK: auto x = batch.data.view({64, -1});
    // DIAG: batch_shape.cpp:[[@LINE-2]]:31: warning: the loader's batch size shapes a tensor here, but a number equal to the batch size may mean something else: {{.*}} [accelerate-batch-shape]
    auto y = batch.data.view({-1, 64});
    // CHECK: auto y = batch.data.view({-1, 64});
  }
  return 0;
}
