// Worker program for the runtime's multi-process tests (runtime_multiprocess_test.cpp
// starts it on 1 or 2 processes with the launchers' variables). Each scenario checks its
// own numbers and exits non-zero with a message when one is wrong.
//   runtime_worker train|accumulate [env]|no_sync|collectives|print_save <dir>|timeout [silent]|env|prepare_forms
//                  |diverge [uncaught]|watch_rules|rng|modes|shared_value
//                  and the shared-memory scenarios of runtime_worker_shm.cpp, short_batch <case>
//                  (runtime_worker_short_batch.cpp)
#include "worker_expect.h"

#include <accelerate/accelerate.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/comm/detail/process_state.h>

#include "comm/collective_watch.h"  // runtime/src: the divergence rules, on an in-process store

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

using accelerate::Accelerator;
using accelerate::AcceleratorOptions;

int run_shm_scenario(int argc, char** argv);          // runtime_worker_shm.cpp; -1: not one of its scenarios
int run_short_batch_scenario(int argc, char** argv);  // runtime_worker_short_batch.cpp; likewise

namespace {

int g_failures = 0;  // counted by EXPECT_THAT (worker_expect.h)

bool same(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && torch::equal(a, b);
}

// Two layers used in forward, one that never is (DDP's "unused parameters" case), and a buffer.
struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 4));
    unused = register_module("unused", torch::nn::Linear(4, 4));
    scale = register_buffer("scale", torch::rand({4}) + 0.5);
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::tanh(fc1(x))) * scale; }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, unused{nullptr};
  torch::Tensor scale;
};
TORCH_MODULE(Net);

void copy_params(Net& dst, Net& src) {
  torch::NoGradGuard g;
  auto d = dst->named_parameters();
  for (auto& p : src->named_parameters()) d[p.key()].copy_(p.value());
  auto db = dst->named_buffers();
  for (auto& b : src->named_buffers()) db[b.key()].copy_(b.value());
}

torch::Tensor flat_params(Net& net) {
  std::vector<torch::Tensor> v;
  for (auto& p : net->parameters()) v.push_back(p.detach().reshape({-1}));
  return torch::cat(v);
}

torch::Tensor flat_grads(Net& net, bool include_unused = false) {
  std::vector<torch::Tensor> v;
  for (auto& p : net->named_parameters()) {
    if (!include_unused && p.key().rfind("unused", 0) == 0) continue;
    v.push_back(p.value().grad().defined() ? p.value().grad().reshape({-1}) : torch::zeros({p.value().numel()}));
  }
  return torch::cat(v);
}

// The same data on every process: step s has a global batch of `rows` rows.
std::pair<torch::Tensor, torch::Tensor> global_batch(int64_t step, int64_t rows) {
  auto gen = at::detail::createCPUGenerator(1000 + step);
  auto x = torch::randn({rows, 8}, gen, torch::TensorOptions().dtype(torch::kFloat));
  auto y = torch::randn({rows, 4}, gen, torch::TensorOptions().dtype(torch::kFloat));
  return {x, y};
}

// Builds a model whose initial values differ per process (so prepare's broadcast is
// tested), prepares it and returns a reference copy holding process 0's values.
void setup(Accelerator& acc, Net& model, Net& reference) {
  acc.set_seed(7, /*device_specific=*/true);
  model = Net();
  reference = Net();
  auto before = flat_params(model).clone();
  acc.prepare(model);
  auto after = flat_params(model);
  auto from0 = acc.broadcast(after, 0);
  EXPECT_THAT(same(after, from0), "parameters differ from process 0's after prepare");
  if (acc.process_index() != 0) EXPECT_THAT(!same(before, after), "process 1 kept its own initial parameters");
  auto buf0 = acc.broadcast(model->scale, 0);
  EXPECT_THAT(same(model->scale, buf0), "buffer differs from process 0's after prepare");
  copy_params(reference, model);
}

void check_equal_across_processes(Accelerator& acc, const torch::Tensor& t, const std::string& what) {
  auto all = acc.gather(t.reshape({1, -1}));
  for (int64_t r = 1; r < all.size(0); ++r) {
    EXPECT_THAT(torch::equal(all[0], all[r]), what << " differ between process 0 and " << r);
  }
}

// 2 processes with batch B = 1 process with batch 2B (SGD with momentum, several steps).
// Odd steps use a plain loss.backward() to show that it is synchronised too.
int train() {
  Accelerator acc(AcceleratorOptions().first_bucket_cap_mb(0.0005).bucket_cap_mb(0.002));
  Net model{nullptr}, reference{nullptr};
  setup(acc, model, reference);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  acc.prepare(opt);
  const int64_t B = 6, P = acc.num_processes(), r = acc.process_index();
  for (int64_t step = 0; step < 6; ++step) {
    auto [x, y] = global_batch(step, B * 2);
    const int64_t local = B * 2 / P;
    opt.zero_grad();
    auto loss = torch::mse_loss(model->forward(x.narrow(0, r * local, local)), y.narrow(0, r * local, local));
    if (step % 2 == 0)
      acc.backward(loss);
    else
      loss.backward();
    opt.step();

    ref_opt.zero_grad();
    torch::mse_loss(reference->forward(x), y).backward();
    ref_opt.step();
  }
  const double diff = (flat_params(model) - flat_params(reference)).abs().max().item<double>();
  std::cout << "train: processes=" << P << " max|param - reference(1 process, batch 2B)| = " << diff << std::endl;
  EXPECT_THAT(diff <= 1e-6, "parameters differ from the single-process large-batch run by " << diff);
  EXPECT_THAT(!model->unused->weight.grad().defined(), "an unused parameter got a gradient");
  check_equal_across_processes(acc, flat_params(model), "final parameters");
  return g_failures;
}

