// Where the time of a training step goes (grad_sync --phases 1): the step of
// bench/overhead_train.cpp (MLP 512-1024-1024-10, --model 0) or of a small CNN (--model 1,
// 28x28 images, two convolutions), with SGD and momentum, batches from a prepared data
// loader, timed phase by phase: next batch, zero_grad, forward, backward (and in it:
// preparing the buckets, waiting for the all-reduces), optimizer step. With --sync 0 the
// gradients are not synchronised (no_sync) and the processes meet once a step through a
// one-element all-reduce instead: the lockstep alone, what bench/shm_bench.py's "aligned"
// rows compare the synchronised step against. Medians over the
// steps, wall time and CPU time of the training thread; the step also with the CPU time of
// all threads (the communication threads included). Environment: ACCELERATE_SHM,
// ACCELERATE_GRAD_SYNC_OVERLAP. Process 0 ends with a `bench: phases ...` line for run.py.
//
// grad_sync --phases 2 compares gradient-sync policies instead: the MLP once per policy
// (overlap on/off x 1, 4, 25 MB buckets), each prepared with its own settings, trained in
// turns in the same processes (the order rotating every step), so that load from other
// programs hits every policy alike; one `bench: policy ...` line per policy.
#include <accelerate/accelerate.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double cpu_ms(clockid_t clock = CLOCK_THREAD_CPUTIME_ID) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Random inputs with random class labels, one sample at a time (as users' data sets do).
class Synthetic : public torch::data::datasets::Dataset<Synthetic> {
 public:
  Synthetic(int64_t n, std::vector<int64_t> shape) {
    shape.insert(shape.begin(), n);
    inputs_ = torch::randn(shape);
    targets_ = torch::randint(10, {n});
  }
  torch::data::Example<> get(size_t i) override { return {inputs_[i], targets_[i]}; }
  torch::optional<size_t> size() const override { return inputs_.size(0); }

 private:
  torch::Tensor inputs_, targets_;
};

torch::nn::Sequential make_model(bool cnn) {
  namespace nn = torch::nn;
  if (!cnn)
    return nn::Sequential(nn::Linear(512, 1024), nn::ReLU(), nn::Linear(1024, 1024), nn::ReLU(), nn::Linear(1024, 10));
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 5)), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(nn::Conv2dOptions(16, 32, 5)), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                        nn::Linear(512, 128), nn::ReLU(), nn::Linear(128, 10));
}

struct Timings {
  std::map<std::string, std::vector<double>> wall, cpu;
  void add(const std::string& name, double wall_ms, double cpu_ms) {
    wall[name].push_back(wall_ms);
    if (cpu_ms >= 0) cpu[name].push_back(cpu_ms);
  }
};

std::string report(accelerate::Accelerator& acc, const Timings& t, int64_t batch, bool cnn) {
  const auto stats = acc.grad_sync_stats();
  std::ostringstream os;
  os << "phases: " << (cnn ? "CNN" : "MLP") << ", rank " << acc.process_index() << " of " << acc.num_processes()
     << ", batch " << batch << ", "
     << (stats.shared_memory_models ? "shared memory"
         : acc.num_processes() > 1  ? "gloo"
                                    : "no sync")
     << ", " << stats.buckets << " buckets, " << stats.launched_during_backward << " launched during backward, "
     << stats.copied_gradients << " gradients copied in " << stats.passes << " passes\n";
  auto at = [](const std::map<std::string, std::vector<double>>& m, const std::string& k) {
    return m.count(k) ? median(m.at(k)) : 0.0;
  };
  for (const char* name : {"next batch", "zero_grad", "forward", "backward", "  bucket copies", "  all-reduce wait",
                           "optimizer", "lockstep", "step"}) {
    os << "  " << std::left << std::setw(18) << name << std::right << std::fixed << std::setprecision(2) << std::setw(8)
       << at(t.wall, name) << " ms";
    if (t.cpu.count(name)) os << std::setw(8) << at(t.cpu, name) << " ms CPU";
    os << "\n";
  }
  os << "  step, all threads " << std::setw(8) << at(t.cpu, "all threads") << " ms CPU (communication threads too)\n";
  os << "bench: phases step_ms=" << at(t.wall, "step") << " cpu_ms=" << at(t.cpu, "all threads")
     << " wait_ms=" << at(t.wall, "  all-reduce wait") << " data_ms=" << at(t.wall, "next batch") << "\n";
  return os.str();
}

}  // namespace

int run_policies(const std::map<std::string, int64_t>& a);

