// Per-process throughput of a prepared (sharded) data loader against LibTorch's plain
// loader reading the same number of items, in the same processes at the same time.
// Sharding must not slow a process down: the ratio should be near 1.
//
//   build-*/bench/loader_throughput --spawn 2     # 2 processes on this machine
//   accelerate launch --num_processes 2 build-*/bench/loader_throughput
//   build-*/bench/loader_throughput [--items N] [--batch B] [--repeats R]
#include <accelerate/accelerate.h>

#include "spawn.h"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

namespace data = torch::data;

namespace {

// An image-like item built and normalised on the fly (the cost a real decode would have).
struct SyntheticImages : data::datasets::Dataset<SyntheticImages> {
  explicit SyntheticImages(size_t n) : n(n) {}
  data::Example<> get(size_t i) override {
    auto x = torch::arange(3 * 32 * 32, torch::kFloat).reshape({3, 32, 32}).add_(static_cast<double>(i));
    x = (x - x.mean()) / (x.std() + 1e-6);
    return {x, torch::tensor(static_cast<int64_t>(i % 10))};
  }
  c10::optional<size_t> size() const override { return n; }
  size_t n;
};

// Wall-clock and CPU time (all threads of the process, workers included) per epoch: on a
// busy machine wall time mostly measures the neighbours, CPU time what the loader costs.
struct Timing {
  double wall = 0, cpu = 0;
  size_t items = 0;
};

template <typename Loader>
Timing time_epoch(Loader& loader) {
  Timing t;
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  for (auto& batch : loader) t.items += static_cast<size_t>(batch.data.size(0));
  t.cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  t.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Args {
  size_t items = 16000, batch = 64, repeats = 7;
  int spawn = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const size_t v = std::stoul(argv[i + 1]);
    if (k == "--items")
      a.items = v;
    else if (k == "--batch")
      a.batch = v;
    else if (k == "--repeats")
      a.repeats = v;
    else if (k == "--spawn")
      a.spawn = static_cast<int>(v);
    else
      throw std::invalid_argument("unknown option " + k);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  if (args.spawn > 0) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    std::vector<std::string> forward;
    for (int i = 1; i + 1 < argc; i += 2)
      if (std::string(argv[i]) != "--spawn") forward.insert(forward.end(), {argv[i], argv[i + 1]});
    auto run = accelerate::testing::spawn_workers(self, forward, args.spawn, {{"OMP_NUM_THREADS", "1"}});
    for (const auto& w : run.workers) std::cout << w.output;
    return run.all_succeeded() ? 0 : 1;
  }

  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  acc.set_seed(0);
  const size_t P = static_cast<size_t>(acc.num_processes());
  // What each process reads in both loaders (whole batches, so that nothing is padded).
  const size_t share = std::max<size_t>(1, args.items / P / args.batch) * args.batch;
  for (size_t workers : {0, 2}) {
    for (bool random : {false, true}) {
      const auto opts = data::DataLoaderOptions(args.batch).workers(workers);
      auto run_plain = [&]() {
        if (random) {
          auto plain = data::make_data_loader<data::samplers::RandomSampler>(
              SyntheticImages(share).map(data::transforms::Stack<>()), opts);
          return time_epoch(*plain);
        }
        auto plain = data::make_data_loader<data::samplers::SequentialSampler>(
            SyntheticImages(share).map(data::transforms::Stack<>()), opts);
        return time_epoch(*plain);
      };
      auto run_prepared = [&]() {
        if (random) {
          auto prepared = acc.prepare_data_loader<data::samplers::RandomSampler>(
              SyntheticImages(share * P).map(data::transforms::Stack<>()), opts);
          return time_epoch(*prepared);
        }
        auto prepared = acc.prepare_data_loader<data::samplers::SequentialSampler>(
            SyntheticImages(share * P).map(data::transforms::Stack<>()), opts);
        return time_epoch(*prepared);
      };
      // Pairs run back to back (in alternating order) at the same time on every process, so
      // both loaders of a pair see the same load on a shared machine: the medians of the
      // pairs' ratios (prepared throughput / plain throughput) are the figures of merit.
      std::vector<double> wall_ratios, cpu_ratios;
      double plain_best = 0, prepared_best = 0;
      Timing a, b;
      for (size_t r = 0; r < args.repeats; ++r) {
        acc.wait_for_everyone();
        if (r % 2 == 0) {
          a = run_plain();
          b = run_prepared();
        } else {
          b = run_prepared();
          a = run_plain();
        }
        if (a.items != b.items) {
          std::cerr << "item counts differ: plain " << a.items << " prepared " << b.items << "\n";
          return 1;
        }
        plain_best = std::max(plain_best, a.items / a.wall);
        prepared_best = std::max(prepared_best, b.items / b.wall);
        wall_ratios.push_back(a.wall / b.wall);
        cpu_ratios.push_back(a.cpu / b.cpu);
      }
      char line[320];
      std::snprintf(line, sizeof line,
                    "loader_throughput rank=%lld/%zu workers=%zu sampler=%-10s items=%zu "
                    "best plain=%.0f prepared=%.0f items/s; ratio prepared/plain: "
                    "wall %.3f cpu %.3f (medians of %zu pairs)\n",
                    static_cast<long long>(acc.process_index()), P, workers, random ? "random" : "sequential", b.items,
                    plain_best, prepared_best, median(wall_ratios), median(cpu_ratios), wall_ratios.size());
      std::cout << line << std::flush;
    }
  }
  return 0;
}