// accumulate() with 2 steps of batch B on each process = one step of batch 2*B*P.
// With from_env, the 2 steps come from ACCELERATE_GRADIENT_ACCUMULATION_STEPS.
int accumulate(bool from_env) {
  auto options = AcceleratorOptions().first_bucket_cap_mb(0.0005).bucket_cap_mb(0.002);
  if (!from_env) options.gradient_accumulation_steps(2);
  Accelerator acc(options);
  EXPECT_THAT(acc.gradient_accumulation_steps() == 2,
              "gradient_accumulation_steps() = " << acc.gradient_accumulation_steps());
  Net model{nullptr}, reference{nullptr};
  setup(acc, model, reference);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05));
  torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.05));
  acc.prepare(model, opt);
  const int64_t B = 3, P = acc.num_processes(), r = acc.process_index();
  int64_t optimizer_steps = 0;
  for (int64_t step = 0; step < 4; ++step) {
    auto [x, y] = global_batch(step, 2 * B * P);
    for (int64_t micro = 0; micro < 2; ++micro) {
      auto guard = acc.accumulate(model);
      const int64_t start = (micro * P + r) * B;
      auto loss = torch::mse_loss(model->forward(x.narrow(0, start, B)), y.narrow(0, start, B));
      acc.backward(loss);
      EXPECT_THAT(acc.sync_gradients() == (micro == 1), "sync_gradients() is wrong at micro step " << micro);
      if (micro == 0 && P > 1) {
        auto all = acc.gather(flat_grads(model).reshape({1, -1}));
        EXPECT_THAT(!torch::allclose(all[0], all[1]), "gradients already agree on an accumulation step");
      }
      if (acc.sync_gradients()) {
        check_equal_across_processes(acc, flat_grads(model), "gradients after the sync step");
        opt.step();
        opt.zero_grad();
        ++optimizer_steps;
      }
    }
    ref_opt.zero_grad();
    torch::mse_loss(reference->forward(x), y).backward();
    ref_opt.step();
  }
  const double diff = (flat_params(model) - flat_params(reference)).abs().max().item<double>();
  std::cout << "accumulate: processes=" << P << " optimizer steps=" << optimizer_steps
            << " max|param - reference(batch 2*B*P)| = " << diff << std::endl;
  EXPECT_THAT(optimizer_steps == 4, "expected 4 optimizer steps, got " << optimizer_steps);
  // The last batch of a loader always synchronises, whatever the count.
  accelerate::detail::AcceleratorAccess::loader_state(acc).end_of_dataloader = true;
  {
    auto guard = acc.accumulate(model);
    EXPECT_THAT(acc.sync_gradients(), "accumulate() did not sync on the loader's last batch (9th call)");
  }
  accelerate::detail::AcceleratorAccess::loader_state(acc).end_of_dataloader = false;
  {
    auto guard = acc.accumulate(model);
    EXPECT_THAT(acc.sync_gradients(), "accumulate() did not sync on the 10th call");
  }
  EXPECT_THAT(diff <= 1e-6, "parameters differ from the large-batch run by " << diff);
  return g_failures;
}

// Under no_sync gradients stay local (and differ); the next synchronised backward
// averages the accumulated sum, equal to the reference's gradient.
int no_sync() {
  Accelerator acc;
  Net model{nullptr}, reference{nullptr};
  setup(acc, model, reference);
  const int64_t B = 4, P = acc.num_processes(), r = acc.process_index();
  auto [x, y] = global_batch(0, 2 * B * P);
  auto part = [&](int64_t micro) { return (micro * P + r) * B; };
  {
    auto guard = acc.no_sync(model);
    acc.backward(torch::mse_loss(model->forward(x.narrow(0, part(0), B)), y.narrow(0, part(0), B)));
  }
  auto local = flat_grads(model).clone();
  auto all = acc.gather(local.reshape({1, -1}));
  if (P > 1) EXPECT_THAT(!torch::allclose(all[0], all[1]), "gradients agree under no_sync");
  acc.backward(torch::mse_loss(model->forward(x.narrow(0, part(1), B)), y.narrow(0, part(1), B)));
  check_equal_across_processes(acc, flat_grads(model), "gradients after the sync step");
  // Reference: sum over the 2 micro batches of the per-micro mean loss, averaged over P.
  for (int64_t micro = 0; micro < 2; ++micro) {
    for (int64_t q = 0; q < P; ++q) {
      const int64_t s = (micro * P + q) * B;
      (torch::mse_loss(reference->forward(x.narrow(0, s, B)), y.narrow(0, s, B)) / static_cast<double>(P)).backward();
    }
  }
  const double diff = (flat_grads(model) - flat_grads(reference)).abs().max().item<double>();
  std::cout << "no_sync: max|grad - reference| = " << diff << std::endl;
  EXPECT_THAT(diff <= 1e-6, "synchronised gradients differ from the reference by " << diff);
  return g_failures;
}

