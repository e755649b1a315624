// Data loaders made before main (namespace-scope variables, static members, members of a
// global object) are initialised during static initialisation, when no Accelerator exists:
// `Accelerator::current().prepare_data_loader(...)` there would abort the program before
// main. They become accelerate::defer_data_loader(...) with the same arguments (it draws
// what make_data_loader draws there, and prepares the loader at its first use, after main
// made the Accelerator); a spelled-out loader type becomes `auto`, or the deferred type
// where the variable is declared more than once.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

using Mnist = torch::data::datasets::MNIST;

auto train_set = Mnist("data").map(torch::data::transforms::Stack<>());

auto train_loader = torch::data::make_data_loader(
    std::move(train_set), torch::data::DataLoaderOptions().batch_size(64));
// CHECK: auto train_loader = accelerate::defer_data_loader(
// CHECK-NEXT: std::move(train_set), torch::data::DataLoaderOptions().batch_size(64));

std::unique_ptr<torch::data::StatelessDataLoader<Mnist, torch::data::samplers::SequentialSampler>>
    test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        Mnist("data", Mnist::Mode::kTest), 100);
// CHECK: auto
// CHECK-NEXT: test_loader = accelerate::defer_data_loader<torch::data::samplers::SequentialSampler>(

const auto eval_loader = torch::data::make_data_loader(Mnist("data"), 10);
// CHECK: const auto eval_loader = accelerate::defer_data_loader(Mnist("data"), 10);

// Declared twice: both declarations name the deferred loader's type.
extern std::unique_ptr<torch::data::StatelessDataLoader<Mnist, torch::data::samplers::RandomSampler>> shared_loader;
std::unique_ptr<torch::data::StatelessDataLoader<Mnist, torch::data::samplers::RandomSampler>> shared_loader =
    torch::data::make_data_loader(Mnist("data"), 8);
// CHECK: extern accelerate::DeferredDataLoader<torch::data::datasets::MNIST, torch::data::samplers::RandomSampler, torch::data::DataLoaderOptions> shared_loader;
// CHECK-NEXT: accelerate::DeferredDataLoader<torch::data::datasets::MNIST, torch::data::samplers::RandomSampler, torch::data::DataLoaderOptions> shared_loader =
// CHECK-NEXT: accelerate::defer_data_loader(Mnist("data"), 8);

namespace {
auto hidden_loader = torch::data::make_data_loader(Mnist("data"), 16);
// CHECK: auto hidden_loader = accelerate::defer_data_loader(Mnist("data"), 16);
}  // namespace

struct Data {
  static std::unique_ptr<torch::data::StatelessDataLoader<Mnist, torch::data::samplers::RandomSampler>> loader;
  // CHECK: static accelerate::DeferredDataLoader<torch::data::datasets::MNIST, torch::data::samplers::RandomSampler, torch::data::DataLoaderOptions> loader;
  static inline auto inline_loader = torch::data::make_data_loader(Mnist("data"), 32);
  // CHECK: static inline auto inline_loader = accelerate::defer_data_loader(Mnist("data"), 32);
};
std::unique_ptr<torch::data::StatelessDataLoader<Mnist, torch::data::samplers::RandomSampler>> Data::loader =
    torch::data::make_data_loader(Mnist("data"), 4);
// CHECK: accelerate::DeferredDataLoader<torch::data::datasets::MNIST, torch::data::samplers::RandomSampler, torch::data::DataLoaderOptions> Data::loader =
// CHECK-NEXT: accelerate::defer_data_loader(Mnist("data"), 4);

// A member of a class that has an object before main.
struct Pipeline {
  std::unique_ptr<torch::data::StatelessDataLoader<Mnist, torch::data::samplers::RandomSampler>> loader =
      torch::data::make_data_loader(Mnist("data"), 2);
  // CHECK: accelerate::DeferredDataLoader<torch::data::datasets::MNIST, torch::data::samplers::RandomSampler, torch::data::DataLoaderOptions> loader =
  // CHECK-NEXT: accelerate::defer_data_loader(Mnist("data"), 2);
};
Pipeline pipeline;

// A loader that initialises nothing the tool can retype: left as it is, with a warning.
// DIAG: before_main_loaders.cpp:[[@LINE+3]]:19: warning: this data loader is made before main(), when no Accelerator exists yet, and does not initialise a variable or member the tool can retype
// CHECK: // accel-migrate(accelerate-data-loader): this data loader is made before main()
// CHECK-NEXT: bool has_loader = torch::data::make_data_loader(Mnist("data"), 4) != nullptr;
bool has_loader = torch::data::make_data_loader(Mnist("data"), 4) != nullptr;

int count_batches() {
  // A function-local static is made at the first call, after main made the Accelerator.
  static auto local_loader = torch::data::make_data_loader(Mnist("data"), 5);
  // CHECK: static auto local_loader = accelerate::Accelerator::current().prepare_data_loader(Mnist("data"), 5);
  int n = 0;
  for (auto& batch : *local_loader)
    ++n;
  for (auto& batch : *train_loader)
    ++n;
  return n;
}

int main() {
  // CHECK: int main() {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  // CHECK-NEXT: int n = count_batches();
  int n = count_batches();
  for (auto& batch : *test_loader)
    ++n;
  return n > 0 ? 0 : 1;
}
