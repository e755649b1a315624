// accelerate-autograd-backward: torch::autograd::backward({loss}) -> accelerator.backward(loss),
// which scales the loss for gradient accumulation and fp16 as Tensor::backward's migration
// does; several tensors at once, or `inputs`, are left with a warning.
// RUN: %check-rule
#include <torch/torch.h>

namespace ag = torch::autograd;

void step(torch::Tensor loss) {
  torch::autograd::backward({loss});
  // CHECK: accelerate::Accelerator::current().backward(loss);
}

int main() {
  torch::Tensor loss, aux, grad;
  torch::autograd::backward({loss});
  // CHECK: accelerator.backward(loss);
  torch::autograd::backward({loss}, {grad});
  // CHECK: accelerator.backward(loss, grad);
  ag::backward({loss.mean()}, {}, /*retain_graph=*/true);
  // CHECK: accelerator.backward(loss.mean(), {}, /*retain_graph=*/true);
  torch::autograd::backward({loss}, {grad}, true, true);
  // CHECK: accelerator.backward(loss, grad, true, true);
  torch::autograd::backward({loss, aux});
  // DIAG: autograd_backward.cpp:[[@LINE-1]]:3: warning: backward of several tensors at once {{.*}} [accelerate-autograd-backward]
  // CHECK: torch::autograd::backward({loss, aux});
  std::vector<torch::Tensor> losses{loss};
  torch::autograd::backward(losses);
  // DIAG: autograd_backward.cpp:[[@LINE-1]]:3: warning: backward of several tensors at once {{.*}} [accelerate-autograd-backward]
  torch::autograd::backward({loss}, {}, false, false, {aux});
  // DIAG: autograd_backward.cpp:[[@LINE-1]]:3: warning: backward with `inputs` {{.*}} [accelerate-autograd-backward]
  step(loss);
  return 0;
}
