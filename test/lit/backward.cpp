// loss.backward(...) -> accelerator.backward(loss, ...), everywhere the call is written.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct Graph {
  void backward();  // not a tensor: untouched
};

void helper(torch::Tensor loss) {
  loss.backward();
  // CHECK: accelerate::Accelerator::current().backward(loss);
}

template <typename T>
void generic(T& loss) {
  loss.backward();
  // CHECK: accelerate::Accelerator::current().backward(loss);
}

int main() {
  // CHECK: int main() {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  torch::Tensor loss = torch::randn({1});
  torch::Tensor grad = torch::ones({1});
  loss.backward();
  // CHECK: accelerator.backward(loss);
  loss.backward(grad, true);
  // CHECK: accelerator.backward(loss, grad, true);
  (loss + loss).backward();
  // CHECK: accelerator.backward((loss + loss));
  torch::Tensor* p = &loss;
  p->backward();
  // CHECK: accelerator.backward(*p);
  auto step = [&]() { loss.backward(); };
  // CHECK: auto step = [&]() { accelerate::Accelerator::current().backward(loss); };
  Graph g;
  g.backward();
  // CHECK: g.backward();
  TORCH_CHECK(loss.defined(), "x");
  // CHECK: TORCH_CHECK(loss.defined(), "x");
  step();
  return 0;
}
// DIAG-NOT: warning:
