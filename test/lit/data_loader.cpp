// make_data_loader -> accelerator.prepare_data_loader with the same arguments; spelled-out
// loader types become auto.
// RUN: %check-rule
// RUN: %accel-migrate %t.cpp -o %t2.cpp -- %stub-flags 2> %t2.err
// RUN: diff %t.cpp %t2.cpp
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

using namespace torch::data;

struct Holder {
  std::unique_ptr<StatelessDataLoader<datasets::MNIST, samplers::RandomSampler>> loader;
  // CHECK: decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<torch::data::samplers::RandomSampler>(std::declval<torch::data::datasets::MNIST>(), std::declval<torch::data::DataLoaderOptions>())) loader;
  Holder() : loader(make_data_loader(datasets::MNIST("d"), 8)) {}
  // CHECK: Holder() : loader(accelerate::Accelerator::current().prepare_data_loader(datasets::MNIST("d"), 8)) {}
};

using Loader = StatelessDataLoader<datasets::MNIST, samplers::SequentialSampler>;
struct Assigned {
  std::unique_ptr<Loader> loader;
  // CHECK: decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<torch::data::samplers::SequentialSampler>(std::declval<torch::data::datasets::MNIST>(), std::declval<torch::data::DataLoaderOptions>())) loader;
  Assigned() {
    loader = make_data_loader<samplers::SequentialSampler>(datasets::MNIST("d"), 8);
    // CHECK: loader = accelerate::Accelerator::current().prepare_data_loader<samplers::SequentialSampler>(datasets::MNIST("d"), 8);
  }
};
// DIAG-NOT: warning:
// A second run knows the member loaders as prepared: no unprepared-loader warning.
// RUN: FileCheck %s --check-prefix=AGAIN --allow-empty < %t2.err
// AGAIN-NOT: accelerate-unprepared-loader

auto make_loader() {
  return torch::data::make_data_loader(datasets::MNIST("d"), DataLoaderOptions().batch_size(4));
  // CHECK: return accelerate::Accelerator::current().prepare_data_loader(datasets::MNIST("d"), DataLoaderOptions().batch_size(4));
}

int main() {
  auto dataset = datasets::MNIST("data").map(transforms::Stack<>());
  auto train_loader = torch::data::make_data_loader(std::move(dataset), 64);
  // CHECK: auto train_loader = accelerator.prepare_data_loader(std::move(dataset), 64);
  auto seq = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      datasets::MNIST("data"), DataLoaderOptions().batch_size(64).workers(2));
  // CHECK: auto seq = accelerator.prepare_data_loader<torch::data::samplers::SequentialSampler>(
  std::unique_ptr<StatelessDataLoader<datasets::MNIST, samplers::SequentialSampler>> spelled =
      make_data_loader<samplers::SequentialSampler>(datasets::MNIST("data"), 32);
  // CHECK: auto spelled =
  // CHECK-NEXT: accelerator.prepare_data_loader<samplers::SequentialSampler>(datasets::MNIST("data"), 32);
  for (auto& batch : *train_loader) {
  }
  Holder h;
  for (auto& batch : *h.loader) {
  }
  Assigned a;
  for (auto& batch : *a.loader) {
  }
  return 0;
}
