// Models and optimizers held by a class are prepared at the end of its constructors.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

class Trainer {
 public:
  Trainer() {
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.1));
  }
  // CHECK: optimizer_ = std::make_unique<torch::optim::SGD>
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model_, optimizer_);
  // CHECK-NEXT: }
  explicit Trainer(double lr) : optimizer_(nullptr) { optimizer_.reset(new torch::optim::SGD(model_->parameters(), lr)); }
  // CHECK: explicit Trainer(double lr) : optimizer_(nullptr) { optimizer_.reset(new torch::optim::SGD(model_->parameters(), lr)); accelerate::Accelerator::current().prepare(model_, optimizer_); }

 private:
  Net model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
};

struct NoCtor {
  Net model;
  torch::optim::Adam opt{model->parameters()};
};
// DIAG: prepare_members.cpp:[[@LINE-4]]:8: warning: this class holds a model or optimizer but has no constructor {{.*}} [accelerate-prepare]

int main() {
  Trainer t;
  return 0;
}
