// A member the constructor creates on every path that goes on (the other paths throw, or
// call a function that does not return: an option with no valid value) exists when the
// constructor ends: prepared there, with the model. A path that neither creates it nor
// leaves keeps the warning (prepare_created_maybe.cpp).
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

#include <cstdlib>
#include <string>

class Trainer {
 public:
  explicit Trainer(const std::string& name) : model_(torch::nn::Linear(3, 1)) {
    if (name == "sgd") {
      optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.1));
    } else if (name == "sgd-slow") {
      optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.01));
    } else {
      throw std::string("unknown optimizer ") + name;
    }
  }
  // CHECK: throw std::string("unknown optimizer ") + name;
  // CHECK-NEXT: }
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model_, optimizer_);
  // CHECK-NEXT: }

  explicit Trainer(int lr_tenths) : model_(torch::nn::Linear(3, 1)) {
    if (lr_tenths > 0)
      optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(lr_tenths / 10.0));
    else
      std::abort();
  }
  // CHECK: std::abort();
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model_, optimizer_);
  // CHECK-NEXT: }

  void step(torch::Tensor x) {
    optimizer_->zero_grad();
    model_->forward(x).sum().backward();
    optimizer_->step();
  }

 private:
  torch::nn::Linear model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

int main() {
  Trainer t("sgd");
  t.step(torch::randn({4, 3}));
  return 0;
}
