// No main, and no code that reaches the Accelerator: only the comment the tool writes above
// its warning names the call (current_text.test).
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

// Created by code outside the class: nothing in the class can prepare it.
struct Holder {
  Holder() {}
  Net* model = nullptr;
};

void use() {
  Holder h;
  h.model = new Net();
  (*h.model)->train();
}