int run_phases(const std::map<std::string, int64_t>& a) {
  if (a.at("phases") == 2) return run_policies(a);
  torch::set_num_threads(1);
  accelerate::Accelerator acc(accelerate::AcceleratorOptions()
                                  .bucket_cap_mb(static_cast<double>(a.at("bucket_mb")))
                                  .first_bucket_cap_mb(static_cast<double>(a.at("first_bucket_kb")) / 1024.0));
  const bool cnn = a.at("model") == 1, sync = a.at("sync") != 0;
  torch::manual_seed(1);
  auto model = make_model(cnn);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  acc.prepare(model, opt);
  const int64_t batch = a.at("batch"), steps = a.at("steps"), warmup = 5;
  const int64_t samples = batch * acc.num_processes() * (warmup + steps);
  auto loader =
      acc.prepare_data_loader(Synthetic(samples, cnn ? std::vector<int64_t>{1, 28, 28} : std::vector<int64_t>{512})
                                  .map(torch::data::transforms::Stack<>()),
                              torch::data::DataLoaderOptions(batch));
  Timings t;
  int64_t step = 0;
  auto it = loader->begin();
  for (; it != loader->end(); ++step) {
    const bool timed = step >= warmup;
    const auto before = acc.grad_sync_stats();
    const auto t_step = Clock::now();
    const double c_step = cpu_ms(), p_step = cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
    torch::Tensor loss;
    const std::pair<const char*, std::function<void()>> parts[] = {
        {"zero_grad", [&] { opt.zero_grad(); }},
        {"forward", [&] { loss = torch::cross_entropy_loss(model->forward(it->data), it->target); }},
        {"backward",
         [&] {
           if (sync) return acc.backward(loss);
           auto local = acc.no_sync();
           acc.backward(loss);
         }},
        {"optimizer", [&] { opt.step(); }},
        // --sync 0: the processes still meet once a step, through a one-element all-reduce
        // (the same shared-memory path and threads), so they run in lockstep as a
        // synchronised job does, without exchanging any gradient.
        {"lockstep",
         [&] {
           if (!sync) (void)acc.check_trigger();
         }},
        {"next batch", [&] { ++it; }},
    };
    for (const auto& [name, fn] : parts) {
      const auto t0 = Clock::now();
      const double c0 = cpu_ms();
      fn();
      if (timed) t.add(name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), cpu_ms() - c0);
    }
    if (!timed) continue;
    t.add("step", std::chrono::duration<double, std::milli>(Clock::now() - t_step).count(), cpu_ms() - c_step);
    t.add("all threads", 0, cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - p_step);
    const auto after = acc.grad_sync_stats();
    t.add("  bucket copies", 1e3 * (after.copy_seconds - before.copy_seconds), -1);
    t.add("  all-reduce wait", 1e3 * (after.wait_seconds - before.wait_seconds), -1);
  }
  std::cout << report(acc, t, batch, cnn) << std::flush;
  return 0;
}

namespace {

struct Policy {
  bool overlap;
  int64_t bucket_mb;
  std::unique_ptr<accelerate::Accelerator> acc;
  torch::nn::Sequential model{nullptr};
  std::unique_ptr<torch::optim::SGD> opt;
  std::vector<double> step_ms, wait_ms;
};

void prepare_policy(Policy& p) {
  // Read when a model is prepared (grad_sync.h): each model keeps the setting it got.
  ::setenv("ACCELERATE_GRAD_SYNC_OVERLAP", p.overlap ? "1" : "0", 1);
  p.acc = std::make_unique<accelerate::Accelerator>(
      accelerate::AcceleratorOptions().bucket_cap_mb(static_cast<double>(p.bucket_mb)).first_bucket_cap_mb(1.0));
  torch::manual_seed(1);
  p.model = make_model(false);
  p.opt = std::make_unique<torch::optim::SGD>(p.model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  p.acc->prepare(p.model, *p.opt);
}

}  // namespace

int run_policies(const std::map<std::string, int64_t>& a) {
  torch::set_num_threads(1);
  std::vector<Policy> policies;
  for (bool overlap : {false, true}) {
    for (int64_t mb : {25, 4, 1}) policies.push_back(Policy{overlap, mb});
  }
  for (auto& p : policies) prepare_policy(p);
  const int64_t batch = a.at("batch"), steps = a.at("steps"), warmup = 3;
  auto x = torch::randn({batch, 512});
  auto y = torch::randint(10, {batch});
  for (int64_t step = 0; step < warmup + steps; ++step) {
    for (size_t i = 0; i < policies.size(); ++i) {
      auto& p = policies[(i + static_cast<size_t>(step)) % policies.size()];
      const double wait0 = p.acc->grad_sync_stats().wait_seconds;
      const auto t0 = Clock::now();
      p.opt->zero_grad();
      p.acc->backward(torch::cross_entropy_loss(p.model->forward(x), y));
      p.opt->step();
      if (step < warmup) continue;
      p.step_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      p.wait_ms.push_back(1e3 * (p.acc->grad_sync_stats().wait_seconds - wait0));
    }
  }
  std::ostringstream os;
  for (auto& p : policies) {
    const auto stats = p.acc->grad_sync_stats();
    os << "bench: policy overlap=" << p.overlap << " bucket_mb=" << p.bucket_mb << " step_ms=" << median(p.step_ms)
       << " wait_ms=" << median(p.wait_ms) << " buckets=" << p.acc->grad_sync_stats().buckets / 1
       << " launched_during_backward=" << stats.launched_during_backward << "\n";
  }
  if (policies.front().acc->is_main_process()) std::cout << os.str() << std::flush;
  return 0;
}