int collectives() {
  Accelerator acc;
  const int64_t P = acc.num_processes(), r = acc.process_index();
  EXPECT_THAT(P == 2, "collectives expects 2 processes");

  // gather: rank r contributes r+1 rows [10r, 10r+1, ...] -> [0, 10, 11]; 2-d, bf16, bool, scalar.
  auto rows = torch::arange(r + 1, torch::kInt64) + 10 * r;
  EXPECT_THAT(same(acc.gather(rows), torch::tensor({0, 10, 11}, torch::kInt64)), "gather int64: " << acc.gather(rows));
  auto m = torch::full({r + 1, 3}, static_cast<double>(r), torch::kFloat);
  auto gm = acc.gather(m);
  EXPECT_THAT(
      gm.sizes() == torch::IntArrayRef({3, 3}) && gm[0].sum().item<float>() == 0 && gm[2].sum().item<float>() == 3,
      "gather 2-d: " << gm);
  auto b = acc.gather(torch::full({2}, 1.5 + r, torch::kBFloat16));
  EXPECT_THAT(same(b, torch::tensor({1.5, 1.5, 2.5, 2.5}, torch::kBFloat16)), "gather bf16: " << b);
  auto flags = acc.gather(torch::tensor({r == 0}, torch::kBool));
  EXPECT_THAT(same(flags, torch::tensor({true, false}, torch::kBool)), "gather bool: " << flags);
  EXPECT_THAT(same(acc.gather(torch::tensor(3.0 * r)), torch::tensor({0.0, 3.0}, torch::kFloat)), "gather scalar");

  // gather_for_metrics: 2 + 2 rows gathered, 3 real ones in the last round.
  accelerate::detail::AcceleratorAccess::loader_state(acc).end_of_dataloader = true;
  accelerate::detail::AcceleratorAccess::loader_state(acc).remainder = 3;
  auto metrics = acc.gather_for_metrics(torch::tensor({2 * r, 2 * r + 1}, torch::kInt64));
  EXPECT_THAT(same(metrics, torch::tensor({0, 1, 2}, torch::kInt64)), "gather_for_metrics: " << metrics);
  accelerate::detail::AcceleratorAccess::loader_state(acc) = accelerate::LoaderState();
  auto not_last = acc.gather_for_metrics(torch::tensor({2 * r, 2 * r + 1}, torch::kInt64));
  EXPECT_THAT(not_last.size(0) == 4, "gather_for_metrics dropped rows outside the last batch");

  // gather_object: lists concatenated in rank order (any lengths, empty strings and NUL bytes
  // kept, an empty list on one process); single values one per process; a plain struct.
  const std::vector<std::string> words =
      r == 0 ? std::vector<std::string>{"a", ""} : std::vector<std::string>{std::string("x\0y", 3)};
  const auto all_words = acc.gather_object(words);
  EXPECT_THAT(all_words == (std::vector<std::string>{"a", "", std::string("x\0y", 3)}),
              "gather_object strings: " << all_words.size() << " items");
  EXPECT_THAT(acc.gather_object(static_cast<int64_t>(10 * r)) == (std::vector<int64_t>{0, 10}), "gather_object int64");
  const auto some = acc.gather_object(r == 0 ? std::vector<double>{} : std::vector<double>{1.5, -2.0});
  EXPECT_THAT(some == (std::vector<double>{1.5, -2.0}), "gather_object with an empty list on process 0");
  struct Pair {
    int32_t step;
    double loss;
  };
  const auto pairs = acc.gather_object(Pair{static_cast<int32_t>(r), 0.25 * static_cast<double>(r)});
  EXPECT_THAT(pairs.size() == 2 && pairs[1].step == 1 && pairs[1].loss == 0.25 && pairs[0].loss == 0.0,
              "gather_object struct");
  EXPECT_THAT(acc.gather_object("rank") == (std::vector<std::string>{"rank", "rank"}), "gather_object text");
  const auto raw = acc.gather_bytes(std::string(static_cast<size_t>(r) * 3, 'z'));
  EXPECT_THAT(raw.size() == 2 && raw[0].empty() && raw[1] == "zzz", "gather_bytes");

  // split_between_processes: 5 items on 2 processes -> 3 and 2; padded, 3 and 3 (the last
  // item repeated); 1 item -> process 1 gets none, or the last item when padded; maps split
  // each value; tensors by rows.
  const std::vector<int> five{1, 2, 3, 4, 5};
  EXPECT_THAT(acc.split_between_processes(five) == (r == 0 ? std::vector<int>{1, 2, 3} : std::vector<int>{4, 5}),
              "split_between_processes vector");
  EXPECT_THAT(
      acc.split_between_processes(five, true) == (r == 0 ? std::vector<int>{1, 2, 3} : std::vector<int>{4, 5, 5}),
      "split_between_processes padded");
  EXPECT_THAT(acc.split_between_processes(std::vector<int>{7}, true) == std::vector<int>{7} &&
                  acc.split_between_processes(std::vector<int>{7}).size() == static_cast<size_t>(r == 0 ? 1 : 0),
              "split_between_processes with fewer items than processes");
  const std::map<std::string, std::vector<std::string>> prompts{{"a", {"x", "y", "z"}}, {"b", {"u"}}};
  const auto mine = acc.split_between_processes(prompts, true);
  EXPECT_THAT(mine.at("a") == (r == 0 ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"z", "z"}) &&
                  mine.at("b") == std::vector<std::string>{"u"},
              "split_between_processes map");
  const auto rows5 = acc.split_between_processes(torch::arange(10, torch::kInt64).reshape({5, 2}), true);
  EXPECT_THAT(same(rows5, r == 0 ? torch::tensor({0, 1, 2, 3, 4, 5}, torch::kInt64).reshape({3, 2})
                                 : torch::tensor({6, 7, 8, 9, 8, 9}, torch::kInt64).reshape({3, 2})),
              "split_between_processes tensor: " << rows5);
  EXPECT_THAT(
      same(acc.gather(acc.split_between_processes(torch::arange(5, torch::kInt64))), torch::arange(5, torch::kInt64)),
      "split then gather gives the input back");

  // Triggers: nobody set -> false everywhere; process 1 alone sets -> true on both, then
  // cleared; both set -> true once.
  EXPECT_THAT(!acc.check_trigger(), "check_trigger without any set_trigger");
  if (r == 1) acc.set_trigger();
  EXPECT_THAT(acc.check_trigger(), "process 1's trigger not seen on process " << r);
  EXPECT_THAT(!acc.check_trigger(), "check_trigger did not clear the trigger");
  acc.set_trigger();
  EXPECT_THAT(acc.check_trigger() && !acc.check_trigger(), "trigger set on both processes");

  // reduce: [r+1, 2(r+1)] -> sum [3, 6], mean [1.5, 3], max [2, 4], min [1, 2].
  auto v = torch::tensor({1.0 + r, 2.0 * (r + 1)}, torch::kFloat);
  EXPECT_THAT(same(acc.reduce(v, accelerate::ReduceOp::Sum), torch::tensor({3.0, 6.0}, torch::kFloat)), "reduce sum");
  EXPECT_THAT(same(acc.reduce(v, accelerate::ReduceOp::Mean), torch::tensor({1.5, 3.0}, torch::kFloat)), "reduce mean");
  EXPECT_THAT(same(acc.reduce(v, accelerate::ReduceOp::Max), torch::tensor({2.0, 4.0}, torch::kFloat)), "reduce max");
  EXPECT_THAT(same(acc.reduce(v, accelerate::ReduceOp::Min), torch::tensor({1.0, 2.0}, torch::kFloat)), "reduce min");
  EXPECT_THAT(
      same(acc.reduce(v.to(torch::kBFloat16), accelerate::ReduceOp::Sum), torch::tensor({3.0, 6.0}, torch::kBFloat16)),
      "reduce bf16 (Gloo would abort on bf16: must go through fp32)");
  EXPECT_THAT(same(acc.reduce(torch::tensor({r + 1}, torch::kInt64)), torch::tensor({3}, torch::kInt64)),
              "reduce int64");
  EXPECT_THAT(same(acc.reduce(torch::tensor({r + 1}, torch::kInt64), accelerate::ReduceOp::Mean),
                   torch::tensor({1.5}, torch::kFloat)),
              "reduce int64 mean");
  EXPECT_THAT(same(v, torch::tensor({1.0 + r, 2.0 * (r + 1)}, torch::kFloat)), "reduce modified its input");

  // broadcast from process 1: receivers need not know shape or dtype.
  auto src = r == 1 ? torch::arange(6, torch::kFloat).reshape({2, 3}) : torch::zeros({1}, torch::kInt32);
  auto got = acc.broadcast(src, 1);
  EXPECT_THAT(same(got, torch::arange(6, torch::kFloat).reshape({2, 3})), "broadcast from 1: " << got);
  auto bb = acc.broadcast(torch::full({2}, 0.5 + r, torch::kBFloat16), 0);
  EXPECT_THAT(same(bb, torch::full({2}, 0.5, torch::kBFloat16)), "broadcast bf16");

  // pad_across_processes: dim 1 has r+1 columns -> padded to 2 with -1, at the end or the start.
  auto t = torch::full({2, r + 1}, static_cast<int64_t>(7), torch::kInt64);
  auto padded = acc.pad_across_processes(t, 1, -1);
  auto padded_first = acc.pad_across_processes(t, -1, -1, /*pad_first=*/true);
  if (r == 0) {
    EXPECT_THAT(same(padded, torch::tensor({7, -1, 7, -1}, torch::kInt64).reshape({2, 2})), "pad: " << padded);
    EXPECT_THAT(same(padded_first, torch::tensor({-1, 7, -1, 7}, torch::kInt64).reshape({2, 2})),
                "pad_first: " << padded_first);
  } else {
    EXPECT_THAT(same(padded, t) && same(padded_first, t), "the largest tensor was padded");
  }

  // shared_seed is the same everywhere; set_seed makes it deterministic.
  const auto seed = acc.shared_seed();
  auto seeds = acc.gather(torch::tensor({static_cast<int64_t>(seed)}, torch::kInt64));
  EXPECT_THAT(seeds[0].item<int64_t>() == seeds[1].item<int64_t>(), "shared_seed differs between processes");
  acc.set_seed(1234);
  EXPECT_THAT(acc.shared_seed() == 1234u, "shared_seed ignores set_seed");

  EXPECT_THAT(&Accelerator::current() == &acc && Accelerator::exists(), "Accelerator::current()");
  EXPECT_THAT(acc.distributed_type() == accelerate::DistributedType::MultiCPU, "distributed_type");
  acc.wait_for_everyone();
  std::cout << "collectives: done with " << g_failures << " failures" << std::endl;
  return g_failures;
}

