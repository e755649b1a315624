// accelerate-device, a device from a string: `torch::Device d("cuda:0");`.
// Every form must give code that compiles: the migrated text is parsed again with errors
// fatal (Inputs/fixpoint.sh), as C++17 and as C++14 (LibTorch 1.13's standard, where a
// copy-initialisation is an elided copy of a converted temporary).
// RUN: %check-rule
// RUN: %check-rule -std=c++14
#include <torch/torch.h>

#include <string>

int main() {
  torch::Device direct("cuda:0");
  // CHECK: torch::Device direct(accelerator.device());
  torch::Device copied = torch::Device("cuda");
  // CHECK: torch::Device copied = accelerator.device();
  torch::Device converted = std::string("cuda:0");
  // CHECK: torch::Device converted = accelerator.device();
  torch::Device chosen(torch::cuda::is_available() ? "cuda:0" : "cpu");
  // CHECK: torch::Device chosen(accelerator.device());
  torch::Device cpu("cpu");
  // CHECK: torch::Device cpu("cpu");
  return direct.is_cuda() + copied.is_cuda() + converted.is_cuda() + chosen.is_cuda() + cpu.is_cuda();
}
