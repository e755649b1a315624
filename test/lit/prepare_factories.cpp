// Objects made by factory calls, chosen in an else-if chain, held by global raw pointers
// that a free compile() creates, or by a local smart pointer assigned after its
// declaration: each is prepared after the statement that creates the last of them.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>
#include <cstdio>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

std::shared_ptr<NetImpl> buildModel() { return std::make_shared<NetImpl>(); }

class Experiment {
 public:
  Experiment(int kind) : kind_(kind) {}
  void setup() {
    model_ = buildModel();
    if (kind_ == 0)
      optimizer_ = std::make_shared<torch::optim::Adam>(model_->parameters());
    else if (kind_ == 1)
      optimizer_ = std::make_shared<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.1));
    else
      optimizer_ = std::make_shared<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.01));
    printf("ready\n");
  }
  // CHECK: optimizer_ = std::make_shared<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(0.01));
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model_, optimizer_);
  // CHECK-NEXT: if (accelerate::Accelerator::current().is_main_process()) {
  void step(torch::Tensor x) {
    optimizer_->zero_grad();
    model_->forward(x).sum().backward();
    optimizer_->step();
  }

 private:
  int kind_;
  std::shared_ptr<NetImpl> model_;
  std::shared_ptr<torch::optim::Optimizer> optimizer_;
};

Net* model = nullptr;
torch::optim::SGD* optimizer = nullptr;

void compile(double lr) {
  model = new Net();
  optimizer = new torch::optim::SGD((*model)->parameters(), torch::optim::SGDOptions(lr));
}

int main() {
  Experiment e(1);
  e.setup();
  e.step(torch::ones({2, 4}));
  compile(0.1);
  // CHECK: compile(0.1);
  // CHECK-NEXT: accelerator.prepare(model, optimizer);
  auto loss = (*model)->forward(torch::ones({2, 4})).sum();
  loss.backward();
  optimizer->step();

  std::shared_ptr<NetImpl> local;
  std::unique_ptr<torch::optim::SGD> opt;
  local = buildModel();
  opt.reset(new torch::optim::SGD(local->parameters(), torch::optim::SGDOptions(0.1)));
  // CHECK: opt.reset(new torch::optim::SGD(local->parameters(), torch::optim::SGDOptions(0.1)));
  // CHECK-NEXT: accelerator.prepare(local, opt);
  local->forward(torch::ones({2, 4})).sum().backward();
  opt->step();
  return 0;
}
