// Sharded data parallel (FSDP): settings and wrap policies in this process; training,
// state dicts and resuming in real worker processes (fsdp_worker.cpp) over Gloo, compared
// with the single-process run of the same global batch.
#include "fsdp/fsdp_units.h"
#include "fsdp/unit_buffer_pool.h"
#include "fsdp_test_support.h"
#include "spawn.h"

#include <accelerate/fsdp/model_file.h>
#include <accelerate/launch/detail/launch_env.h>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

namespace fsdp_test {
int worker_main(const std::vector<std::string>& args);
}

namespace {

namespace fs = std::filesystem;
using fsdp_test::Config;
using fsdp_test::Result;

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("fsdp_tests");
}

// A fresh directory, removed with the object.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& what)
      : path(fs::temp_directory_path() / ("accel-fsdp-" + what + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::map<std::string, std::string> fsdp_env(const std::string& strategy, const std::string& state_dict = "") {
  std::map<std::string, std::string> env{
      {"OMP_NUM_THREADS", "1"}, {"ACCELERATE_USE_FSDP", "true"}, {"FSDP_SHARDING_STRATEGY", strategy}};
  if (!state_dict.empty()) env["FSDP_STATE_DICT_TYPE"] = state_dict;
  return env;
}

// `hosts`: a host identity per process (ACCELERATE_TEST_HOST_ID); empty: all on this one.
accelerate::testing::SpawnResult spawn(const std::vector<std::string>& args, int nprocs,
                                       const std::map<std::string, std::string>& env,
                                       const std::vector<std::string>& hosts = {}) {
  std::vector<std::string> all{"--fsdp-worker"};
  all.insert(all.end(), args.begin(), args.end());
  accelerate::testing::SpawnOptions opts;
  opts.nprocs = nprocs;
  opts.env = env;
  if (!hosts.empty()) {
    opts.per_rank_env = [hosts](int rank, std::map<std::string, std::string>& e) {
      e["ACCELERATE_TEST_HOST_ID"] = hosts.at(rank);
    };
  }
  opts.distributed_env = nprocs > 1;
  opts.timeout = std::chrono::seconds(120);
  return accelerate::testing::spawn_workers(self_exe(), all, opts);
}

Result read_result(const fs::path& path) {
  std::vector<torch::Tensor> t;
  torch::load(t, path.string());
  return Result::from_tensors(t);
}

double max_param_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    EXPECT_EQ(a[i].sizes(), b[i].sizes());
    d = std::max(d, (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).abs().max().item<double>());
  }
  return d;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// The configurations every strategy runs: SGD with momentum, AdamW, RMSprop, Adagrad, clipping, gradient
// accumulation, the three wrap policies, a plain LibTorch loop, offloaded shards, zeroing
// through the model, two synchronising backward passes per step (the shards accumulate), a
// forward without gradients between backward and step.
const std::vector<std::string> kConfigs = {
    "sgd_clip:opt=sgd,clip=0.5,policy=size,model_zero=1,passes=2",
    "adamw_accum:opt=adamw,accum=2,policy=block",
    "adamw_plain:opt=adamw,plain=1,policy=none,offload=1",
    "rmsprop:opt=rmsprop,policy=block,eval=1",
    "adagrad:opt=adagrad,policy=size",
};

// `extra`: more environment (the prefetch settings); `into`: where the results go (the
// caller's, to compare runs), else a directory of this call.
void expect_matches_one_process(const std::string& strategy, int nprocs, const std::vector<std::string>& hosts = {},
                                const std::map<std::string, std::string>& extra = {}, const TempDir* into = nullptr) {
  std::optional<TempDir> own;
  const TempDir& dir = into ? *into : own.emplace(strategy + "-" + std::to_string(nprocs));
  std::vector<std::string> args{"train", dir.path.string()};
  args.insert(args.end(), kConfigs.begin(), kConfigs.end());
  auto env = fsdp_env(strategy);
  env.insert(extra.begin(), extra.end());
  auto run = spawn(args, nprocs, env, hosts);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  std::cout << run.workers[0].output;
  // adamw_plain keeps the whole model as one unit: under FULL_SHARD process 0 says so, no
  // other process does, and no other strategy does.
  const std::string note = "accelerate: note: FULL_SHARD with the whole model as one unit";
  EXPECT_EQ(run.workers[0].output.find(note) != std::string::npos, strategy == "FULL_SHARD") << run.workers[0].output;
  for (size_t w = 1; w < run.workers.size(); ++w) EXPECT_EQ(run.workers[w].output.find(note), std::string::npos);
  for (const auto& text : kConfigs) {
    const Config c = Config::parse(text);
    const Result want = fsdp_test::reference(c);
    const Result got = read_result(dir.path / (c.name + ".pt"));
    const double dl = max_diff(got.losses, want.losses), dn = max_diff(got.norms, want.norms);
    const double dp = max_param_diff(got.params, want.params);
    std::printf(
        "[fsdp] %s on %d processes, %s: max |loss - 1 process| %.2e, |norm - 1 process| %.2e, "
        "|param - 1 process| %.2e\n",
        strategy.c_str(), nprocs, c.name.c_str(), dl, dn, dp);
    EXPECT_LE(dl, 1e-5) << c.name;
    EXPECT_LE(dn, 1e-5) << c.name;
    EXPECT_LE(dp, 1e-5) << c.name;
    // Mean loss of the last step below the first's: the run trains (not a vacuous comparison).
    const size_t per_step = static_cast<size_t>(c.accumulate * c.passes);
    auto step_mean = [&](size_t first) {
      double sum = 0;
      for (size_t i = first; i < first + per_step; ++i) sum += want.losses.at(i);
      return sum / static_cast<double>(per_step);
    };
    EXPECT_LT(step_mean(want.losses.size() - per_step), step_mean(0)) << c.name << ": the reference does not train";
  }
}

}  // namespace

