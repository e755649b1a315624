// The shared-memory scenarios of runtime_worker (runtime_shm_test.cpp starts them on 2-4
// processes, some with ACCELERATE_TEST_HOST_ID making several "hosts" on this machine).
//   runtime_worker shm_vs_gloo [gloo]  every all-reduce through shared memory equals Gloo's
//   runtime_worker grad_views          gradients live in the (shared) buckets, any zero_grad style
//   runtime_worker shm_kill [victim]   process `victim` (1) dies by SIGKILL in the middle of training
//   runtime_worker shm_model <params>  prepares a model of <params> parameters (/dev/shm too small)
//   runtime_worker shm_fsdp            FSDP's reduce_scatter and all_gather against values computed here
#include "worker_expect.h"

#include <accelerate/accelerate.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/comm/detail/process_state.h>

#include "shm/shm_comm.h"  // runtime/src

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using accelerate::Accelerator;
using accelerate::AcceleratorOptions;
using accelerate::detail::CommGroup;
using accelerate::detail::ProcessState;

namespace {

int g_failures = 0;  // counted by EXPECT_THAT (worker_expect.h)

std::string describe(const ProcessState& ps) {
  if (!ps.shm) return "shm: off";
  const auto& t = ps.shm->topology();
  std::ostringstream os;
  os << "shm: rank " << ps.rank() << " hosts " << t.num_hosts << " host " << t.host_index << " local_rank "
     << t.local_rank << " of " << t.local_size() << " one_host " << ps.shm->one_host();
  return os.str();
}

// Rank- and index-dependent values that every dtype holds exactly.
torch::Tensor input(int64_t n, c10::ScalarType dtype, int64_t rank) {
  auto i = torch::arange(n, torch::kLong);
  auto v = (i * 7 + rank * 13) % 50;
  if (c10::isFloatingType(dtype)) return (v.to(torch::kDouble) * 0.37 - 3.1 + 0.001 * rank).to(dtype);
  return v.to(dtype);
}

torch::Tensor through_shm(const ProcessState& ps, const torch::Tensor& t, c10d::ReduceOp op) {
  std::vector<torch::Tensor> v{t.clone()};
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  ps.run("all_reduce (shm test)", [&](CommGroup&) { return ps.allreduce(v, opts); });
  return v[0];
}

torch::Tensor through_gloo(const ProcessState& ps, const torch::Tensor& t, c10d::ReduceOp op) {
  std::vector<torch::Tensor> v{t.clone()};
  if (t.numel() == 0) return v[0];  // Gloo has nothing to say about no elements
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  ps.run("all_reduce (gloo reference)", [&](CommGroup& g) { return g.allreduce(v, opts); });
  return v[0];
}

// Sums of 2 values are the same in any order; with more processes Gloo's ring adds in
// another order than rank order, so floating-point sums may differ in the last bit.
bool agree(const torch::Tensor& a, const torch::Tensor& b, int64_t P, bool sum) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (!sum || P <= 2 || !a.is_floating_point()) return torch::equal(a, b);
  return torch::allclose(a, b, 1e-6, 1e-6);
}

void staged_allreduce_matches_gloo(const ProcessState& ps) {
  const int64_t P = ps.world_size(), r = ps.rank();
  const std::vector<int64_t> sizes{0, 1, 2, 3, 5, 17, 1000};
  const std::pair<c10d::ReduceOp::RedOpType, const char*> ops[] = {
      {c10d::ReduceOp::SUM, "sum"}, {c10d::ReduceOp::MAX, "max"}, {c10d::ReduceOp::MIN, "min"}};
  for (auto dtype : {torch::kFloat, torch::kDouble, torch::kLong, torch::kByte}) {
    for (const auto& [op, name] : ops) {
      for (int64_t n : sizes) {
        const auto x = input(n, dtype, r);
        const auto shm = through_shm(ps, x, op), gloo = through_gloo(ps, x, op);
        EXPECT_THAT(agree(shm, gloo, P, op == c10d::ReduceOp::SUM),
                    name << " of " << n << " " << c10::toString(dtype) << ": shm "
                         << shm.narrow(0, 0, std::min<int64_t>(n, 5)) << " gloo "
                         << gloo.narrow(0, 0, std::min<int64_t>(n, 5)));
      }
    }
  }
  // Over several chunks of the staging area, with a ragged end.
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    const int64_t n = static_cast<int64_t>(2 * accelerate::detail::ShmComm::kChunkBytes / c10::elementSize(dtype)) + 7;
    const auto x = input(n, dtype, r);
    EXPECT_THAT(agree(through_shm(ps, x, c10d::ReduceOp::SUM), through_gloo(ps, x, c10d::ReduceOp::SUM), P, true),
                "sum of " << n << " " << c10::toString(dtype) << " (3 chunks)");
  }
}

