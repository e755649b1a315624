// Objects that exist before main (namespace-scope variables, static members, and the
// members of global or static objects, pytorch/examples style) are initialised during
// static initialisation, when no Accelerator exists: current() there would abort the
// program before main. Their device is taken from an expression that is safe then (the
// CPU until an Accelerator exists), and main sets them right after the Accelerator.
// RUN: %check-rule
// (migrate, migrate the output again, FileCheck the text and the warnings: see
// Inputs/check_rule.sh)
#include <torch/torch.h>

struct Options {
  int epochs = 2;
  torch::DeviceType device = torch::kCUDA;
  // CHECK: torch::DeviceType device = (accelerate::Accelerator::exists() ? accelerate::Accelerator::current().device() : torch::Device(torch::kCPU)).type();
  torch::Device eval_device{torch::kCUDA};
  // CHECK: torch::Device eval_device{(accelerate::Accelerator::exists() ? accelerate::Accelerator::current().device() : torch::Device(torch::kCPU))};
  // CHECK: // accel-migrate(accelerate-device): this runs before main for an object that exists before main
  // CHECK-NEXT: torch::Tensor scale = torch::ones({1}, (accelerate::Accelerator::exists()
  torch::Tensor scale = torch::ones({1}, torch::kCUDA);
};
static Options options;

struct Settings {
  Options opts;  // a member of a global object
  static torch::Device shared;
  static inline torch::Device pinned{torch::kCUDA};
  // CHECK: static inline torch::Device pinned{torch::kCPU};
};
torch::Device Settings::shared(torch::kCUDA);
// CHECK: torch::Device Settings::shared(torch::kCPU);
Settings settings;

class Engine {
 public:
  Engine() : device_(torch::kCUDA) {}
  // CHECK: Engine() : device_((accelerate::Accelerator::exists() ? accelerate::Accelerator::current().device() : torch::Device(torch::kCPU))) {}
 private:
  torch::Device device_;
};
// DIAG: before_main.cpp:[[@LINE+3]]:1: warning: this object is constructed before main, when no Accelerator exists: its device member 'device_' starts on the CPU
// CHECK: // accel-migrate(accelerate-custom-device): this object is constructed before main
// CHECK-NEXT: Engine engine;
Engine engine;

namespace {
torch::Tensor weights = torch::ones({3}, torch::kCUDA);
// CHECK: torch::Tensor weights = torch::ones({3}, (accelerate::Accelerator::exists() ? accelerate::Accelerator::current().device() : torch::Device(torch::kCPU)));
torch::Tensor bias = torch::zeros({3}).cuda();
// CHECK: torch::Tensor bias = torch::zeros({3}).to((accelerate::Accelerator::exists() ? accelerate::Accelerator::current().device() : torch::Device(torch::kCPU)));
}  // namespace

// A class that prepares its members in its constructor: not while static initialisation
// runs (the global is reported).
class Trainer {
 public:
  Trainer() { optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), 0.1); }
  // CHECK: Trainer() { optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), 0.1); if (accelerate::Accelerator::exists()) accelerate::Accelerator::current().prepare(model_, optimizer_); }
 private:
  torch::nn::Linear model_{4, 1};
  std::unique_ptr<torch::optim::SGD> optimizer_;
};
// CHECK: // accel-migrate(accelerate-prepare): this object is constructed before main
// CHECK-NEXT: Trainer global_trainer;
Trainer global_trainer;

// A class only built inside main keeps the plain form.
struct RunState {
  torch::Device device{torch::kCUDA};
  // CHECK: torch::Device device{accelerate::Accelerator::current().device()};
};

int main() {
  // CHECK: int main() {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  // CHECK-NEXT: Settings::pinned = accelerator.device();
  // CHECK-NEXT: Settings::shared = accelerator.device();
  // CHECK-NEXT: options.device = accelerator.device().type();
  // CHECK-NEXT: settings.opts.device = accelerator.device().type();
  // CHECK-NEXT: options.eval_device = accelerator.device();
  // CHECK-NEXT: settings.opts.eval_device = accelerator.device();
  // CHECK-NEXT: weights = weights.to(accelerator.device());
  // CHECK-NEXT: bias = bias.to(accelerator.device());
  // CHECK-NEXT: Options local;
  Options local;
  RunState state;
  auto x = torch::ones({3}).to(options.device);
  return 0;
}
