// accelerate-backward: a loss the tool sees reduced as a sum over its batch is given to
// accelerator.backward with accelerate::LossReduction::Sum (averaging the processes'
// gradients would train with 1/N of the original's); a default-reduced LibTorch loss or a
// mean needs nothing; a loss from a function whose reduction the tool cannot see gets a
// warning naming the mechanism (issue 47, item 2).
// RUN: %check-rule
#include <torch/torch.h>

torch::Tensor custom_loss(const torch::Tensor& out, const torch::Tensor& y);
torch::Tensor mean_of_squares(const torch::Tensor& out, const torch::Tensor& y) {
  return (out + y).mean();
}

void step(torch::Tensor out, torch::Tensor y) {
  torch::nn::CrossEntropyLoss criterion;
  torch::nn::MSELoss summed(torch::nn::MSELossOptions().reduction(torch::kSum));
  auto a = torch::nll_loss(out, y, {}, torch::Reduction::Sum);
  a.backward();
  // CHECK: accelerate::Accelerator::current().backward(a, accelerate::LossReduction::Sum);
  auto b = summed(out, y);
  b.backward();
  // CHECK: accelerate::Accelerator::current().backward(b, accelerate::LossReduction::Sum);
  auto per_sample = torch::mse_loss(out, y, torch::Reduction::None);
  per_sample.sum().backward();
  // CHECK: accelerate::Accelerator::current().backward(per_sample.sum(), accelerate::LossReduction::Sum);
  criterion(out, y).backward();
  // CHECK: accelerate::Accelerator::current().backward(criterion(out, y));
  auto c = torch::mse_loss(out, y) + torch::nn::functional::nll_loss(out, y);
  c.backward();
  // CHECK: accelerate::Accelerator::current().backward(c);
  mean_of_squares(out, y).backward();
  // CHECK: accelerate::Accelerator::current().backward(mean_of_squares(out, y));
  auto d = custom_loss(out, y);
  d.backward();
  // CHECK: accelerate::Accelerator::current().backward(d);
  // DIAG: backward_sum.cpp:[[@LINE-2]]:3: warning: the tool cannot see how this loss is reduced over its batch: a sum-reduced loss would be averaged over processes{{.*}} [accelerate-backward]
  // Assigned later: from a declaration without a value, and scaled after a sum.
  torch::Tensor e;
  e = summed(out, y);
  e.backward();
  // CHECK: accelerate::Accelerator::current().backward(e, accelerate::LossReduction::Sum);
  auto f = torch::nll_loss(out, y, {}, torch::Reduction::Sum);
  f = f / 8.0;
  f.backward();
  // DIAG: backward_sum.cpp:[[@LINE-1]]:3: warning: the tool cannot see how this loss is reduced{{.*}} [accelerate-backward]
  // CHECK: accelerate::Accelerator::current().backward(f);
}
