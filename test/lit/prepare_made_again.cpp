// A model or optimizer is prepared before its first training, and again after each
// statement that makes it anew (re-assignment, reset of a holder, make_shared again, a
// load into the fresh object, an optimizer rebuilt for fine-tuning): a model that trains is
// never left unprepared for a backward pass (issue 47).
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Net);

torch::Tensor batch();

// Re-assignment of a holder, then a load into it (the "60-minute blitz" style): the training
// above gets its own prepare; the fresh model is prepared after its load.
int main() {
  const std::string PATH = "./net.pt";
  Net net;
  torch::optim::SGD optimizer(net->parameters(), 0.1);
  optimizer.zero_grad();
  net->forward(batch()).sum().backward();
  optimizer.step();
  torch::save(net, PATH);
  net = Net();
  torch::load(net, PATH);
  net->eval();
  // CHECK: torch::optim::SGD optimizer(net->parameters(), 0.1);
  // CHECK-NEXT: accelerator.prepare(net, optimizer);
  // CHECK-NEXT: optimizer.zero_grad();
  // CHECK: accelerator.save(net, PATH);
  // CHECK-NEXT: net = Net();
  // CHECK-NEXT: accelerator.wait_for_everyone();
  // CHECK-NEXT: torch::load(net, PATH);
  // CHECK-NEXT: accelerator.prepare(net);
  // CHECK-NEXT: net->eval();
  return 0;
}

// reset() of a smart pointer, and an optimizer rebuilt for the second phase.
void reset_and_finetune() {
  std::shared_ptr<NetImpl> model = std::make_shared<NetImpl>();
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  optimizer.step();
  model.reset(new NetImpl());
  model->train();
  torch::optim::SGD finetune(model->parameters(), 0.01);
  finetune.step();
  // CHECK: torch::optim::SGD optimizer(model->parameters(), 0.1);
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model, optimizer);
  // CHECK-NEXT: optimizer.step();
  // CHECK-NEXT: model.reset(new NetImpl());
  // CHECK-NEXT: model->train();
  // CHECK-NEXT: torch::optim::SGD finetune(model->parameters(), 0.01);
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model, finetune);
  // CHECK-NEXT: finetune.step();
}

// make_shared again, its optimizer assigned anew, both then trained.
void make_shared_again() {
  auto model = std::make_shared<NetImpl>();
  auto optimizer = std::make_shared<torch::optim::SGD>(model->parameters(), 0.1);
  optimizer->step();
  model = std::make_shared<NetImpl>();
  optimizer = std::make_shared<torch::optim::SGD>(model->parameters(), 0.1);
  optimizer->step();
  // CHECK: auto optimizer = std::make_shared<torch::optim::SGD>(model->parameters(), 0.1);
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model, optimizer);
  // CHECK-NEXT: optimizer->step();
  // CHECK-NEXT: model = std::make_shared<NetImpl>();
  // CHECK-NEXT: optimizer = std::make_shared<torch::optim::SGD>(model->parameters(), 0.1);
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model, optimizer);
  // CHECK-NEXT: optimizer->step();
}

// A fresh model loaded from a checkpoint nobody here writes: prepared after the load, no wait.
void load_into_fresh(Net& trained) {
  Net model;
  model->to(torch::kCPU);
  model = Net();
  torch::load(model, "pretrained.pt");
  model->eval();
  // CHECK: model = Net();
  // CHECK-NEXT: torch::load(model, "pretrained.pt");
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(model);
  // CHECK-NEXT: model->eval();
}

// A helper of this file trains: the objects are prepared before the call, not after a later
// object's creation.
void fit(Net& net, torch::optim::SGD& optimizer) {
  optimizer.zero_grad();
  net->forward(batch()).sum().backward();
  optimizer.step();
}
void helper_trains() {
  Net net;
  torch::optim::SGD optimizer(net->parameters(), 0.1);
  fit(net, optimizer);
  Net student;
  student->train();
  // CHECK: torch::optim::SGD optimizer(net->parameters(), 0.1);
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(net, optimizer);
  // CHECK-NEXT: fit(net, optimizer);
  // CHECK-NEXT: Net student;
  // CHECK-NEXT: accelerate::Accelerator::current().prepare(student);
}

// Made anew and trained inside one loop: the tool does not write into the loop's body.
void folds() {
  Net net;
  net->train();
  for (int fold = 0; fold < 3; ++fold) {
    net = Net();
    torch::optim::SGD optimizer(net->parameters(), 0.1);
    optimizer.step();
  }
  // DIAG: prepare_made_again.cpp:[[@LINE-5]]:3: warning: this statement makes 'net' anew and trains it inside{{.*}} [accelerate-prepare]
}
