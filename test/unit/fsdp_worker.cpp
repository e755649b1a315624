// The processes the FSDP tests start (`fsdp_tests --fsdp-worker MODE ...`), with the
// launchers' variables (test/support) and the FSDP settings in the environment, as
// `accelerate launch --use_fsdp --fsdp_sharding_strategy ...` sets them.
//
//   train DIR CONFIG...   train each configuration (fsdp_test_support.h); process 0 writes
//                         DIR/<name>.pt; with ACCEL_FSDP_SAVE set also save_model into
//                         DIR/<name>.model and save into DIR/<name>.full.pt
//   load PATH OUT         load_model(PATH) into a fresh model; process 0 writes its state
//   wrong PATH            load_model(PATH) into a different model must be refused
//   resume DIR CONFIG     save_state halfway, then a fresh model and optimizer load_state and
//                         finish: both halves must match the uninterrupted run
//   diverge               process 0 alone evaluates the FULL_SHARD model while process 1
//                         waits in wait_for_everyone: both must fail quickly, saying why
//   bf16 DIR              FULL_SHARD under bf16 mixed precision: bf16 parameters and compute,
//                         fp32 shards in the optimizer; process 0 writes DIR/bf16.pt
#include "fsdp_test_support.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace fsdp_test {
namespace {

namespace fs = std::filesystem;

#define WORKER_CHECK(cond, what)                                                   \
  do {                                                                             \
    if (!(cond)) throw std::runtime_error(std::string("check failed: ") + (what)); \
  } while (0)

accelerate::AcceleratorOptions options_for(const Config& c) {
  accelerate::FullyShardedDataParallelPlugin plugin;  // the strategy comes from the environment
  if (c.policy == "size") plugin.auto_wrap_policy(accelerate::AutoWrapPolicy::SIZE_BASED_WRAP).min_num_params(500);
  if (c.policy == "block") {
    plugin.auto_wrap_policy(accelerate::AutoWrapPolicy::TRANSFORMER_BASED_WRAP)
        .transformer_layer_cls_to_wrap(std::vector<std::string>{"Block"});
  }
  if (c.offload) plugin.offload_params(true);
  return accelerate::AcceleratorOptions().gradient_accumulation_steps(c.accumulate).fsdp_plugin(plugin);
}

bool sharded(const accelerate::Accelerator& acc) { return acc.fsdp_settings().shards() && acc.num_processes() > 1; }

int64_t numel_of(const std::vector<torch::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel();
  return n;
}

// The optimizer holds this process's shard only, and so does its state.
void check_optimizer_holds_shards(accelerate::Accelerator& acc, torch::optim::Optimizer& opt, const Config& c) {
  const auto stats = acc.fsdp_stats();
  if (!sharded(acc)) return;
  int64_t held = 0;
  for (const auto& group : opt.param_groups()) held += numel_of(group.params());
  WORKER_CHECK(
      held <= stats.local_parameters &&
          held * acc.num_processes() >= stats.parameters - acc.num_processes() * stats.units,
      "optimizer holds " + std::to_string(held) + " elements, shards have " + std::to_string(stats.local_parameters));
  if (c.optimizer != "adamw") return;
  int64_t state = 0;
  for (auto& [key, s] : opt.state()) state += static_cast<torch::optim::AdamWParamState&>(*s).exp_avg().numel();
  WORKER_CHECK(state == held, "AdamW state has " + std::to_string(state) + " elements for " + std::to_string(held));
}

// FULL_SHARD prefetch (FSDP_BACKWARD_PREFETCH / FSDP_FORWARD_PREFETCH from the test): gathers
// were started ahead and each was used by the read it was for, and never more than one unit
// beyond what an operator reads was in memory. Without it: none started, one unit at a time.
void check_prefetch(accelerate::Accelerator& acc, const Config& c) {
  const auto s = acc.fsdp_stats();
  const auto& f = acc.fsdp_settings();
  if (f.sharding_strategy != accelerate::ShardingStrategy::FULL_SHARD || !sharded(acc)) return;
  const bool on = f.forward_prefetch || f.backward_prefetch != accelerate::BackwardPrefetch::NO_PREFETCH;
  const std::string counts = c.name + ": prefetches=" + std::to_string(s.prefetches) +
                             " hits=" + std::to_string(s.prefetch_hits) + " most=" + std::to_string(s.most_gathered) +
                             " overlapped=" + std::to_string(s.overlapped_reductions);
  std::cout << "prefetch " << counts << std::endl;
  WORKER_CHECK(s.most_gathered <= (on ? 2 : 1), "too many units gathered at once, " + counts);
  // A backward policy runs each reduce-scatter beside the next unit's backward where the
  // collective is a background one: shared memory, every process on one host (the tests give
  // the processes host identities only to split them across "hosts").
  const bool one_host = std::getenv("ACCELERATE_TEST_HOST_ID") == nullptr;
  const bool overlap = f.backward_prefetch != accelerate::BackwardPrefetch::NO_PREFETCH && one_host;
  WORKER_CHECK((s.overlapped_reductions > 0) == overlap, "reduce-scatter overlap, " + counts);
  if (!on || c.policy == "none") {  // one unit: nothing to prefetch
    WORKER_CHECK(s.prefetches == 0, "prefetched without being asked to, " + counts);
    return;
  }
  // With a forward between backward and step, the last step's guess is still waiting at the end.
  const int64_t unused = s.prefetches - s.prefetch_hits;
  WORKER_CHECK(s.prefetches > 0 && unused >= 0 && unused <= (c.eval_before_step ? 1 : 0),
               "prefetches not used, " + counts);
}

Result train_one(const Config& c, accelerate::Accelerator& acc, Mlp& model, torch::optim::Optimizer& opt,
                 const Data& data, int first_step, int last_step) {
  Result r;
  const int64_t rank = acc.process_index(), world = acc.num_processes();
  for (int step = first_step; step < last_step; ++step) {
    for (int m = 0; m < c.accumulate; ++m) {
      auto guard = acc.accumulate(model);
      // Several synchronising backward passes without zeroing: the shards accumulate.
      for (int pass = 0; pass < c.passes; ++pass) {
        auto [x, y] = data.batch(step * c.accumulate + m, rank, world, pass, c.passes);
        auto loss = torch::mse_loss(model->forward(x), y);
        if (c.plain_loop) {
          loss.backward();
        } else {
          acc.backward(loss);
        }
        r.losses.push_back(acc.reduce(loss.detach(), accelerate::ReduceOp::Mean).item<double>());
      }
      if (!acc.sync_gradients()) continue;
      if (c.eval_before_step) {  // under FULL_SHARD prefetch, leaves a gather in flight when the step starts
        torch::NoGradGuard no_grad;
        auto [x, y] = data.batch(step, rank, world, 0, 1);
        model->forward(x);
      }
      if (c.clip > 0) r.norms.push_back(acc.clip_grad_norm_(model->parameters(), c.clip));
      opt.step();
      if (c.model_zero_grad) {
        model->zero_grad();
      } else {
        opt.zero_grad();
      }
      // (A forward without backward keeps its last unit until the next operator: not checked then.)
      if (acc.fsdp_settings().sharding_strategy == accelerate::ShardingStrategy::FULL_SHARD && sharded(acc) &&
          !c.eval_before_step) {
        WORKER_CHECK(acc.fsdp_stats().gathered_units == 0, "FULL_SHARD keeps units gathered after backward");
      }
    }
  }
  return r;
}

void write_state(accelerate::Accelerator& acc, Mlp& model, Result r, const std::string& path) {
  const auto state = acc.get_state_dict(model);  // collective
  if (!acc.is_main_process()) return;
  for (const auto& p : model->named_parameters()) r.params.push_back(state[p.key()]);
  torch::save(r.to_tensors(), path);
}

int train(const std::vector<std::string>& args) {
  const fs::path dir = args.at(0);
  for (size_t i = 1; i < args.size(); ++i) {
    const Config c = Config::parse(args[i]);
    Data data(c);
    Mlp model = make_model();
    accelerate::Accelerator acc(options_for(c));
    if (acc.process_index() > 0) {  // prepare() must make every process start from process 0's values
      torch::NoGradGuard no_grad;
      for (auto& p : model->parameters()) p.add_(1.0);
    }
    auto opt = make_optimizer(c, model->parameters());
    acc.prepare(model, opt);
    Result r = train_one(c, acc, model, *opt, data, 0, c.steps);
    check_optimizer_holds_shards(acc, *opt, c);
    check_prefetch(acc, c);
    const auto stats = acc.fsdp_stats();
    std::cout << "config=" << c.name << " rank=" << acc.process_index() << " units=" << stats.units
              << " local=" << stats.local_parameters << " of " << stats.parameters << " gathers=" << stats.gathers
              << " reductions=" << stats.reductions << std::endl;
    write_state(acc, model, r, (dir / (c.name + ".pt")).string());
    if (std::getenv("ACCEL_FSDP_SAVE")) {
      acc.save_model(model, (dir / (c.name + ".model")).string());
      acc.save(model, (dir / (c.name + ".full.pt")).string());
    }
  }
  return 0;
}

int load(const std::vector<std::string>& args) {
  torch::manual_seed(7);
  Mlp model;  // other values than the saved ones
  Config c;
  c.policy = args.size() > 2 ? args[2] : "size";
  accelerate::Accelerator acc(options_for(c));
  auto opt = make_optimizer(c, model->parameters());
  acc.prepare(model, opt);
  acc.load_model(model, args.at(0));
  write_state(acc, model, Result{}, args.at(1));
  return 0;
}

struct OtherImpl : torch::nn::Module {
  OtherImpl()
      : b1(register_module("b1", Block(16, 33))),
        b2(register_module("b2", Block(33, 17))),
        head(register_module("head", torch::nn::Linear(17, 4))) {}
  Block b1, b2;
  torch::nn::Linear head;
};
TORCH_MODULE(Other);

int wrong(const std::vector<std::string>& args) {
  Other model;
  accelerate::Accelerator acc(options_for(Config{}));
  acc.prepare(model);
  try {
    acc.load_model(model, args.at(0));
  } catch (const accelerate::CheckpointError& e) {
    std::cout << "REFUSED: " << e.what() << std::endl;
    return 0;
  }
  std::cout << "loaded into a different model" << std::endl;
  return 1;
}

double max_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

int resume(const std::vector<std::string>& args) {
  const fs::path dir = args.at(0);
  const Config c = Config::parse(args.at(1));
  const int half = c.steps / 2;
  Data data(c);
  std::vector<torch::Tensor> straight;
  {
    Mlp model = make_model();
    accelerate::Accelerator acc(options_for(c));
    auto opt = make_optimizer(c, model->parameters());
    acc.prepare(model, opt);
    train_one(c, acc, model, *opt, data, 0, half);
    acc.save_state((dir / "checkpoint").string());
    train_one(c, acc, model, *opt, data, half, c.steps);
    for (auto& item : acc.get_state_dict(model)) straight.push_back(item.value());
  }
  Mlp model;  // fresh values and a fresh optimizer: everything comes from the checkpoint
  accelerate::Accelerator acc(options_for(c));
  auto opt = make_optimizer(c, model->parameters());
  acc.prepare(model, opt);
  acc.load_state((dir / "checkpoint").string());
  train_one(c, acc, model, *opt, data, half, c.steps);
  std::vector<torch::Tensor> resumed;
  for (auto& item : acc.get_state_dict(model)) resumed.push_back(item.value());
  if (!acc.is_main_process()) return 0;
  const double d = max_diff(straight, resumed);
  std::cout << "resume: max |straight - resumed| = " << d << std::endl;
  WORKER_CHECK(!straight.empty() && d <= 1e-6, "the resumed run differs from the uninterrupted one");
  return 0;
}

int diverge(const std::vector<std::string>&) {
  Config c;
  Data data(c);
  Mlp model = make_model();
  accelerate::Accelerator acc(options_for(c));
  auto opt = make_optimizer(c, model->parameters());
  acc.prepare(model, opt);
  train_one(c, acc, model, *opt, data, 0, 1);
  try {
    if (acc.is_main_process()) {
      torch::NoGradGuard no_grad;
      model->forward(data.x.narrow(0, 0, 4));  // gathers alone
    } else {
      acc.wait_for_everyone();
    }
  } catch (const accelerate::DistributedError& e) {
    std::cout << "DIVERGED: " << e.what() << std::endl;
    return 0;
  }
  std::cout << "no failure" << std::endl;
  return 1;
}

int bf16(const std::vector<std::string>& args) {
  const Config c = Config::parse("bf16:opt=sgd,steps=6,policy=size");
  Data data(c);
  Mlp model = make_model();
  accelerate::Accelerator acc(options_for(c));
  WORKER_CHECK(acc.mixed_precision() == "bf16", "ACCELERATE_MIXED_PRECISION=bf16 expected");
  auto opt = make_optimizer(c, model->parameters());
  acc.prepare(model, opt);
  WORKER_CHECK(model->b1->fc->weight.scalar_type() == torch::kBFloat16, "gathered parameters are not bf16");
  for (const auto& group : opt->param_groups()) {
    for (const auto& p : group.params())
      WORKER_CHECK(p.scalar_type() == torch::kFloat32, "the optimizer's shards are not fp32");
  }
  Result r = train_one(c, acc, model, *opt, data, 0, c.steps);
  write_state(acc, model, r, (fs::path(args.at(0)) / "bf16.pt").string());
  return 0;
}

}  // namespace

int worker_main(const std::vector<std::string>& args) {
  const std::string mode = args.at(0);
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (mode == "train") return train(rest);
  if (mode == "load") return load(rest);
  if (mode == "wrong") return wrong(rest);
  if (mode == "resume") return resume(rest);
  if (mode == "diverge") return diverge(rest);
  if (mode == "bf16") return bf16(rest);
  std::cerr << "unknown worker mode " << mode << std::endl;
  return 2;
}

}  // namespace fsdp_test
