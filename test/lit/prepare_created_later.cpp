// Models and optimizers that a class creates after its constructor (in compile(), fit(),
// a factory method; with new, make_shared, make_unique, reset) are prepared right after
// the statement that creates the last of them, never in the constructor on null pointers.
// A device member made with `new torch::Device(...)` becomes the accelerator's device.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

// Raw pointers, `{}`-initialised, created with new in compile().
class Regressor {
public:
    torch::Device *device;
    torch::nn::Linear *model{};
    torch::optim::SGD *optimizer{};

    Regressor() {
        device = new torch::Device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
    }
    // CHECK: device = new torch::Device(accelerate::Accelerator::current().device());
    // CHECK-NEXT: }

    void compile(double lr) {
        model = new torch::nn::Linear(1, 1);
        (*model)->to(*device);
        optimizer = new torch::optim::SGD((*model)->parameters(), lr);
    }
    // CHECK: void compile(double lr) {
    // CHECK-NEXT: model = new torch::nn::Linear(1, 1);
    // CHECK-NEXT: optimizer = new torch::optim::SGD((*model)->parameters(), lr);
    // CHECK-NEXT: accelerate::Accelerator::current().prepare(model, optimizer);
    // CHECK-NEXT: }

    void train(torch::Tensor x) {
        auto loss = (*model)(x.to(*device)).sum();
        optimizer->zero_grad();
        loss.backward();
        optimizer->step();
    }
};

// Smart pointers made in fit(); the optimizer chosen in an if/else (both branches create it).
class Classifier {
 public:
  explicit Classifier(bool adam) : adam_(adam) {}
  void fit(torch::Tensor x) {
    model_ = std::make_shared<NetImpl>();
    model_->train();
    if (adam_)
      optimizer_.reset(new torch::optim::Adam(model_->parameters()));
    else
      optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.1));
    optimizer_->zero_grad();
  }
  // CHECK: optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.1));
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model_, optimizer_);
  // CHECK-NEXT: optimizer_->zero_grad();

 private:
  bool adam_;
  std::shared_ptr<NetImpl> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// The model exists after construction (a holder made in the constructor), the optimizer
// only after compile() (an out-of-line definition): each is prepared where it exists.
class Trainer {
 public:
  Trainer() : model_(Net()) {}
  // CHECK: Trainer() : model_(Net()) { accelerate::Accelerator::current().prepare(model_); }
  void compile();
  void step(torch::Tensor x) {
    optimizer_->zero_grad();
    model_->forward(x).sum().backward();
    optimizer_->step();
  }

 private:
  Net model_;
  torch::optim::SGD* optimizer_ = nullptr;
};

void Trainer::compile() {
  optimizer_ = new torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.01));
}
// CHECK: void Trainer::compile() {
// CHECK-NEXT: optimizer_ = new torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.01));
// CHECK-NEXT: accelerate::Accelerator::current().prepare(optimizer_);
// CHECK-NEXT: }

int main() {
  Regressor r;
  r.compile(0.001);
  r.train(torch::ones({4, 1}));
  Classifier c(true);
  c.fit(torch::ones({4, 1}));
  Trainer t;
  t.compile();
  t.step(torch::ones({4, 1}));
  return 0;
}