// The gradient path: memory in the processes' slots, summed and divided in place.
void in_place_allreduce_matches_gloo(const ProcessState& ps) {
  const int64_t P = ps.world_size(), r = ps.rank();
  const size_t offset = 64;
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    for (int64_t n : {1, 2, 3, 17, 100003}) {
      const size_t elem = c10::elementSize(dtype);
      auto region = ps.shm->allocate(offset + (n + 2) * elem, "test region");
      auto whole = torch::from_blob(region->mine(), {static_cast<int64_t>(region->slot_bytes / elem)},
                                    torch::TensorOptions().dtype(dtype));
      whole.fill_(-77.0);  // sentinels around the reduced range
      const auto x = input(n, dtype, r);
      whole.narrow(0, offset / elem, n).copy_(x);
      const std::string what = "in-place all_reduce (shm test)";
      const auto seq = ps.begin(what);
      ps.wait(ps.shm->allreduce_in_place(region, offset, n, dtype, static_cast<double>(P)), what, seq);
      auto expected = through_gloo(ps, x, c10d::ReduceOp::SUM).div_(static_cast<double>(P));
      EXPECT_THAT(agree(whole.narrow(0, offset / elem, n), expected, P, true),
                  "in-place average of " << n << " " << c10::toString(dtype));
      const bool untouched = (whole.narrow(0, 0, offset / elem) == -77.0).all().item<bool>() &&
                             (whole.narrow(0, offset / elem + n, 2) == -77.0).all().item<bool>();
      EXPECT_THAT(untouched, "in-place all-reduce of " << n << " wrote outside its range");
    }
  }
}

int shm_vs_gloo(bool expect_gloo) {
  Accelerator acc;
  auto& ps = accelerate::detail::AcceleratorAccess::process_state(acc);
  std::cout << describe(ps) << std::endl;
  EXPECT_THAT(static_cast<bool>(ps.shm) == !expect_gloo, "shared memory " << (expect_gloo ? "used" : "not used"));
  staged_allreduce_matches_gloo(ps);
  if (ps.shm) in_place_allreduce_matches_gloo(ps);
  // The runtime's own collectives on top of it.
  const auto v = acc.reduce(torch::tensor({1.0 + ps.rank(), 2.0}, torch::kFloat), accelerate::ReduceOp::Mean);
  const double P = static_cast<double>(ps.world_size());
  EXPECT_THAT(torch::allclose(v, torch::tensor({(P + 1) / 2, 2.0}, torch::kFloat)), "reduce mean: " << v);
  if (ps.rank() == ps.world_size() - 1) acc.set_trigger();
  EXPECT_THAT(acc.check_trigger(), "the last process's trigger was not seen");
  acc.wait_for_everyone();
  std::cout << "shm_vs_gloo: done with " << g_failures << " failures" << std::endl;
  return g_failures;
}

// The mapping that holds `address`: a /dev/shm path for shared memory.
std::string mapping_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<uintptr_t>(address);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream in(line);
    in >> std::hex >> lo >> dash >> hi;
    if (a >= lo && a < hi) return line;
  }
  return "(none)";
}

