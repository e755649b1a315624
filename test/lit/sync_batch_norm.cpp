// accelerate-sync-batch-norm: torch::nn::BatchNorm1d/2d/3d -> accelerate::nn::SyncBatchNorm1d/2d/3d (statistics over the global batch).
// RUN: %check-rule
// --keep-batch-norm leaves every batch norm as written and says nothing about them.
// RUN: %accel-migrate --keep-batch-norm %s -o %t.keep.cpp -- %stub-flags 2> %t.keep.err
// RUN: %strip %t.keep.cpp | FileCheck %s --check-prefix=KEEP
// RUN: %strip %t.keep.cpp | grep -v "^//" | not grep SyncBatchNorm
// RUN: not grep sync-batch-norm %t.keep.err
#include <torch/torch.h>
#include <memory>

struct Net : torch::nn::Module {
  Net() {
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(8).momentum(0.2)));
    // DIAG: sync_batch_norm.cpp:[[@LINE-1]]:34: note: batch norm now takes its statistics over the global batch on every process {{.*}} [accelerate-sync-batch-norm]
    // CHECK: bn1 = register_module("bn1", accelerate::nn::SyncBatchNorm2d(torch::nn::BatchNorm2dOptions(8).momentum(0.2)));
    head = register_module("head", torch::nn::Sequential(torch::nn::Linear(8, 4), torch::nn::BatchNorm1d(4), torch::nn::ReLU()));
    // CHECK: head = register_module("head", torch::nn::Sequential(torch::nn::Linear(8, 4), accelerate::nn::SyncBatchNorm1d(4), torch::nn::ReLU()));
    deep = std::make_shared<torch::nn::BatchNorm3dImpl>(3);
    // CHECK: deep = std::make_shared<accelerate::nn::SyncBatchNorm3dImpl>(3);
  }
  torch::nn::BatchNorm2d bn1{nullptr};
  // CHECK: accelerate::nn::SyncBatchNorm2d bn1{nullptr};
  // KEEP: torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential head{nullptr};
  std::shared_ptr<torch::nn::BatchNorm3dImpl> deep;
  // CHECK: std::shared_ptr<accelerate::nn::SyncBatchNorm3dImpl> deep;
};

using namespace torch::nn;

// Spelled without its namespace, as a parameter and a return type.
BatchNorm1d widen(const BatchNorm1d& bn) { return bn; }
// CHECK: accelerate::nn::SyncBatchNorm1d widen(const accelerate::nn::SyncBatchNorm1d& bn) { return bn; }

int main() {
  auto net = std::make_shared<Net>();
  return 0;
}
