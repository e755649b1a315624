// main's `accelerator` is named only where it is in scope: in main's body after its
// declaration, never in helpers, lambdas or local classes (they use current()). Globals
// that only helpers use are still prepared, at the top of main right after the
// Accelerator (issue: `accelerator.prepare(...)` came before its declaration).
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

namespace app {
torch::nn::Linear model(4, 1);
torch::optim::SGD optimizer(model->parameters(), 0.1);
}  // namespace app

void train_step(torch::Tensor x, torch::Tensor y) {
  app::optimizer.zero_grad();
  auto loss = torch::mse_loss(app::model->forward(x), y);
  loss.backward();
  // CHECK: accelerate::Accelerator::current().backward(loss);
  app::optimizer.step();
}

int main() {
  // CHECK: int main() {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  // CHECK-NEXT: accelerator.prepare(app::model, app::optimizer);
  // CHECK-NEXT: app::model->train();
  app::model->train();
  for (int i = 0; i < 3; ++i)
    train_step(torch::ones({2, 4}), torch::ones({2, 1}));
  auto step = [](torch::Tensor l) { l.backward(); };
  // CHECK: auto step = [](torch::Tensor l) { accelerate::Accelerator::current().backward(l); };
  struct Local {
    static void go(torch::Tensor l) { l.backward(); }
    // CHECK: static void go(torch::Tensor l) { accelerate::Accelerator::current().backward(l); }
  };
  auto loss = torch::ones({1});
  loss.backward();
  // CHECK: accelerator.backward(loss);
  step(loss);
  Local::go(loss);
  return 0;
}
