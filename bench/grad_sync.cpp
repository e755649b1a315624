// Gradient synchronisation benchmark (2+ processes).
//   grad_sync --spawn 2 [--layers 8 --width 1024 --batch 64 --steps 10 --bucket_mb 25 --first_bucket_kb 1024]
// starts itself on N local processes (or run it under any launcher). Process 0 prints, per
// step: compute only (no_sync), a plain c10d all-reduce of the same bytes in one flat
// buffer, and the full step with bucketed, overlapped synchronisation, with ratios.
//   grad_sync --spawn 2 --phases 1 [--model 0|1 --batch 128 --steps 30 --sync 1|0]
// times the phases of a training step instead (step_phases.cpp).
#include <accelerate/accelerate.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/comm/detail/process_state.h>

#include "spawn.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::map<std::string, int64_t> parse_args(int argc, char** argv) {
  std::map<std::string, int64_t> a{{"spawn", 0},  {"layers", 8},     {"width", 1024},           {"batch", 64},
                                   {"steps", 10}, {"bucket_mb", 25}, {"first_bucket_kb", 1024}, {"phases", 0},
                                   {"model", 0},  {"sync", 1}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || a.find(k.substr(2)) == a.end()) {
      std::cerr << "grad_sync: unknown argument " << k << "\n";
      std::exit(2);
    }
    a[k.substr(2)] = std::stoll(argv[i + 1]);
  }
  return a;
}

}  // namespace

// step_phases.cpp
int run_phases(const std::map<std::string, int64_t>& a);

namespace {

int run(const std::map<std::string, int64_t>& a) {
  if (a.at("phases") != 0) return run_phases(a);
  torch::set_num_threads(1);
  accelerate::Accelerator acc(accelerate::AcceleratorOptions()
                                  .bucket_cap_mb(static_cast<double>(a.at("bucket_mb")))
                                  .first_bucket_cap_mb(static_cast<double>(a.at("first_bucket_kb")) / 1024.0));
  torch::nn::Sequential model;
  for (int64_t i = 0; i < a.at("layers"); ++i) {
    model->push_back(torch::nn::Linear(a.at("width"), a.at("width")));
    model->push_back(torch::nn::Tanh());
  }
  acc.prepare(model);
  int64_t numel = 0;
  for (auto& p : model->parameters()) numel += p.numel();
  auto x = torch::randn({a.at("batch"), a.at("width")});
  const int64_t steps = a.at("steps");

  auto step = [&] {
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    auto loss = model->forward(x).square().mean();
    acc.backward(loss);
  };
  auto compute_only = [&] {
    auto guard = acc.no_sync();
    step();
  };
  auto& ps = accelerate::detail::AcceleratorAccess::process_state(acc);
  std::vector<torch::Tensor> flat{torch::ones({numel})};
  auto flat_allreduce = [&] {
    ps.run("flat all_reduce (benchmark)", [&](accelerate::detail::CommGroup& g) {
      c10d::AllreduceOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      return g.allreduce(flat, o);
    });
  };
  // The three are interleaved and medians taken, so that load from other programs on the
  // machine affects them alike; each time is the slowest process's.
  std::vector<double> t_compute, t_flat, t_synced;
  auto timed = [&](auto&& body, std::vector<double>& out) {
    acc.wait_for_everyone();
    auto t0 = Clock::now();
    body();
    // A synchronised step lasts as long as the slowest process: compare like with like.
    out.push_back(acc.reduce(torch::tensor({ms_since(t0)}, torch::kDouble), accelerate::ReduceOp::Max).item<double>());
  };
  compute_only();
  flat_allreduce();
  step();  // warm-up
  for (int64_t i = 0; i < steps; ++i) {
    timed(compute_only, t_compute);
    timed(flat_allreduce, t_flat);
    timed(step, t_synced);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double compute = median(t_compute), flat_comm = median(t_flat), synced = median(t_synced);

  if (acc.is_main_process()) {
    const double exposed = synced - compute;
    const double hidden = (compute + flat_comm - synced) / flat_comm;
    std::printf("grad_sync: %lld processes, %lld parameters (%.1f MB of fp32 gradients), batch %lld, %lld steps\n",
                static_cast<long long>(acc.num_processes()), static_cast<long long>(numel), numel * 4.0 / 1e6,
                static_cast<long long>(a.at("batch")), static_cast<long long>(steps));
    std::printf("  medians of %lld interleaved rounds:\n", static_cast<long long>(steps));
    std::printf("  compute only (no_sync)            %8.2f ms/step\n", compute);
    std::printf("  plain flat all_reduce, same bytes %8.2f ms/step\n", flat_comm);
    std::printf("  step with bucketed sync           %8.2f ms/step\n", synced);
    std::printf("  sync time per step (step - compute) / flat all_reduce = %.2f\n", exposed / flat_comm);
    std::printf("  step / (compute + flat all_reduce)                   = %.2f\n", synced / (compute + flat_comm));
    std::printf("  overlap: share of communication hidden behind backward = %.0f%%\n", 100.0 * hidden);
    const auto stats = acc.grad_sync_stats();
    std::printf("  %lld buckets; of their all-reduces %lld started during backward, %lld at its end\n",
                static_cast<long long>(stats.buckets), static_cast<long long>(stats.launched_during_backward),
                static_cast<long long>(stats.launched_at_end));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = parse_args(argc, argv);
  if (args.at("spawn") > 0) {
    std::vector<std::string> rest;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--spawn") {
        ++i;
        continue;
      }
      rest.push_back(argv[i]);
    }
    // The harness keeps launcher variables out of the workers; these tune the runtime.
    std::map<std::string, std::string> env;
    for (const char* name : {"ACCELERATE_SHM", "ACCELERATE_GRAD_SYNC_OVERLAP", "ACCELERATE_TEST_HOST_ID"}) {
      if (const char* v = std::getenv(name)) env[name] = v;
    }
    auto result = accelerate::testing::spawn_workers("/proc/self/exe", rest, static_cast<int>(args.at("spawn")), env);
    for (const auto& w : result.workers) {
      if (w.exit_code != 0 || !w.output.empty())
        std::cout << (w.rank == 0 ? "" : "[rank " + std::to_string(w.rank) + "] ") << w.output;
    }
    return result.all_succeeded() ? 0 : 1;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "grad_sync: " << e.what() << "\n";
    return 1;
  }
}