// print and save happen once; main_process_first lets process 0 finish its block first.
int print_save(const std::string& dir) {
  Accelerator acc;
  acc.print("PRINTED-ONCE from process ", acc.process_index());
  acc.save(torch::arange(5, torch::kFloat), dir + "/tensor.pt");
  const std::string marker = dir + "/main-was-first";
  {
    auto first = acc.main_process_first();
    if (acc.is_main_process()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a slow "download"
      std::ofstream(marker) << "done";
    } else {
      EXPECT_THAT(std::ifstream(marker).good(), "process " << acc.process_index() << " ran before the main process");
    }
  }
  acc.wait_for_everyone();
  torch::Tensor loaded;
  torch::load(loaded, dir + "/tensor.pt");
  EXPECT_THAT(same(loaded, torch::arange(5, torch::kFloat)), "saved tensor reads back wrong");
  return g_failures;
}

// A collective whose peer has gone away fails with a message, it does not hang.
// With `silent`, process 1 stays alive but never calls the collective: the timeout fires.
int timeout(bool silent) {
  Accelerator acc;
  if (acc.process_index() == 1) {  // does not take part
    if (silent) std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    acc.reduce(torch::ones({4}));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    acc.reduce(torch::ones({4}));
  } catch (const accelerate::DistributedError& e) {
    const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "CAUGHT after " << waited << " s: " << e.what() << std::endl;
    return 0;
  }
  std::cout << "FAIL: no exception from a collective without its peer" << std::endl;
  return 1;
}