// Three ways of clearing gradients between steps; the result must be the 1-process one
// every time, and the gradients must stay in the buckets where the style allows.
int grad_views() {
  Accelerator acc(AcceleratorOptions().first_bucket_cap_mb(0.0005).bucket_cap_mb(0.002));
  auto& ps = accelerate::detail::AcceleratorAccess::process_state(acc);
  acc.set_seed(5);
  torch::nn::Sequential model(torch::nn::Linear(8, 32), torch::nn::Tanh(), torch::nn::Linear(32, 4));
  torch::nn::Sequential reference(torch::nn::Linear(8, 32), torch::nn::Tanh(), torch::nn::Linear(32, 4));
  acc.prepare(model);
  {
    torch::NoGradGuard g;
    for (size_t i = 0; i < model->parameters().size(); ++i) reference->parameters()[i].copy_(model->parameters()[i]);
  }
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  acc.prepare(opt);
  const int64_t P = acc.num_processes(), r = acc.process_index(), B = 4;
  const int64_t nparams = static_cast<int64_t>(model->parameters().size());
  int64_t step = 0;
  for (const std::string style : {"in place", "to none", "optimizer", "in place"}) {
    for (int i = 0; i < 3; ++i, ++step) {
      auto gen = at::detail::createCPUGenerator(100 + step);
      auto x = torch::randn({B * P, 8}, gen), y = torch::randn({B * P, 4}, gen);
      if (style == "to none") {
        for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
      } else if (style == "optimizer") {
        opt.zero_grad();  // LibTorch 1.13: detach_() and zero_() in place; 2.x: to none
      } else {
        for (auto& p : model->parameters()) {
          if (p.grad().defined()) p.mutable_grad().detach_().zero_();
        }
      }
      const auto before = acc.grad_sync_stats().copied_gradients;
      acc.backward(torch::mse_loss(model->forward(x.narrow(0, r * B, B)), y.narrow(0, r * B, B)));
      const auto copied = acc.grad_sync_stats().copied_gradients - before;
      if (style == "to none") EXPECT_THAT(copied == nparams, style << ": " << copied << " gradients copied");
      if (style == "in place" && step > 0) EXPECT_THAT(copied == 0, style << ": " << copied << " gradients copied");
      opt.step();
      ref_opt.zero_grad();
      torch::mse_loss(reference->forward(x), y).backward();
      ref_opt.step();
    }
    double diff = 0;
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      diff = std::max(diff, (model->parameters()[i] - reference->parameters()[i]).abs().max().item<double>());
    }
    std::cout << "grad_views: " << style << " max|param - 1-process run| = " << diff << std::endl;
    EXPECT_THAT(diff <= 1e-6, style << ": parameters differ from the 1-process run by " << diff);
  }
  const auto stats = acc.grad_sync_stats();
  if (ps.shm) {
    EXPECT_THAT(stats.shared_memory_models == 1, "the buckets are not in shared memory");
    const std::string where = mapping_of(model->parameters()[0].grad().data_ptr());
    std::cout << "grad_views: a gradient lives in " << where << std::endl;
    EXPECT_THAT(where.find("/dev/shm/") != std::string::npos, "a gradient is not in shared memory: " << where);
  }
  std::cout << "grad_views: copied " << stats.copied_gradients << " gradients in " << step << " steps, done with "
            << g_failures << " failures" << std::endl;
  return g_failures;
}

std::vector<std::string> segments_with_prefix() {
  std::vector<std::string> found;
  const char* prefix = std::getenv("ACCELERATE_SHM_PREFIX");
  if (prefix == nullptr) return found;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().string());
  }
  return found;
}

// Process `victim` is killed (SIGKILL, no destructor runs) after two steps; the other must
// fail with a message naming it instead of waiting for the timeout.
int shm_kill(int64_t victim) {
  Accelerator acc;
  acc.set_seed(3);
  torch::nn::Linear model(64, 64);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  acc.prepare(model, opt);
  std::cout << describe(accelerate::detail::AcceleratorAccess::process_state(acc)) << std::endl;
  const auto start = std::chrono::steady_clock::now();
  try {
    for (int step = 0; step < 6; ++step) {
      if (acc.process_index() == victim && step == 2) {
        std::cout << "SEGMENTS " << segments_with_prefix().size() << std::endl;
        ::kill(::getpid(), SIGKILL);
      }
      opt.zero_grad();
      acc.backward(model->forward(torch::randn({4, 64})).square().mean());
      opt.step();
    }
  } catch (const accelerate::DistributedError& e) {
    const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "CAUGHT after " << waited << " s: " << e.what() << std::endl;
    return 0;
  }
  std::cout << "FAIL: process " << acc.process_index() << " did not notice that process " << victim << " was killed"
            << std::endl;
  return 1;
}

int shm_model(int64_t params) {
  Accelerator acc;
  torch::nn::Linear model(1000, std::max<int64_t>(1, params / 1000));
  acc.prepare(model);
  acc.backward(model->forward(torch::randn({2, 1000})).sum());
  std::cout << describe(accelerate::detail::AcceleratorAccess::process_state(acc)) << "\nshm_model: trained"
            << std::endl;
  return 0;
}

// Runs a shared-memory collective to completion through the process state.
void run_shm(const ProcessState& ps, const std::string& what, const c10::intrusive_ptr<c10d::Work>& work) {
  const auto seq = ps.begin(what);
  ps.wait(work, what, seq);
}

