// Several declarators in one declaration: when the loaders among them get the prepared
// loader's type, the others keep theirs (the declaration is split); when all of them are
// prepared loaders, the shared type changes once. Both orders.
// RUN: %check-rule
// RUN: FileCheck %s --check-prefix=DIAG --allow-empty < %t.err
// RUN: %accel-migrate %t.cpp -o %t2.cpp -- %stub-flags
// RUN: diff %t.cpp %t2.cpp
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

using namespace torch::data;
using Loader = StatelessDataLoader<datasets::MNIST, samplers::RandomSampler>;
std::unique_ptr<Loader> external_loader();

class Trainer {
 public:
  Trainer() {
    train_loader_ = make_data_loader(datasets::MNIST("d"), 64);
    eval_loader_ = make_data_loader(datasets::MNIST("d", datasets::MNIST::Mode::kTest), 64);
  }
  // Both are prepared: one type for both.
  decltype(make_data_loader(datasets::MNIST("d"), 64)) train_loader_, eval_loader_;
  // CHECK: decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<torch::data::samplers::RandomSampler>(std::declval<torch::data::datasets::MNIST>(), std::declval<torch::data::DataLoaderOptions>())) train_loader_, eval_loader_;
};

class EvalFirst {
 public:
  EvalFirst() {
    train_ = make_data_loader(datasets::MNIST("d"), 64);
    eval_ = external_loader();
  }
  // Only the second one is prepared here.
  std::unique_ptr<Loader> eval_, train_;
  // CHECK: std::unique_ptr<Loader> eval_;
  // CHECK-NEXT: decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<torch::data::samplers::RandomSampler>(std::declval<torch::data::datasets::MNIST>(), std::declval<torch::data::DataLoaderOptions>())) train_;
};

class OnlyTrain {
 public:
  OnlyTrain() {
    eval_loader_ = external_loader();
    train_loader_ = make_data_loader(datasets::MNIST("d"), 64);
  }
  decltype(make_data_loader(datasets::MNIST("d"), 64)) train_loader_, eval_loader_;
  // CHECK: decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<torch::data::samplers::RandomSampler>(std::declval<torch::data::datasets::MNIST>(), std::declval<torch::data::DataLoaderOptions>())) train_loader_;
  // CHECK-NEXT: decltype(make_data_loader(datasets::MNIST("d"), 64)) eval_loader_;
};

// A dataset in an anonymous namespace is named as written.
namespace {
struct Local : datasets::MNIST {
  using MNIST::MNIST;
};
}  // namespace
struct UsesLocal {
  UsesLocal() { local_ = make_data_loader(Local("d"), 8); }
  std::unique_ptr<StatelessDataLoader<Local, samplers::RandomSampler>> local_;
  // CHECK: decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<torch::data::samplers::RandomSampler>(std::declval<Local>(), std::declval<torch::data::DataLoaderOptions>())) local_;
};

static std::unique_ptr<Loader> g_train, g_other;
// CHECK: static decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<torch::data::samplers::RandomSampler>(std::declval<torch::data::datasets::MNIST>(), std::declval<torch::data::DataLoaderOptions>())) g_train;
// CHECK-NEXT: static std::unique_ptr<Loader> g_other;

int main() {
  std::unique_ptr<Loader> first = make_data_loader(datasets::MNIST("d"), 8), second = external_loader();
  // CHECK: auto first = accelerator.prepare_data_loader(datasets::MNIST("d"), 8);
  // CHECK-NEXT: std::unique_ptr<Loader> second = external_loader();
  std::unique_ptr<Loader> other = external_loader(), mine = make_data_loader(datasets::MNIST("d"), 8);
  // CHECK: std::unique_ptr<Loader> other = external_loader();
  // CHECK-NEXT: auto mine = accelerator.prepare_data_loader(datasets::MNIST("d"), 8);
  std::unique_ptr<Loader> a = make_data_loader(datasets::MNIST("d"), 8), b = make_data_loader(datasets::MNIST("e"), 8);
  // CHECK: auto a = accelerator.prepare_data_loader(datasets::MNIST("d"), 8), b = accelerator.prepare_data_loader(datasets::MNIST("e"), 8);
  g_train = make_data_loader(datasets::MNIST("d"), 8);
  g_other = external_loader();
  torch::Device device(torch::kCUDA);
  for (auto& batch : *first) {
    torch::Tensor x, y = batch.data.to(device);
    // CHECK: torch::Tensor x, y = batch.data;
  }
  return 0;
}
// DIAG-NOT: declares a data loader together