// Divergent processes (issue #15): process 1 leaves the training loop early (as after a
// per-process `if (loss < tol) break;`) and waits in wait_for_everyone while process 0 is
// in the gradient all-reduce of its next step. Both must fail quickly with a message that
// names both collectives; with `uncaught` the error leaves main (the launcher test).
int diverge(bool uncaught) {
  Accelerator acc;
  acc.set_seed(11);
  torch::nn::Linear model(8, 4);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  acc.prepare(model, opt);
  const auto start = std::chrono::steady_clock::now();
  try {
    for (int step = 0; step < 5; ++step) {
      if (acc.process_index() == 1 && step == 2) break;
      opt.zero_grad();
      acc.backward(model->forward(torch::randn({4, 8})).square().mean());
      opt.step();
    }
    acc.wait_for_everyone();
  } catch (const accelerate::DistributedError& e) {
    const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "CAUGHT after " << waited << " s: " << e.what() << std::endl;
    if (uncaught) throw;
    return 0;
  }
  std::cout << "FAIL: divergent processes did not fail" << std::endl;
  return 1;
}

// The divergence rules of CollectiveWatch, with three "processes" sharing one real c10d
// store in this process (deterministic: no timing involved).
int watch_rules() {
  using accelerate::detail::CollectiveWatch;
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::unique_ptr<CollectiveWatch>> w;
  for (int64_t r = 0; r < 3; ++r) {
    w.push_back(std::make_unique<CollectiveWatch>(store, r, 3, std::chrono::milliseconds(0)));
    w.back()->announce();
  }
  for (auto& p : w) {
    EXPECT_THAT(p->begin("broadcast A") == 1 && p->begin("all_reduce B") == 2, "collectives are numbered from 1");
  }
  // 0 and 1 wait in the same collective, 2 is busy elsewhere: nobody is blamed.
  w[0]->publish(2, "all_reduce B");
  w[1]->publish(2, "all_reduce B");
  EXPECT_THAT(!w[0]->find_divergence(2, "all_reduce B") && !w[1]->find_divergence(2, "all_reduce B"),
              "processes in the same collective (and an idle one) counted as diverged");
  // 0 went on to #3 while 1 still waits in #2, which 0 called too: 1 only lags.
  w[0]->begin("barrier C");
  w[0]->publish(3, "barrier C");
  EXPECT_THAT(!w[0]->find_divergence(3, "barrier C"), "a lagging peer counted as diverged");
  // 2 waits in a #2 of another kind: 0 remembers its own #2 and finds it.
  w[2]->publish(2, "gather X");
  const auto found = w[0]->find_divergence(3, "barrier C");
  const std::string expected =
      "process 2 is in 'gather X' (collective #2) while process 0 called 'all_reduce B' as collective #2 and now "
      "waits in 'barrier C' (collective #3)";
  EXPECT_THAT(found && *found == expected, "divergence found by process 0: " << found.value_or("(none)"));
  // The others read the same message from the abort key.
  for (int r : {1, 2}) {
    const auto seen = w[r]->find_divergence(2, r == 1 ? "all_reduce B" : "gather X");
    EXPECT_THAT(seen && *seen == expected, "process " << r << " read: " << seen.value_or("(none)"));
  }

  // Same number, different kinds: both sides write the same message (lower rank first).
  auto store2 = c10::make_intrusive<c10d::HashStore>();
  CollectiveWatch a(store2, 0, 2, std::chrono::milliseconds(0)), b(store2, 1, 2, std::chrono::milliseconds(0));
  a.announce();
  b.announce();
  a.begin("all_reduce of gradient bucket 0 of 1");
  b.begin("barrier (wait_for_everyone)");
  b.publish(1, "barrier (wait_for_everyone)");
  EXPECT_THAT(!b.find_divergence(1, "barrier (wait_for_everyone)"), "a peer that publishes nothing was blamed");
  a.publish(1, "all_reduce of gradient bucket 0 of 1");
  const auto from_b = b.find_divergence(1, "barrier (wait_for_everyone)");
  const std::string both =
      "process 0 is in 'all_reduce of gradient bucket 0 of 1' (collective #1) while process 1 is in "
      "'barrier (wait_for_everyone)' (collective #1)";
  EXPECT_THAT(from_b && *from_b == both, "same number, different kinds: " << from_b.value_or("(none)"));
  const auto from_a = a.find_divergence(1, "all_reduce of gradient bucket 0 of 1");
  EXPECT_THAT(from_a && *from_a == both, "process 0 read: " << from_a.value_or("(none)"));

  // A peer stuck in a collective older than this process remembers: no verdict.
  auto store3 = c10::make_intrusive<c10d::HashStore>();
  CollectiveWatch c(store3, 0, 2, std::chrono::milliseconds(0)), d(store3, 1, 2, std::chrono::milliseconds(0));
  c.announce();
  d.announce();
  uint64_t last = 0;
  for (int i = 0; i < 100; ++i) last = c.begin("all_reduce");
  d.publish(1, "something else");
  c.publish(last, "all_reduce");
  EXPECT_THAT(!c.find_divergence(last, "all_reduce"), "judged a collective older than the remembered ones");
  std::cout << "watch_rules: done with " << g_failures << " failures" << std::endl;
  return g_failures;
}

