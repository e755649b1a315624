// A single-device LibTorch training loop whose data lives on the device, written the way
// users write one when the data set fits there: the whole set is two tensors moved to the
// device once, each epoch shuffles it with randperm on the device and cuts the batches by
// hand (index_select), so that a step is the model's work, not the host's (no per-sample
// tensors stacked and copied every step, as in overhead_train.cpp). The GPU run
// (bench/gpu/run.sh, issue 51) measures it original, migrated fp32/bf16/fp16 and against
// bench/gpu/hf_train.py --resident, on a ~100M-parameter MLP where tensor cores matter.
// The build runs accel-migrate on this file and compiles its output as
// resident_train_migrated.
//
//   resident_train [--steps N] [--warmup N] [--batch-size N] [--seed N] [--hidden N]
//                  [--layers N] [--features N]
// prints `device: ...`, `params: <count>`, `bench: step_ms=<median> mean_ms=<mean>
// cpu_ms=<CPU time per step> steps=<timed steps>` and `final: loss=...`.
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
  int warmup = 5;  // untimed steps first (allocator, cuBLAS handles, first sync)
  int64_t batch_size = 512;
  int64_t features = 1024;
  int64_t hidden = 4096;
  int64_t layers = 6;  // hidden layers (Linear + ReLU each)
  int64_t classes = 10;
  uint64_t seed = 1;
};

Config parse_config(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      std::cout << "usage: resident_train [--steps N] [--warmup N] [--batch-size N] [--seed N] [--hidden N] "
                   "[--layers N] [--features N]\n";
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
        c.batch_size = std::stoll(value);
      else if (flag == "--seed")
        c.seed = std::stoull(value);
      else if (flag == "--hidden")
        c.hidden = std::stoll(value);
      else if (flag == "--layers")
        c.layers = std::stoll(value);
      else if (flag == "--features")
        c.features = std::stoll(value);
      else {
        std::cerr << "unknown option " << flag << " (try --help)\n";
        std::exit(2);
      }
    } catch (const std::logic_error&) {
      std::cerr << "bad value '" << value << "' for " << flag << "\n";
      std::exit(2);
    }
  }
  if (c.steps < 1 || c.warmup < 1 || c.batch_size < 1 || c.hidden < 1 || c.layers < 1 || c.features < 1) {
    std::cerr << "steps, warmup, batch size, hidden, layers and features must be positive\n";
    std::exit(2);
  }
  return c;
}

torch::nn::Sequential make_mlp(const Config& c) {
  torch::nn::Sequential net;
  int64_t in = c.features;
  for (int64_t l = 0; l < c.layers; ++l) {
    net->push_back(torch::nn::Linear(in, c.hidden));
    net->push_back(torch::nn::ReLU());
    in = c.hidden;
  }
  net->push_back(torch::nn::Linear(in, c.classes));
  return net;
}

}  // namespace

int main(int argc, char** argv) {
  const Config cfg = parse_config(argc, argv);
  torch::manual_seed(cfg.seed);
  torch::Device device(torch::kCPU);
  if (torch::cuda::is_available()) device = torch::Device(torch::kCUDA);
  std::printf("device: %s\n", device.str().c_str());

  // Exactly warmup + steps batches in the one epoch; made on the host (the same numbers
  // whatever the device), moved to the device once.
  const int64_t n = cfg.batch_size * (cfg.warmup + cfg.steps);
  auto inputs = torch::randn({n, cfg.features}).to(device);
  auto targets = torch::randint(cfg.classes, {n}).to(device);

  torch::nn::Sequential model = make_mlp(cfg);
  model->to(device);
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  std::printf("params: %lld\n", static_cast<long long>(params));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));

  using Clock = std::chrono::steady_clock;
  std::vector<double> step_ms;
  int step = 0;
  double last_loss = 0.0;
  std::clock_t cpu0 = 0;
  auto perm = torch::randperm(n, torch::TensorOptions().device(device).dtype(torch::kLong));
  auto t0 = Clock::now();
  for (int64_t i = 0; i < n; i += cfg.batch_size) {
    auto idx = perm.slice(0, i, std::min(i + cfg.batch_size, n));
    auto data = inputs.index_select(0, idx);
    auto target = targets.index_select(0, idx);
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