// Shard sizes: odd ones (no cache-line multiple), and ones whose chunks of the staging area
// end just before, at and after a boundary (a slot holds P - 1 slices of a reduce-scatter chunk).
std::vector<int64_t> shard_sizes(int64_t P) {
  const auto floats = static_cast<int64_t>(accelerate::detail::ShmComm::kChunkBytes / sizeof(float));
  const int64_t chunk = floats / (P - 1) / 16 * 16;
  return {1, 3, 17, 1000, chunk - 1, chunk, chunk + 5, 2 * floats + 7};
}

void reduce_scatter_is_exact(const ProcessState& ps) {
  const int64_t P = ps.world_size(), r = ps.rank();
  for (int64_t S : shard_sizes(P)) {
    const auto x = input(P * S, torch::kFloat, r);
    auto out = torch::full({S}, -77.0f);
    run_shm(ps, "reduce_scatter (shm test)", ps.shm->reduce_scatter(x, out, static_cast<double>(P)));
    // Rank order, then the division: what every process computes for its own slice.
    auto expected = input(P * S, torch::kFloat, 0).narrow(0, r * S, S).clone();
    for (int64_t q = 1; q < P; ++q) expected.add_(input(P * S, torch::kFloat, q).narrow(0, r * S, S));
    expected.div_(static_cast<double>(P));
    EXPECT_THAT(torch::equal(out, expected), "reduce_scatter of shard "
                                                 << S << ": " << out.narrow(0, 0, std::min<int64_t>(S, 5))
                                                 << " expected " << expected.narrow(0, 0, std::min<int64_t>(S, 5)));
    EXPECT_THAT(torch::equal(x, input(P * S, torch::kFloat, r)),
                "reduce_scatter of shard " << S << " changed its input");
  }
  // No division: the sum itself.
  auto sum = torch::empty({5});
  run_shm(ps, "reduce_scatter (shm test)", ps.shm->reduce_scatter(torch::ones({P * 5}), sum, 1.0));
  EXPECT_THAT(torch::equal(sum, torch::full({5}, static_cast<float>(P))), "reduce_scatter without a divisor: " << sum);
}

void all_gather_is_exact(const ProcessState& ps) {
  const int64_t P = ps.world_size(), r = ps.rank();
  for (auto dtype : {torch::kFloat, torch::kBFloat16, torch::kDouble, torch::kByte}) {
    for (int64_t S : shard_sizes(P)) {
      auto expected = torch::empty({P * S}, dtype);
      for (int64_t q = 0; q < P; ++q) expected.narrow(0, q * S, S).copy_(input(S, dtype, q));
      auto out = torch::zeros({P * S}, dtype);
      run_shm(ps, "all_gather (shm test)", ps.shm->all_gather(input(S, dtype, r), out));
      EXPECT_THAT(torch::equal(out, expected), "all_gather of " << S << " " << c10::toString(dtype));
      // In place: the input is this process's own slice of the output (SHARD_GRAD_OP's buffer).
      auto full = torch::zeros({P * S}, dtype);
      full.narrow(0, r * S, S).copy_(input(S, dtype, r));
      run_shm(ps, "all_gather (shm test)", ps.shm->all_gather(full.narrow(0, r * S, S), full));
      EXPECT_THAT(torch::equal(full, expected), "in-place all_gather of " << S << " " << c10::toString(dtype));
    }
  }
}

int shm_fsdp() {
  Accelerator acc;
  auto& ps = accelerate::detail::AcceleratorAccess::process_state(acc);
  std::cout << describe(ps) << std::endl;
  EXPECT_THAT(ps.shm && ps.shm->one_host(), "the processes do not share memory on one host");
  if (ps.shm && ps.shm->one_host()) {
    reduce_scatter_is_exact(ps);
    all_gather_is_exact(ps);
  }
  acc.wait_for_everyone();
  std::cout << "shm_fsdp: done with " << g_failures << " failures" << std::endl;
  return g_failures;
}

}  // namespace

// -1: not a shared-memory scenario.
int run_shm_scenario(int argc, char** argv) {
  const std::string scenario = argv[1];
  const std::string arg = argc > 2 ? argv[2] : "";
  if (scenario == "shm_vs_gloo") return shm_vs_gloo(arg == "gloo");
  if (scenario == "grad_views") return grad_views();
  if (scenario == "shm_kill") return shm_kill(arg.empty() ? 1 : std::stoll(arg));
  if (scenario == "shm_model") return shm_model(std::stoll(arg));
  if (scenario == "shm_fsdp") return shm_fsdp();
  return -1;
}