// Unseeded programs (issue #15, item 8): after the Accelerator exists every process draws
// what process 0 draws, so a problem drawn from the global generator is the same problem
// everywhere and 2 processes reproduce 1; set_seed(s, true) still gives per-process streams.
int rng() {
  Accelerator acc;
  const int64_t P = acc.num_processes();
  auto drawn = torch::randn({6});
  auto all = acc.gather(drawn.reshape({1, -1}));
  for (int64_t q = 1; q < P; ++q) EXPECT_THAT(torch::equal(all[0], all[q]), "torch::randn differs on process " << q);

  // A regression tutorial: its target and data come from the global generator, unseeded.
  const auto w_true = torch::randn({8, 1});
  const auto x = torch::randn({64, 8});
  const auto y = x.mm(w_true) + 0.01 * torch::randn({64, 1});
  torch::nn::Linear model(8, 1), reference(8, 1);
  acc.prepare(model);
  {
    torch::NoGradGuard g;
    reference->weight.copy_(model->weight);
    reference->bias.copy_(model->bias);
  }
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.1));
  const auto [first, last] = acc.process_range(0, x.size(0));
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    acc.backward(torch::mse_loss(model->forward(x.slice(0, first, last)), y.slice(0, first, last)));
    opt.step();
    ref_opt.zero_grad();
    torch::mse_loss(reference->forward(x), y).backward();
    ref_opt.step();
  }
  const double diff = std::max((model->weight - reference->weight).abs().max().item<double>(),
                               (model->bias - reference->bias).abs().max().item<double>());
  const double loss = torch::mse_loss(model->forward(x), y).item<double>();
  std::cout << "rng: processes=" << P << " loss=" << loss << " max|param - 1-process run| = " << diff << std::endl;
  EXPECT_THAT(diff <= 1e-5, "the unseeded regression differs from one process by " << diff);
  EXPECT_THAT(loss < 0.05, "the regression did not converge: loss " << loss);

  acc.set_seed(5, /*device_specific=*/true);
  auto own = acc.gather(torch::randn({6}).reshape({1, -1}));
  if (P > 1) EXPECT_THAT(!torch::equal(own[0], own[1]), "set_seed(5, true) gave the same stream to every process");
  acc.set_seed(5);
  auto same_seed = acc.gather(torch::randn({6}).reshape({1, -1}));
  if (P > 1) EXPECT_THAT(torch::equal(same_seed[0], same_seed[1]), "set_seed(5) gave different streams");
  return g_failures;
}

// A small data set for the loader's collectives: sample i is the number i.
struct Numbers : torch::data::datasets::Dataset<Numbers> {
  torch::data::Example<> get(size_t i) override {
    return {torch::full({1}, static_cast<float>(i)), torch::full({1}, static_cast<float>(i))};
  }
  torch::optional<size_t> size() const override { return 10; }
};