// ---- settings ---------------------------------------------------------------------------

TEST(FsdpSettings, EnvironmentSpellingsAndDefaults) {
  auto env = accelerate::parse_launch_env({{"ACCELERATE_USE_FSDP", "true"},
                                           {"FSDP_SHARDING_STRATEGY", "2"},
                                           {"FSDP_AUTO_WRAP_POLICY", "size_based_wrap"},
                                           {"FSDP_MIN_NUM_PARAMS", "100000000.0"},
                                           {"FSDP_OFFLOAD_PARAMS", "True"},
                                           {"FSDP_STATE_DICT_TYPE", "SHARDED_STATE_DICT"},
                                           {"FSDP_TRANSFORMER_CLS_TO_WRAP", "Block, Head"},
                                           {"FSDP_BACKWARD_PREFETCH", "backward_post"},
                                           {"FSDP_FORWARD_PREFETCH", "true"}});
  auto s = accelerate::resolve_fsdp(std::nullopt, env.use_fsdp, env.fsdp);
  EXPECT_EQ(s.backward_prefetch, accelerate::BackwardPrefetch::BACKWARD_POST);
  EXPECT_TRUE(s.forward_prefetch);
  EXPECT_TRUE(s.enabled && s.shards());
  EXPECT_EQ(s.sharding_strategy, accelerate::ShardingStrategy::SHARD_GRAD_OP);
  EXPECT_EQ(s.auto_wrap_policy, accelerate::AutoWrapPolicy::SIZE_BASED_WRAP);
  EXPECT_EQ(s.min_num_params, 100000000);
  EXPECT_TRUE(s.offload_params);
  EXPECT_EQ(s.state_dict_type, accelerate::StateDictType::SHARDED_STATE_DICT);
  EXPECT_EQ(s.transformer_layer_cls_to_wrap, (std::vector<std::string>{"Block", "Head"}));
  // Code wins field by field; unset fields come from the environment; defaults as the reference.
  s = accelerate::resolve_fsdp(
      accelerate::FullyShardedDataParallelPlugin().sharding_strategy(accelerate::ShardingStrategy::NO_SHARD), false,
      env.fsdp);
  EXPECT_TRUE(s.enabled && !s.shards());
  EXPECT_EQ(s.auto_wrap_policy, accelerate::AutoWrapPolicy::SIZE_BASED_WRAP);
  s = accelerate::resolve_fsdp(std::nullopt, true, accelerate::FullyShardedDataParallelPlugin());
  EXPECT_EQ(s.sharding_strategy, accelerate::ShardingStrategy::FULL_SHARD);
  EXPECT_EQ(s.auto_wrap_policy, accelerate::AutoWrapPolicy::NO_WRAP);
  EXPECT_EQ(s.state_dict_type, accelerate::StateDictType::FULL_STATE_DICT);
  EXPECT_EQ(s.backward_prefetch, accelerate::BackwardPrefetch::NO_PREFETCH);
  EXPECT_FALSE(s.forward_prefetch);
  EXPECT_EQ(accelerate::parse_backward_prefetch(" backward_pre ", "x"), accelerate::BackwardPrefetch::BACKWARD_PRE);
  EXPECT_FALSE(accelerate::resolve_fsdp(std::nullopt, false, env.fsdp).enabled);
}

