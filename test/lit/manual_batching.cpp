// Manual batching and loaders the tool cannot see are left alone with a warning and a
// comment.
// RUN: %check-rule
// RUN: %accel-migrate %t.cpp -o %t2.cpp -- %stub-flags 2> %t2.err
// RUN: diff %t.cpp %t2.cpp
// RUN: FileCheck %s --check-prefix=DIAG2 < %t2.err
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

std::unique_ptr<torch::data::StatelessDataLoader<torch::data::datasets::MNIST,
                                                 torch::data::samplers::RandomSampler>>
external_loader();

int main() {
  torch::Tensor inputs = torch::randn({1000, 3});
  const int64_t batch_size = 10;
  for (int64_t i = 0; i < 1000; i += batch_size) {
    auto x = inputs.slice(0, i, i + batch_size);
    auto y = inputs.narrow(0, i, batch_size);
  }
  // CHECK: // accel-migrate(accelerate-manual-batching): batches sliced by hand
  // CHECK-NEXT: for (int64_t i = 0; i < 1000; i += batch_size) {
  // CHECK-NEXT: auto x = inputs.slice(0, i, i + batch_size);
  auto loader = external_loader();
  for (auto& batch : *loader) {
  }
  // CHECK: // accel-migrate(accelerate-unprepared-loader):
  // CHECK-NEXT: for (auto& batch : *loader) {
  return 0;
}
// DIAG: manual_batching.cpp:[[@LINE-14]]:3: warning: {{.*}} [accelerate-manual-batching]
// DIAG: manual_batching.cpp:[[@LINE-7]]:3: warning: {{.*}} [accelerate-unprepared-loader]
// DIAG2: warning: {{.*}} [accelerate-manual-batching]
// DIAG2: warning: {{.*}} [accelerate-unprepared-loader]