// Every collective of the runtime under one grad mode: "grad", "no_grad" or "inference"
// (torch::InferenceMode, as evaluation code often uses; its tensors must never reach the
// communication thread, which writes outside the mode).
void collectives_in_mode(Accelerator& acc, const std::string& mode) {
  const int64_t r = acc.process_index(), P = acc.num_processes();
  torch::nn::Linear model(4, 2), reference(4, 2);
  // Kept alive: a later model at a freed address would look prepared already.
  static std::vector<torch::nn::Linear> keep;
  keep.push_back(model);
  acc.prepare(model);
  {
    torch::NoGradGuard g;
    reference->weight.copy_(model->weight);
    reference->bias.copy_(model->bias);
  }
  const auto x = torch::arange(8 * P, torch::kFloat).reshape({2 * P, 4}) / 10.0;
  torch::mse_loss(reference->forward(x), torch::zeros({2 * P, 2})).backward();
  auto loss = torch::mse_loss(model->forward(x.narrow(0, 2 * r, 2)), torch::zeros({2, 2}));

  std::optional<torch::NoGradGuard> no_grad;
  std::optional<c10::InferenceMode> inference;
  if (mode == "no_grad") no_grad.emplace();
  if (mode == "inference") inference.emplace();
  const std::string in = " (" + mode + ")";
  EXPECT_THAT(c10::InferenceMode::is_enabled() == (mode == "inference"), "mode not entered" << in);

  acc.backward(loss);  // the gradient sync, with backward called inside the mode
  const double gdiff = (model->weight.grad() - reference->weight.grad()).abs().max().item<double>();
  EXPECT_THAT(gdiff < 1e-6, "synchronised gradient differs from the full batch's by " << gdiff << in);

  auto rows = torch::arange(r + 1, torch::kInt64) + 10 * r;
  EXPECT_THAT(same(acc.gather(rows), torch::tensor({0, 10, 11}, torch::kInt64)), "gather" << in);
  auto v = torch::tensor({1.0 + r, 2.0 * (r + 1)}, torch::kFloat);
  EXPECT_THAT(same(acc.reduce(v, accelerate::ReduceOp::Sum), torch::tensor({3.0, 6.0}, torch::kFloat)), "reduce" << in);
  auto got = acc.broadcast(torch::full({2}, static_cast<float>(r + 1)), 1);
  EXPECT_THAT(same(got, torch::full({2}, 2.0f)), "broadcast" << in);
  auto padded = acc.pad_across_processes(torch::full({r + 1}, 7.0f), 0, -1);
  EXPECT_THAT(padded.size(0) == 2, "pad_across_processes" << in);
  if (r == 1) acc.set_trigger();
  EXPECT_THAT(acc.check_trigger(), "check_trigger" << in);
  acc.wait_for_everyone();

  // The loader's own collective (the broadcast of its order at begin()) and gather_for_metrics.
  auto loader =
      acc.prepare_data_loader(Numbers().map(torch::data::transforms::Stack<>()), torch::data::DataLoaderOptions(2));
  std::vector<float> seen;
  for (auto& batch : *loader) {
    auto all = acc.gather_for_metrics(batch.data.reshape({-1})).contiguous();
    seen.insert(seen.end(), all.data_ptr<float>(), all.data_ptr<float>() + all.numel());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<float> expected(10);
  for (int i = 0; i < 10; ++i) expected[i] = static_cast<float>(i);
  EXPECT_THAT(seen == expected, "gather_for_metrics over a prepared loader saw " << seen.size() << " samples" << in);
}

int modes() {
  Accelerator acc;
  for (const std::string mode : {"grad", "no_grad", "inference"}) {
    collectives_in_mode(acc, mode);
    std::cout << "modes: " << mode << " done, " << g_failures << " failures so far" << std::endl;
  }
  return g_failures;
}

// Every way of holding a model, optimizer and scheduler goes through prepare(); models
// start identical everywhere; small buckets are all-reduced while backward still runs.
int prepare_forms() {
  Accelerator acc(AcceleratorOptions().first_bucket_cap_mb(0.0001).bucket_cap_mb(0.0002));
  acc.set_seed(3, /*device_specific=*/true);
  torch::nn::Sequential seq(torch::nn::Linear(8, 8), torch::nn::Tanh(), torch::nn::Linear(8, 8));
  auto shared = std::make_shared<NetImpl>();
  NetImpl by_value;
  NetImpl pointee;
  NetImpl* raw = &pointee;
  auto adam = std::make_unique<torch::optim::Adam>(seq->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::StepLR scheduler(*adam, 1, 0.5);
  acc.prepare(seq, shared, by_value, raw, adam, scheduler);
  auto flat = [](torch::nn::Module& m) {
    std::vector<torch::Tensor> v;
    for (auto& p : m.parameters()) v.push_back(p.detach().reshape({-1}));
    for (auto& b : m.buffers()) v.push_back(b.detach().reshape({-1}));
    return torch::cat(v);
  };
  torch::nn::Module* models[] = {seq.ptr().get(), shared.get(), &by_value, raw};
  const char* names[] = {"Sequential", "shared_ptr", "by value", "raw pointer"};
  for (int i = 0; i < 4; ++i) {
    auto mine = flat(*models[i]);
    EXPECT_THAT(same(mine, acc.broadcast(mine, 0)), names[i] << " model differs from process 0's after prepare");
  }
  acc.backward(seq->forward(torch::randn({4, 8})).square().sum());
  adam->step();
  const auto stats = acc.grad_sync_stats();
  std::cout << "prepare_forms: models=" << stats.models << " buckets=" << stats.buckets << " passes=" << stats.passes
            << " launched during backward=" << stats.launched_during_backward << " at end=" << stats.launched_at_end
            << std::endl;
  EXPECT_THAT(stats.models == 4 && stats.passes == 1, "one synchronised pass over the Sequential expected");
  EXPECT_THAT(stats.launched_during_backward >= 2, "buckets were not all-reduced while backward ran");
  check_equal_across_processes(acc, flat(*seq), "Sequential parameters after an Adam step");

  // BatchNorm statistics from different data agree after a synchronised step (broadcast_buffers).
  torch::nn::Sequential bn(torch::nn::Linear(8, 8), torch::nn::BatchNorm1d(8));
  acc.prepare(bn);
  acc.backward(bn->forward(torch::randn({6, 8}) * (1.0 + acc.process_index())).sum());
  const auto stats_buffers =
      torch::cat({bn[1]->as<torch::nn::BatchNorm1d>()->running_mean, bn[1]->as<torch::nn::BatchNorm1d>()->running_var});
  EXPECT_THAT(!torch::equal(stats_buffers.narrow(0, 8, 8), torch::ones({8})), "running_var never updated");
  check_equal_across_processes(acc, stats_buffers, "BatchNorm running statistics");

  // A layer only process 1 uses: no hang, and everyone gets the average with process 0's
  // zero (d/dW of sum(W 1 + b) is all ones, so 1/2 with 2 processes).
  auto loss = shared->forward(torch::randn({2, 8})).sum();
  if (acc.process_index() == 1) loss = loss + shared->unused(torch::ones({1, 4})).sum();
  acc.backward(loss);
  const auto& g = shared->unused->weight.grad();
  EXPECT_THAT(g.defined() && torch::allclose(g, torch::full({4, 4}, 1.0 / acc.num_processes())),
              "gradient of a layer used on one process only: " << g);
  return g_failures;
}

// Constructs an Accelerator from whatever the environment says (for the error tests).
int env() {
  Accelerator acc;
  std::cout << "rank " << acc.process_index() << " of " << acc.num_processes() << " on " << acc.device() << std::endl;
  return 0;
}

// shared_seed(local) (issue #29, item 4): process 0's value on every process, as many times
// as it is called, in the argument's type; on one process the argument itself, with no
// draw from torch's generator (a migrated program seeded from random_device is then the
// original program there).
int shared_value() {
  Accelerator acc;
  const int64_t P = acc.num_processes();
  const int r = acc.process_index();
  torch::manual_seed(11);
  const auto expected_draw = torch::randint(1000000, {3}, torch::kInt64);
  torch::manual_seed(11);
  for (uint64_t call = 0; call < 3; ++call) {
    // The top bit set: the value must survive the int64 carriage unchanged.
    const uint64_t local = 0x8000000000000000ull + 1000003ull * static_cast<uint64_t>(r + 1) + call;
    const uint64_t got = acc.shared_seed(local);
    EXPECT_THAT(got == 0x8000000000000000ull + 1000003ull + call, "call " << call << ": " << got);
    auto all = acc.gather(torch::tensor({static_cast<int64_t>(got)}, torch::kInt64));
    for (int64_t q = 1; q < P; ++q) EXPECT_THAT(all[q].item<int64_t>() == all[0].item<int64_t>(), "process " << q);
  }
  const unsigned narrow = acc.shared_seed(static_cast<unsigned>(77 + r));
  EXPECT_THAT(narrow == 77u, "unsigned: " << narrow);
  const long negative = acc.shared_seed(static_cast<long>(-5 - r));
  EXPECT_THAT(negative == -5, "long: " << negative);
  EXPECT_THAT(torch::equal(torch::randint(1000000, {3}, torch::kInt64), expected_draw),
              "shared_seed(local) moved torch's default generator");
  std::cout << "shared_value: processes=" << P << " done with " << g_failures << " failures" << std::endl;
  return g_failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: runtime_worker train|accumulate|no_sync|collectives|print_save <dir>|timeout [silent]|env|"
                 "prepare_forms|diverge [uncaught]|watch_rules|rng|modes|shared_value\n";
    return 2;
  }
  const std::string scenario = argv[1];
  try {
    int failures = 0;
    if (scenario == "train")
      failures = train();
    else if (scenario == "accumulate")
      failures = accumulate(argc > 2 && std::string(argv[2]) == "env");
    else if (scenario == "no_sync")
      failures = no_sync();
    else if (scenario == "collectives")
      failures = collectives();
    else if (scenario == "print_save" && argc > 2)
      failures = print_save(argv[2]);
    else if (scenario == "timeout")
      failures = timeout(argc > 2 && std::string(argv[2]) == "silent");
    else if (scenario == "env")
      failures = env();
    else if (scenario == "prepare_forms")
      failures = prepare_forms();
    else if (scenario == "diverge")
      failures = diverge(argc > 2 && std::string(argv[2]) == "uncaught");
    else if (scenario == "watch_rules")
      failures = watch_rules();
    else if (scenario == "rng")
      failures = rng();
    else if (scenario == "modes")
      failures = modes();
    else if (scenario == "shared_value")
      failures = shared_value();
    else if ((failures = run_shm_scenario(argc, argv)) >= 0) {
    } else if ((failures = run_short_batch_scenario(argc, argv)) >= 0) {
    } else {
      std::cerr << "runtime_worker: unknown scenario " << scenario << "\n";
      return 2;
    }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cout << "ERROR: " << e.what() << std::endl;
    return 3;
  }
}
