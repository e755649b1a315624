// A single-device LibTorch training loop, written the way users write one: the input of
// the runtime-overhead, scaling and Python-comparison benchmarks (bench/run.py).
// The build runs accel-migrate on this file and compiles its output as
// overhead_train_migrated, so the benchmark compares the original with what the tool
// really produces. The model is a compute-bound MLP (1.6 M parameters) on synthetic data;
// the same model, data sizes, batch and steps are in bench/ddp_train.py.
//
//   overhead_train [--steps N] [--warmup N] [--batch-size N] [--seed N] [--hidden N]
// (--hidden widens the two hidden layers: bench/gpu/run.sh uses 4096 for a compute-bound
// step on a GPU, where the default model's step is a few kernel launches.)
// prints `bench: step_ms=<median> mean_ms=<mean> cpu_ms=<CPU time per step> steps=<timed steps>`
// and `final: loss=...`. CPU time (all threads of the process) is what a step costs when
// the process has its core to itself, so it stays meaningful on a shared, loaded machine.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Config {
  int steps = 40;  // timed steps
  int warmup = 5;  // untimed steps first (allocator, thread pools, first sync)
  int batch_size = 256;
  int64_t features = 512;
  int64_t hidden = 1024;
  int64_t classes = 10;
  uint64_t seed = 1;
};

Config parse_config(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      std::cout << "usage: overhead_train [--steps N] [--warmup N] [--batch-size N] [--seed N] [--hidden N]\n";
      std::exit(0);
    }
    if (i + 1 == argc) {
      std::cerr << "missing value for " << flag << "\n";
      std::exit(2);
    }
    const std::string value = argv[++i];
    try {
      if (flag == "--steps")
        c.steps = std::stoi(value);
      else if (flag == "--warmup")
        c.warmup = std::stoi(value);
      else if (flag == "--batch-size")
        c.batch_size = std::stoi(value);
      else if (flag == "--seed")
        c.seed = std::stoull(value);
      else if (flag == "--hidden")
        c.hidden = std::stoll(value);
      else {
        std::cerr << "unknown option " << flag << " (try --help)\n";
        std::exit(2);
      }
    } catch (const std::logic_error&) {
      std::cerr << "bad value '" << value << "' for " << flag << "\n";
      std::exit(2);
    }
  }
  if (c.steps < 1 || c.warmup < 1 || c.batch_size < 1 || c.hidden < 1) {
    std::cerr << "steps, warmup, batch size and hidden must be positive\n";
    std::exit(2);
  }
  return c;
}

}  // namespace

class SyntheticClasses : public torch::data::datasets::Dataset<SyntheticClasses> {
 public:
  SyntheticClasses(int64_t n, int64_t features, int64_t classes)
      : inputs_(torch::randn({n, features})), targets_(torch::randint(classes, {n})) {}

  torch::data::Example<> get(size_t index) override { return {inputs_[index], targets_[index]}; }
  torch::optional<size_t> size() const override { return inputs_.size(0); }

 private:
  torch::Tensor inputs_;
  torch::Tensor targets_;
};

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        fc3(register_module("fc3", torch::nn::Linear(hidden, out))) {}

  torch::Tensor forward(const torch::Tensor& x) { return fc3(torch::relu(fc2(torch::relu(fc1(x))))); }

  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Mlp);

int main(int argc, char** argv) {
  const Config cfg = parse_config(argc, argv);
  torch::manual_seed(cfg.seed);
  torch::Device device(torch::kCPU);
  if (torch::cuda::is_available()) device = torch::Device(torch::kCUDA);
  std::printf("device: %s\n", device.str().c_str());

  // Exactly warmup + steps batches in one epoch.
  const int64_t n = static_cast<int64_t>(cfg.batch_size) * (cfg.warmup + cfg.steps);
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      SyntheticClasses(n, cfg.features, cfg.classes).map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(cfg.batch_size));

  Mlp model(cfg.features, cfg.hidden, cfg.classes);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));

  using Clock = std::chrono::steady_clock;
  std::vector<double> step_ms;
  int step = 0;
  double last_loss = 0.0;
  std::clock_t cpu0 = 0;
  auto t0 = Clock::now();
  for (auto& batch : *loader) {
    auto data = batch.data.to(device);
    auto target = batch.target.to(device);
    optimizer.zero_grad();
    auto loss = torch::cross_entropy_loss(model->forward(data), target);
    loss.backward();
    optimizer.step();
    last_loss = loss.item<double>();  // synchronises the device, like a logging loop does
    const auto t1 = Clock::now();
    if (step >= cfg.warmup) step_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (step + 1 == cfg.warmup) cpu0 = std::clock();
    t0 = t1;
    ++step;
  }

  if (step_ms.empty()) {
    std::cerr << "no timed steps\n";
    return 1;
  }
  const double cpu_ms =
      1000.0 * static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC / static_cast<double>(step_ms.size());
  double mean = 0.0;
  for (double t : step_ms) mean += t;
  mean /= step_ms.size();
  std::sort(step_ms.begin(), step_ms.end());
  const double median = step_ms[step_ms.size() / 2];
  std::printf("bench: step_ms=%.3f mean_ms=%.3f cpu_ms=%.3f steps=%zu\n", median, mean, cpu_ms, step_ms.size());
  std::printf("final: loss=%.6f\n", last_loss);
  return 0;
}
