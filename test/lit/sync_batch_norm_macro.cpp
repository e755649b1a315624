// accelerate-sync-batch-norm: a batch norm constructed inside a macro body cannot be
// rewritten; the others are then left too (a converted member assigned from the macro's
// torch::nn::BatchNorm2d would not compile), with one warning that says so.
// RUN: %check-rule
#include <torch/torch.h>

#define MAKE_BN(n) torch::nn::BatchNorm2d(n)

struct Net : torch::nn::Module {
  Net() {
    bn = register_module("bn", MAKE_BN(8));
    // DIAG: sync_batch_norm_macro.cpp:[[@LINE-1]]:32: warning: batch norm written inside a macro: the batch norms of this file keep per-process statistics; replace them by accelerate::nn::SyncBatchNorm by hand [accelerate-sync-batch-norm]
    // CHECK: bn = register_module("bn", MAKE_BN(8));
  }
  torch::nn::BatchNorm2d bn{nullptr};
  // CHECK: torch::nn::BatchNorm2d bn{nullptr};
};

int main() {
  auto net = std::make_shared<Net>();
  return 0;
}
