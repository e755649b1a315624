// A member created only on some paths, or outside its class, is never prepared on a
// pointer that may still be null: the tool warns where it cannot tell.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

// Created only when it does not exist yet: after the `if`, the tool cannot tell.
class Lazy {
 public:
  void fit(torch::Tensor x) {
    if (!model_)
      model_ = std::make_shared<NetImpl>();
    // DIAG: prepare_created_maybe.cpp:[[@LINE-2]]:5: warning: this creates the member only on some paths{{.*}} [accelerate-prepare]
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.1));
    optimizer_->zero_grad();
    model_->forward(x).sum().backward();
    optimizer_->step();
  }
  // CHECK: optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.1));
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(optimizer_);
  // CHECK-NEXT: optimizer_->zero_grad();

 private:
  std::shared_ptr<NetImpl> model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
};

// Created by code outside the class: nothing in the class can prepare it.
struct Holder {
  Holder() {}
  // CHECK: Holder() {}
  Net* model = nullptr;
  // DIAG: prepare_created_maybe.cpp:[[@LINE-1]]:8: warning: this member is null when its class is constructed and no member function of the class creates it{{.*}} [accelerate-prepare]
};

// One constructor creates the model, the other leaves it null: prepared in the first only.
class TwoWays {
 public:
  TwoWays() { model_ = std::make_shared<NetImpl>(); model_->train(); }
  // CHECK: TwoWays() { model_ = std::make_shared<NetImpl>(); model_->train(); accelerate::Accelerator::current().prepare(model_); }
  explicit TwoWays(int) {}
  // DIAG: prepare_created_maybe.cpp:[[@LINE-1]]:12: warning: this constructor leaves 'model_' null while another one creates it{{.*}} [accelerate-prepare]
  // CHECK: explicit TwoWays(int) {}

 private:
  std::shared_ptr<NetImpl> model_;
};

int main() {
  Lazy l;
  l.fit(torch::ones({4, 1}));
  TwoWays w;
  Holder h;
  h.model = new Net();
  (*h.model)->train();
  return 0;
}