TEST(FsdpSettings, BadValuesNameTheAcceptedOnes) {
  auto message = [](const accelerate::EnvMap& env) -> std::string {
    try {
      accelerate::parse_launch_env(env);
    } catch (const accelerate::LaunchEnvError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message({{"FSDP_SHARDING_STRATEGY", "ZERO3"}}),
            "accelerate: FSDP_SHARDING_STRATEGY='ZERO3' is not one of FULL_SHARD (1), SHARD_GRAD_OP (2), NO_SHARD (3)");
  EXPECT_NE(message({{"FSDP_SHARDING_STRATEGY", "HYBRID_SHARD"}}).find("not supported"), std::string::npos);
  EXPECT_NE(message({{"FSDP_AUTO_WRAP_POLICY", "LAYERS"}}).find("TRANSFORMER_BASED_WRAP, SIZE_BASED_WRAP, NO_WRAP"),
            std::string::npos);
  EXPECT_NE(message({{"FSDP_STATE_DICT_TYPE", "LOCAL_STATE_DICT"}}).find("FULL_STATE_DICT, SHARDED_STATE_DICT"),
            std::string::npos);
  EXPECT_NE(message({{"FSDP_MIN_NUM_PARAMS", "-3"}}).find("not a number of parameters"), std::string::npos);
  EXPECT_NE(message({{"FSDP_OFFLOAD_PARAMS", "cpu"}}).find("true/false"), std::string::npos);
  EXPECT_EQ(message({{"FSDP_BACKWARD_PREFETCH", "EARLY"}}),
            "accelerate: FSDP_BACKWARD_PREFETCH='EARLY' is not one of BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH");
  EXPECT_NE(message({{"FSDP_FORWARD_PREFETCH", "yes please"}}).find("true/false"), std::string::npos);
  EXPECT_THROW(accelerate::resolve_fsdp(accelerate::FullyShardedDataParallelPlugin().auto_wrap_policy(
                                            accelerate::AutoWrapPolicy::TRANSFORMER_BASED_WRAP),
                                        false, {}),
               accelerate::FsdpConfigError);
}

TEST(FsdpUnits, WrapPolicies) {
  fsdp_test::Mlp model = fsdp_test::make_model();
  auto names = [&](accelerate::FsdpSettings s) {
    std::vector<std::string> out;
    for (const auto& u : accelerate::detail::plan_units(*model, s))
      out.push_back(u.name + "(" + std::to_string(u.params.size()) + ")");
    return out;
  };
  accelerate::FsdpSettings s;
  s.enabled = true;
  EXPECT_EQ(names(s), (std::vector<std::string>{"(6)"}));  // NO_WRAP: one unit
  s.auto_wrap_policy = accelerate::AutoWrapPolicy::SIZE_BASED_WRAP;
  s.min_num_params = 500;  // b1.fc has 561, b2.fc 578, head 54
  EXPECT_EQ(names(s), (std::vector<std::string>{"b1.fc(2)", "b2.fc(2)", "(2)"}));
  s.min_num_params = 1000;  // no submodule is large enough alone until b1 + b2 meet at the root
  EXPECT_EQ(names(s), (std::vector<std::string>{"(6)"}));
  s.min_num_params = 0;
  EXPECT_EQ(names(s), (std::vector<std::string>{"(6)"}));
  s.auto_wrap_policy = accelerate::AutoWrapPolicy::TRANSFORMER_BASED_WRAP;
  s.transformer_layer_cls_to_wrap = {"Block"};
  EXPECT_EQ(names(s), (std::vector<std::string>{"b1(2)", "b2(2)", "(2)"}));
  s.transformer_layer_cls_to_wrap = {"Linear"};  // torch::nn::LinearImpl
  EXPECT_EQ(names(s), (std::vector<std::string>{"b1.fc(2)", "b2.fc(2)", "head(2)"}));
  EXPECT_TRUE(accelerate::detail::class_name_matches("torch::nn::LinearImpl", "LinearImpl"));
  EXPECT_FALSE(accelerate::detail::class_name_matches("torch::nn::LinearImpl", "Lin"));
}

// FULL_SHARD with one unit on a model of several layers says so once, with numbers, and the
// wrap it suggests gives units no larger than the largest layer.
TEST(FsdpUnits, OneUnitUnderFullShardIsNamedWithAWrapThatHelps) {
  fsdp_test::Mlp model = fsdp_test::make_model();  // b1.fc 561, b2.fc 578, head 54 parameters
  accelerate::FsdpSettings s;
  s.enabled = true;
  s.sharding_strategy = accelerate::ShardingStrategy::FULL_SHARD;
  const std::string note = accelerate::detail::single_unit_note(*model, s, 1);
  EXPECT_NE(note.find("gathers all 1193 parameters of its 3 layers"), std::string::npos) << note;
  EXPECT_NE(note.find("would gather at most 578"), std::string::npos) << note;
  EXPECT_NE(note.find("--fsdp_auto_wrap_policy SIZE_BASED_WRAP --fsdp_min_num_params 54"), std::string::npos) << note;
  s.auto_wrap_policy = accelerate::AutoWrapPolicy::SIZE_BASED_WRAP;
  s.min_num_params = 54;  // the suggestion
  size_t biggest = 0;
  const auto units = accelerate::detail::plan_units(*model, s);
  for (const auto& u : units) {
    size_t n = 0;
    for (const auto& p : u.params) n += static_cast<size_t>(p.numel());
    biggest = std::max(biggest, n);
  }
  EXPECT_EQ(units.size(), 3u);
  EXPECT_EQ(biggest, 578u);
  EXPECT_EQ(accelerate::detail::single_unit_note(*model, s, units.size()), "");  // several units: silent
  s.sharding_strategy = accelerate::ShardingStrategy::SHARD_GRAD_OP;             // holds whole weights anyway
  EXPECT_EQ(accelerate::detail::single_unit_note(*model, s, 1), "");
  s.sharding_strategy = accelerate::ShardingStrategy::FULL_SHARD;
  torch::nn::Linear one(4, 2);  // one layer: nothing to wrap
  EXPECT_EQ(accelerate::detail::single_unit_note(*one, s, 1), "");
}

// FULL_SHARD's freed unit buffers: reused for the same size on the same device, never more
// than the limit held, and a miss does not leave idle buffers beside the fresh one.
TEST(FsdpUnits, BufferPoolReusesExactSizesWithinItsLimit) {
  using accelerate::detail::UnitBufferPool;
  auto* cpu = c10::GetAllocator(c10::DeviceType::CPU);
  const c10::Device dev(c10::kCPU);
  UnitBufferPool pool(2048);
  at::DataPtr a = cpu->allocate(1024);
  pool.give(std::move(a), 1024);
  EXPECT_EQ(pool.held_bytes(), 1024u);
  EXPECT_EQ(pool.take(dev, 512).get(), nullptr);  // another size: a miss, and the idle one is dropped
  EXPECT_EQ(pool.held_buffers(), 0u);
  pool.give(cpu->allocate(1024), 1024);
  pool.give(cpu->allocate(1024), 1024);
  pool.give(cpu->allocate(1024), 1024);  // over the limit: the oldest goes
  EXPECT_EQ(pool.held_bytes(), 2048u);
  pool.give(cpu->allocate(4096), 4096);  // larger than the limit: freed at once
  EXPECT_EQ(pool.held_buffers(), 2u);
  EXPECT_NE(pool.take(dev, 1024).get(), nullptr);
  EXPECT_EQ(pool.held_bytes(), 1024u);
  pool.set_limit(0);
  EXPECT_EQ(pool.held_buffers(), 0u);
  at::DataPtr b = cpu->allocate(1024);
  b.clear();
  pool.set_limit(2048);
  pool.give(std::move(b), 1024);  // a null buffer is not kept
  EXPECT_EQ(pool.held_buffers(), 0u);
  pool.give(cpu->allocate(1024), 1024);  // clear() (the gradient pool, after each backward) frees all
  pool.clear();
  EXPECT_EQ(pool.held_bytes(), 0u);
  pool.give(cpu->allocate(2048), 2048);  // and keeps the limit
  EXPECT_EQ(pool.held_buffers(), 1u);
}

// ---- training on several processes ---------------------------------------------------------

TEST(FsdpMultiProcess, ShardGradOpOn2And3ProcessesMatchesOneProcess) {
  for (int n : {2, 3}) expect_matches_one_process("SHARD_GRAD_OP", n);
}

TEST(FsdpMultiProcess, FullShardOn2And3ProcessesMatchesOneProcess) {
  for (int n : {2, 3}) expect_matches_one_process("FULL_SHARD", n);
}

// On one host the gathers and reduce-scatters go through shared memory; with the processes
// on two "hosts" (ACCELERATE_TEST_HOST_ID) through Gloo (the ring reduce-scatter on 1.13).
TEST(FsdpMultiProcess, FullShardOnTwoHostsMatchesOneProcess) {
  expect_matches_one_process("FULL_SHARD", 3, {"A", "A", "B"});
}

// Prefetch changes when a gather starts, never what it gathers or what is reduced: every
// policy gives the values of the run without prefetch bit for bit (the worker checks that
// the prefetches were used and that at most two units were gathered at once), on shared
// memory and through Gloo.
TEST(FsdpMultiProcess, FullShardPrefetchGivesTheSameValuesBitForBit) {
  const std::map<std::string, std::map<std::string, std::string>> policies = {
      {"none", {}},
      {"pre+forward", {{"FSDP_BACKWARD_PREFETCH", "BACKWARD_PRE"}, {"FSDP_FORWARD_PREFETCH", "true"}}},
      {"post", {{"FSDP_BACKWARD_PREFETCH", "BACKWARD_POST"}}},
      {"forward", {{"FSDP_FORWARD_PREFETCH", "true"}}},
  };
  for (const auto& hosts : {std::vector<std::string>{}, std::vector<std::string>{"A", "B"}}) {
    std::map<std::string, std::unique_ptr<TempDir>> dirs;
    for (const auto& [name, env] : policies) {
      dirs[name] = std::make_unique<TempDir>("prefetch-" + name + (hosts.empty() ? "" : "-hosts"));
      expect_matches_one_process("FULL_SHARD", 2, hosts, env, dirs[name].get());
    }
    for (const auto& text : kConfigs) {
      const Config c = Config::parse(text);
      const Result base = read_result(dirs["none"]->path / (c.name + ".pt"));
      for (const auto& [name, env] : policies) {
        const Result got = read_result(dirs[name]->path / (c.name + ".pt"));
        EXPECT_EQ(got.losses, base.losses) << name << " " << c.name;
        EXPECT_EQ(got.norms, base.norms) << name << " " << c.name;
        EXPECT_EQ(max_param_diff(got.params, base.params), 0.0) << name << " " << c.name;
      }
    }
  }
}

TEST(FsdpMultiProcess, NoShardOn2And3ProcessesMatchesOneProcess) {
  for (int n : {2, 3}) expect_matches_one_process("NO_SHARD", n);
}

// ---- state dicts ---------------------------------------------------------------------------

std::vector<torch::Tensor> params_of(const fs::path& path) { return read_result(path).params; }

// Runs a shell command; returns its exit status and output (stdout and stderr).
std::pair<int, std::string> shell(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// `accelerate merge-weights` and `accelerate estimate-memory` on a SHARDED save_model
// directory, through the launcher (ACCEL_LAUNCHER, set by ctest): the merged file loads
// into a plain model with the trained values; nothing is overwritten; the estimate counts
// the model's parameters.
void merge_with_the_cli(const fs::path& dir, const std::vector<torch::Tensor>& trained) {
  const char* launcher = std::getenv("ACCEL_LAUNCHER");
  ASSERT_NE(launcher, nullptr) << "ACCEL_LAUNCHER (the accelerate executable) is not set";
  const std::string cli = std::string(launcher) + " ";
  const std::string in = (dir / "sd.model").string(), out = (dir / "cli-merged").string();
  auto [rc, text] = shell(cli + "merge-weights " + in + " " + out);
  ASSERT_EQ(rc, 0) << text;
  fsdp_test::Mlp plain;
  torch::load(plain, out + "/model.pt");
  EXPECT_EQ(max_param_diff(plain->parameters(), trained), 0.0);
  // --remove_checkpoint_dir: a copy of the save_model directory is gone once merged.
  const std::string copy = (dir / "sd.copy").string();
  fs::copy(in, copy);
  std::tie(rc, text) = shell(cli + "merge-weights " + copy + " " + out + "-2 --remove_checkpoint_dir");
  EXPECT_EQ(rc, 0) << text;
  EXPECT_FALSE(fs::exists(copy)) << text;
  EXPECT_TRUE(fs::exists(out + "-2/model.pt"));
  std::tie(rc, text) = shell(cli + "merge-weights " + in + " " + out);  // model.pt exists now
  EXPECT_EQ(rc, 2) << text;
  EXPECT_NE(text.find("exists: choose another OUTPUT_DIR (nothing was written)"), std::string::npos) << text;
  int64_t count = 0;
  for (const auto& p : plain->parameters()) count += p.numel();
  std::tie(rc, text) = shell(cli + "estimate-memory " + in + "/fsdp_metadata.pt --dtypes float32 --num_processes 2");
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find(": " + std::to_string(count) + " parameters"), std::string::npos) << text;
  // float32: 4 bytes a parameter; Adam on NO_SHARD holds 4 copies.
  std::ostringstream ddp;
  ddp << std::fixed << std::setprecision(2) << 16.0 * static_cast<double>(count) / 1024 << " KB";
  EXPECT_NE(text.find(ddp.str()), std::string::npos) << ddp.str() << "\n" << text;
}

TEST(FsdpMultiProcess, StateDictsFullAndShardedLoadOnAnyNumberOfProcesses) {
  TempDir dir("state");
  const Config c = Config::parse("sd:opt=adamw,steps=3,policy=size");
  auto env = fsdp_env("FULL_SHARD", "SHARDED_STATE_DICT");
  env["ACCEL_FSDP_SAVE"] = "1";
  auto run = spawn({"train", dir.path.string(), "sd:opt=adamw,steps=3,policy=size"}, 2, env);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  const auto trained = params_of(dir.path / "sd.pt");
  EXPECT_LE(max_param_diff(trained, fsdp_test::reference(c).params), 1e-5);
  // FULL: a plain LibTorch program (this one, without an Accelerator) loads it.
  {
    fsdp_test::Mlp plain;
    torch::load(plain, (dir.path / "sd.full.pt").string());
    EXPECT_EQ(max_param_diff(plain->parameters(), trained), 0.0);
  }
  // SHARDED: one file per process plus metadata.
  EXPECT_TRUE(fs::exists(dir.path / "sd.model" / "fsdp_metadata.pt"));
  EXPECT_TRUE(fs::exists(dir.path / "sd.model" / "shard_1.pt"));
  EXPECT_FALSE(fs::exists(dir.path / "sd.model" / "shard_2.pt"));
  // ... loads on 1 process (no sharding), on 3 under another wrap policy, and the FULL file on
  // 2 under SHARD_GRAD_OP: every value comes back.
  struct Load {
    int nprocs;
    std::string strategy, file, policy;
  };
  for (const auto& l : {Load{1, "FULL_SHARD", "sd.model", "size"}, Load{3, "FULL_SHARD", "sd.model", "block"},
                        Load{2, "SHARD_GRAD_OP", "sd.full.pt", "none"}}) {
    const auto out = dir.path / ("loaded-" + std::to_string(l.nprocs) + ".pt");
    auto load = spawn({"load", (dir.path / l.file).string(), out.string(), l.policy}, l.nprocs, fsdp_env(l.strategy));
    ASSERT_TRUE(load.all_succeeded()) << load.summary();
    EXPECT_EQ(max_param_diff(params_of(out), trained), 0.0) << l.file << " on " << l.nprocs << " processes";
  }
  // Offline, without the model's class (accelerate merge-weights): the SHARDED directory put
  // back together into one file that a plain program loads, with the same values.
  {
    const auto tensors = accelerate::read_model_file((dir.path / "sd.model" / "fsdp_metadata.pt").string());
    accelerate::write_model_file(tensors, (dir.path / "merged.pt").string());
    fsdp_test::Mlp plain;
    torch::load(plain, (dir.path / "merged.pt").string());
    EXPECT_EQ(max_param_diff(plain->parameters(), trained), 0.0);
    EXPECT_EQ(tensors.size(), plain->parameters().size());
  }
  merge_with_the_cli(dir.path, trained);
  // A different model (its head has 4 outputs, not 3) is refused, naming the parameter.
  for (const std::string file : {"sd.model", "sd.full.pt"}) {
    auto wrong = spawn({"wrong", (dir.path / file).string()}, 2, fsdp_env("FULL_SHARD"));
    ASSERT_TRUE(wrong.all_succeeded()) << wrong.summary();
    for (const auto& w : wrong.workers) {
      EXPECT_NE(w.output.find("REFUSED: accelerate: "), std::string::npos) << w.output;
      EXPECT_NE(w.output.find("'head.weight' has shape [3, 17] in the file and [4, 17] in the model"),
                std::string::npos)
          << w.output;
    }
  }
}

// `accelerate merge-weights` on a save_state() checkpoint: model_<i>.pt in the output, which
// a plain model loads; the checkpoint (optimizer, loaders, RNG) is never removed.
void merge_a_checkpoint(const fs::path& checkpoint) {
  const char* launcher = std::getenv("ACCEL_LAUNCHER");
  ASSERT_NE(launcher, nullptr) << "ACCEL_LAUNCHER (the accelerate executable) is not set";
  const fs::path out = checkpoint.parent_path() / "merged";
  auto [rc, text] = shell(std::string(launcher) + " merge-weights " + checkpoint.string() + " " + out.string() +
                          " --remove_checkpoint_dir");
  EXPECT_EQ(rc, 2) << text;
  EXPECT_NE(text.find("removes only a save_model() directory"), std::string::npos) << text;
  EXPECT_TRUE(fs::exists(checkpoint / "model_0.pt"));
  std::tie(rc, text) = shell(std::string(launcher) + " merge-weights " + checkpoint.string() + " " + out.string());
  ASSERT_EQ(rc, 0) << text;
  fsdp_test::Mlp plain;
  torch::load(plain, (out / "model_0.pt").string());
  const auto saved = accelerate::read_model_file((checkpoint / "model_0.pt").string());
  for (const auto& p : plain->named_parameters()) {
    auto it = std::find_if(saved.begin(), saved.end(), [&](const auto& t) { return t.name == p.key(); });
    ASSERT_NE(it, saved.end()) << p.key();
    EXPECT_TRUE(torch::equal(it->value, p.value())) << p.key();
  }
}

TEST(FsdpMultiProcess, SaveStateAndLoadStateResumeExactly) {
  for (const std::string type : {"SHARDED_STATE_DICT", "FULL_STATE_DICT"}) {
    TempDir dir("resume");
    auto run = spawn({"resume", dir.path.string(), "r:opt=adamw,steps=4,policy=size"}, 2, fsdp_env("FULL_SHARD", type));
    ASSERT_TRUE(run.all_succeeded()) << run.summary();
    EXPECT_NE(run.workers[0].output.find("resume: max |straight - resumed| = 0"), std::string::npos) << run.summary();
    EXPECT_EQ(fs::exists(dir.path / "checkpoint" / "optimizer_0.rank_1.pt"), true) << type;
    EXPECT_EQ(fs::exists(dir.path / "checkpoint" / "model_0.shard_1.pt"), type == "SHARDED_STATE_DICT");
    // Every process's part is listed with its content hash (docs/checkpointing.md#content-hashes).
    std::ifstream in(dir.path / "checkpoint" / "checkpoint_manifest.txt");
    const std::string manifest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(manifest.find(" optimizer_0.rank_1.pt\n"), std::string::npos) << manifest;
    EXPECT_EQ(manifest.find(" model_0.shard_1.pt\n") != std::string::npos, type == "SHARDED_STATE_DICT") << manifest;
    if (type == "SHARDED_STATE_DICT") merge_a_checkpoint(dir.path / "checkpoint");
  }
}

// ---- mixed precision, and processes that disagree ---------------------------------------------

TEST(FsdpMultiProcess, FullShardBf16TrainsWithFp32MasterShards) {
  TempDir dir("bf16");
  auto env = fsdp_env("FULL_SHARD");
  env["ACCELERATE_MIXED_PRECISION"] = "bf16";
  auto run = spawn({"bf16", dir.path.string()}, 2, env);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  // bf16 rounds every matmul and gradient: close to the fp32 run, not equal to it.
  const Result want = fsdp_test::reference(Config::parse("bf16:opt=sgd,steps=6,policy=size"));
  const Result got = read_result(dir.path / "bf16.pt");
  const double dl = max_diff(got.losses, want.losses), dp = max_param_diff(got.params, want.params);
  std::printf(
      "[fsdp] FULL_SHARD bf16 on 2 processes vs fp32 on 1: max |loss diff| %.2e, |param diff| %.2e; "
      "loss %.4f -> %.4f\n",
      dl, dp, got.losses.front(), got.losses.back());
  EXPECT_LT(got.losses.back(), got.losses.front());
  EXPECT_LT(dl, 5e-3);
  EXPECT_LT(dp, 5e-3);
  EXPECT_GT(dp, 0.0);                                                            // it really computed in bf16
  for (const auto& p : got.params) EXPECT_EQ(p.scalar_type(), torch::kFloat32);  // the master copy
}

// Process 0 gathers inside an operator: the gather's failure cannot be thrown through ATen's
// observer, so that process ends with the reason and exit code 1; process 1 gets it thrown.
TEST(FsdpMultiProcess, EvaluatingOnTheMainProcessAloneFailsQuicklyNamingTheGather) {
  const auto start = std::chrono::steady_clock::now();
  auto run = spawn({"diverge"}, 2, fsdp_env("FULL_SHARD"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(run.workers.size(), 2u);
  const auto& first = run.workers[0];
  const auto& second = run.workers[1];
  EXPECT_EQ(first.exit_code, 1) << run.summary();
  EXPECT_NE(first.output.find("the processes diverged: process 0 is in 'all_gather of FSDP unit 'b1.fc'"),
            std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("while process 1 is in 'barrier (wait_for_everyone)'"), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("cannot run without them: exiting with code 1"), std::string::npos) << first.output;
  EXPECT_EQ(second.exit_code, 0) << run.summary();
  EXPECT_NE(second.output.find("DIVERGED: accelerate: barrier (wait_for_everyone) failed on process 1 of 2"),
            std::string::npos)
      << second.output;
  EXPECT_LT(seconds, 60.0) << "a divergence must not wait for the timeout";
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--fsdp-worker") {
    try {
      return fsdp_test::worker_main(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception& e) {
      std::cerr << "fsdp worker failed: " << e.what() << std::endl;
      return 2;
    }
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
