// Peak resident memory and step time of one training process under the FSDP strategy the
// launcher chose (accelerate launch --use_fsdp --fsdp_sharding_strategy ...): an MLP of
// `layers` square Linear layers (about 70M parameters by default) trained with AdamW.
// Every process prints
//   bench: fsdp strategy=S rank=R world=N params=P largest_unit=U base_mb=B peak_mb=M step_ms=T prefetches=F
// base_mb: resident memory before the model exists (LibTorch, the process group);
// peak_mb: the high-water mark of resident memory during training (reset after prepare(),
// so that building the full model once on every process, which any program does before
// sharding it, is not counted). bench/fsdp_bench.py compares them across strategies.
// Run it through bench/run.py (section fsdp), or by hand:
//   MALLOC_MMAP_THRESHOLD_=65536 accelerate launch --cpu --num_processes 2 --use_fsdp \
//     --fsdp_sharding_strategy FULL_SHARD --fsdp_auto_wrap_policy SIZE_BASED_WRAP \
//     --fsdp_min_num_params 1000000 build/bench/fsdp_memory
#include <accelerate/accelerate.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

// VmRSS or VmHWM of this process, in MB.
double status_mb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return -1;
}

// Resets VmHWM to the current resident size (Linux: clear_refs with 5).
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

struct NetImpl : torch::nn::Module {
  NetImpl(int64_t width, int64_t layers) {
    for (int64_t i = 0; i < layers; ++i) {
      fcs.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, width)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < fcs.size(); ++i)
      x = i + 1 < fcs.size() ? torch::relu(fcs[i]->forward(x)) : fcs[i]->forward(x);
    return x;
  }
  std::vector<torch::nn::Linear> fcs;
};
TORCH_MODULE(Net);

}  // namespace

int main(int argc, char** argv) {
  int64_t width = 2048, layers = 16, batch = 16, steps = 6, warmup = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t v = std::stoll(argv[i + 1]);
    if (flag == "--width")
      width = v;
    else if (flag == "--layers")
      layers = v;
    else if (flag == "--batch")
      batch = v;
    else if (flag == "--steps")
      steps = v;
    else if (flag == "--warmup")
      warmup = v;
    else {
      std::cerr << "usage: fsdp_memory [--width N] [--layers N] [--batch N] [--steps N] [--warmup N]\n";
      return 2;
    }
  }
  accelerate::Accelerator acc;
  const double base = status_mb("VmRSS");
  torch::manual_seed(0);
  Net model(width, layers);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));
  acc.prepare(model, opt);
  reset_peak();
  torch::manual_seed(1 + acc.process_index());
  std::vector<double> times;
  for (int64_t step = 0; step < warmup + steps; ++step) {
    const auto x = torch::randn({batch, width}), y = torch::randn({batch, width});
    const auto t0 = std::chrono::steady_clock::now();
    auto loss = torch::mse_loss(model->forward(x), y);
    acc.backward(loss);
    opt.step();
    opt.zero_grad();
    acc.wait_for_everyone();  // a step ends when every process has finished it
    if (step >= warmup)
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const auto stats = acc.fsdp_stats();
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  if (stats.models > 0) params = stats.parameters;
  const char* strategy =
      !acc.fsdp_settings().enabled ? "DDP" : accelerate::to_string(acc.fsdp_settings().sharding_strategy);
  std::printf(
      "bench: fsdp strategy=%s rank=%lld world=%lld params=%lld largest_unit=%lld base_mb=%.1f peak_mb=%.1f "
      "step_ms=%.1f prefetches=%lld\n",
      strategy, static_cast<long long>(acc.process_index()), static_cast<long long>(acc.num_processes()),
      static_cast<long long>(params), static_cast<long long>(stats.largest_unit), base, status_mb("VmHWM"),
      times.empty() ? 0.0 : times[times.size() / 2], static_cast<long long>(acc.fsdp_stats().prefetch_hits));
  std::fflush(stdout);
  return 0;
}
