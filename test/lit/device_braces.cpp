// accelerate-device, a device initialised with braces: `torch::Device d{torch::kCUDA};`.
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

int main() {
  torch::Device braced{torch::kCUDA};
  // CHECK: torch::Device braced{accelerator.device()};
  torch::Device indexed{torch::kCUDA, 0};
  // CHECK: torch::Device indexed{accelerator.device()};
  torch::Device list = {torch::kCUDA};
  // CHECK: torch::Device list = {accelerator.device()};
  torch::Device list_indexed = {torch::kCUDA, 0};
  // CHECK: torch::Device list_indexed = {accelerator.device()};
  torch::Device cpu{torch::kCPU};
  // CHECK: torch::Device cpu{torch::kCPU};
  return braced.is_cuda() + indexed.is_cuda() + list.is_cuda() + list_indexed.is_cuda() + cpu.is_cuda();
}
