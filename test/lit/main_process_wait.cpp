// accelerate-main-process: a file the main process writes and every process then reads
// (the same path: variable, literal or expression) gets accelerator.wait_for_everyone()
// before the statement that reads it, in the innermost block holding both (issue 47).
// RUN: %check-rule
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

bool improved();

int main() {
  std::string dir = "out";
  Net model;
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  for (int epoch = 0; epoch < 2; ++epoch) {
    optimizer.step();
    if (improved())
      torch::save(optimizer, dir + "/opt.pt");
  }
  torch::load(optimizer, dir + "/opt.pt");
  // CHECK: accelerator.wait_for_everyone();
  // CHECK-NEXT: torch::load(optimizer, dir + "/opt.pt");

  // The same archive read back at once, in the same block.
  torch::serialize::OutputArchive out;
  out.save_to("state.pt");
  torch::serialize::InputArchive in;
  in.load_from("state.pt");
  // CHECK: out.save_to("state.pt");
  // CHECK-NEXT: }
  // CHECK-NEXT: torch::serialize::InputArchive in;
  // CHECK-NEXT: accelerator.wait_for_everyone();
  // CHECK-NEXT: in.load_from("state.pt");

  // Another file, and a read before the write: no wait.
  torch::load(optimizer, "other.pt");
  torch::load(model, "later.pt");
  torch::save(model, "later.pt");
  // CHECK: torch::load(optimizer, "other.pt");
  // CHECK-NEXT: torch::load(model, "later.pt");
  // CHECK-NEXT: accelerator.save(model, "later.pt");
  return 0;
}
// CHECK-NOT: wait_for_everyone
