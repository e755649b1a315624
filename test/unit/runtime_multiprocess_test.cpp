// Multi-process tests of the runtime: real processes (runtime_worker) over Gloo on
// 127.0.0.1, started with the launchers' variables by test/support's harness. The
// workers check their own numbers; here we check exit codes and what they printed.
#include "spawn.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using accelerate::testing::spawn_workers;
using accelerate::testing::SpawnOptions;

namespace {

const char* const kWorker = ACCEL_RUNTIME_WORKER;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

std::string all_output(const accelerate::testing::SpawnResult& r) {
  std::string s;
  for (const auto& w : r.workers) s += w.output;
  return s;
}

TEST(RuntimeMultiProcess, TwoProcessesMatchOneProcessWithDoubleBatch) {
  for (int nprocs : {1, 2}) {
    auto run = spawn_workers(kWorker, {"train"}, nprocs);
    ASSERT_TRUE(run.all_succeeded()) << run.summary();
    EXPECT_EQ(count(all_output(run), "max|param - reference"), nprocs) << run.summary();
    std::cout << run.workers[0].output;
  }
}

TEST(RuntimeMultiProcess, AccumulateMatchesLargeBatch) {
  auto run = spawn_workers(kWorker, {"accumulate"}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  std::cout << run.workers[0].output;
}

TEST(RuntimeMultiProcess, GradientAccumulationStepsFromEnvironment) {
  auto run = spawn_workers(kWorker, {"accumulate", "env"}, 2, {{"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "2"}});
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
}

TEST(RuntimeMultiProcess, NoSyncKeepsGradientsLocalUntilSyncStep) {
  auto run = spawn_workers(kWorker, {"no_sync"}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  std::cout << run.workers[0].output;
}

TEST(RuntimeMultiProcess, CollectivesGiveExactValues) {
  auto run = spawn_workers(kWorker, {"collectives"}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
}

TEST(RuntimeMultiProcess, PrepareAcceptsEveryHolderAndOverlapsBuckets) {
  auto run = spawn_workers(kWorker, {"prepare_forms"}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  std::cout << run.workers[0].output;
}

TEST(RuntimeMultiProcess, PrintAndSaveHappenOnce) {
  const auto dir = std::filesystem::temp_directory_path() / ("accel-print-save-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto run = spawn_workers(kWorker, {"print_save", dir.string()}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_EQ(count(all_output(run), "PRINTED-ONCE"), 1) << run.summary();
  EXPECT_EQ(count(run.workers[0].output, "PRINTED-ONCE from process 0"), 1) << run.summary();
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "temp file left: " << entry.path();
  }
  EXPECT_EQ(files, 2);  // tensor.pt and the main-process-first marker
  std::filesystem::remove_all(dir);
}

// Short last batches (issue 47): each case trains 3 epochs on 2 processes and compares with
// the one-process program the worker runs itself (runtime_worker_short_batch.cpp).
TEST(RuntimeMultiProcess, ShortLastBatchesTrainAsOneProcess) {
  for (const char* name : {"split", "per_process", "sum", "accumulate", "fsdp", "bf16", "hand", "plain_step"}) {
    auto run = spawn_workers(kWorker, {"short_batch", name}, 2);
    EXPECT_TRUE(run.all_succeeded()) << name << "\n" << run.summary();
    EXPECT_EQ(count(run.workers[0].output, std::string("short_batch ") + name + " rel="), 1) << run.summary();
    std::cout << run.workers[0].output;
  }
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ACCELERATE_WORK_REPORT: each process writes what it did, so a harness can check that the
// work was split. 1001 samples, global batch 64, 3 epochs: process 0 takes 32 of each batch,
// process 1 the rest (32, and 9 of the short last one, given without padding); 120 samples
// in batches of 8 per process: the last step's real samples are process 0's, and process 1
// gets a padded batch (weight 0) so that it still takes part.
TEST(RuntimeMultiProcess, WorkReportCountsEachProcessShare) {
  const auto dir = std::filesystem::temp_directory_path() / ("accel-work-report-" + std::to_string(::getpid()));
  const std::map<std::string, std::string> expected = {
      {"split",
       "{\"rank\": 0, \"world_size\": 2, \"backward_calls\": 48, \"optimizer_steps\": 48, \"samples\": 1536, "
       "\"padded_samples\": 0}\n"
       "{\"rank\": 1, \"world_size\": 2, \"backward_calls\": 48, \"optimizer_steps\": 48, \"samples\": 1467, "
       "\"padded_samples\": 0}\n"},
      {"per_process",
       "{\"rank\": 0, \"world_size\": 2, \"backward_calls\": 24, \"optimizer_steps\": 24, \"samples\": 192, "
       "\"padded_samples\": 0}\n"
       "{\"rank\": 1, \"world_size\": 2, \"backward_calls\": 24, \"optimizer_steps\": 24, \"samples\": 168, "
       "\"padded_samples\": 24}\n"},
      // process_share: 32 of each batch of 64 and 21 / 20 of the last one's 41, counted once
      // per backward pass though inputs and targets are both shared.
      {"hand",
       "{\"rank\": 0, \"world_size\": 2, \"backward_calls\": 48, \"optimizer_steps\": 48, \"samples\": 1503, "
       "\"padded_samples\": 0}\n"
       "{\"rank\": 1, \"world_size\": 2, \"backward_calls\": 48, \"optimizer_steps\": 48, \"samples\": 1500, "
       "\"padded_samples\": 0}\n"}};
  for (const auto& [name, want] : expected) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto run = spawn_workers(kWorker, {"short_batch", name}, 2, {{"ACCELERATE_WORK_REPORT", dir.string()}});
    ASSERT_TRUE(run.all_succeeded()) << run.summary();
    EXPECT_EQ(read_text(dir / "work-rank0.json") + read_text(dir / "work-rank1.json"), want) << name;
  }
  std::filesystem::remove_all(dir);
}

// One line of a step trace (ACCELERATE_TRACE, docs/runtime-api.md), the fields the tests read.
struct TracedStep {
  int64_t step = 0, samples = 0;
  std::vector<double> losses;
  std::vector<std::pair<double, std::string>> params;  // norm, xxh3
};

std::vector<TracedStep> read_trace(const std::filesystem::path& path) {
  std::vector<TracedStep> steps;
  std::ifstream in(path);
  static const std::regex head(
      R"re("step": (\d+), "samples": (\d+), "padded": \d+, "sharded": false, "loss": \[([^\]]*)\])re");
  static const std::regex param(R"re("norm": ([^,]+), "xxh3": "([0-9a-f]{16})")re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, head)) continue;
    TracedStep s;
    s.step = std::stoll(m[1]);
    s.samples = std::stoll(m[2]);
    std::stringstream losses(m[3].str());
    for (std::string v; std::getline(losses, v, ',');) s.losses.push_back(std::stod(v));
    for (std::sregex_iterator it(line.begin(), line.end(), param), end; it != end; ++it) {
      s.params.emplace_back(std::stod((*it)[1]), (*it)[2]);
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

// Issue 48, item 1: the step trace compares runs step by step. The short_batch split case
// (1001 samples, global batch 64: 3 epochs of 16 steps, the last of each 41) on 1 process and on 2: both
// ranks trace every step; their samples add up to the one-process step's and neither holds
// more than its per-process batch of 32 (32/32, and 32/9 on a short step: the global batch
// is cut into per-process slices, docs/data-loader.md); the replicas are equal to the bit after every step (one xxh3 on
// both ranks); each parameter's norm is within the case's tolerance (1e-5) of the one-process run's; the one-process
// loss is the ranks' losses weighted by their samples.
void expect_step_traces_follow(const char* name) {
  SCOPED_TRACE(name);
  const auto base =
      std::filesystem::temp_directory_path() / ("accel-trace-" + std::string(name) + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  for (const char* d : {"one", "two"}) std::filesystem::create_directories(base / d);
  auto one = spawn_workers(kWorker, {"short_batch", name}, 1, {{"ACCELERATE_TRACE", (base / "one").string()}});
  ASSERT_TRUE(one.all_succeeded()) << one.summary();
  auto two = spawn_workers(kWorker, {"short_batch", name}, 2, {{"ACCELERATE_TRACE", (base / "two").string()}});
  ASSERT_TRUE(two.all_succeeded()) << two.summary();
  const auto ref = read_trace(base / "one" / "trace-rank0.jsonl");
  const auto r0 = read_trace(base / "two" / "trace-rank0.jsonl");
  const auto r1 = read_trace(base / "two" / "trace-rank1.jsonl");
  ASSERT_EQ(ref.size(), 48u);
  ASSERT_EQ(r0.size(), ref.size());
  ASSERT_EQ(r1.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(ref[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(ref[i].samples, i % 16 == 15 ? 41 : 64);
    EXPECT_EQ(r0[i].samples + r1[i].samples, ref[i].samples);
    EXPECT_EQ(r0[i].samples, 32);  // the first slice is always whole
    EXPECT_EQ(r1[i].samples, i % 16 == 15 ? 9 : 32);
    ASSERT_EQ(ref[i].losses.size(), 1u);
    ASSERT_EQ(r0[i].losses.size(), 1u);
    ASSERT_EQ(r1[i].losses.size(), 1u);
    const double weighted = (r0[i].samples * r0[i].losses[0] + r1[i].samples * r1[i].losses[0]) / ref[i].samples;
    EXPECT_NEAR(weighted, ref[i].losses[0], 1e-5 * std::abs(ref[i].losses[0]));
    ASSERT_EQ(ref[i].params.size(), 4u);  // two Linear layers: weight and bias each
    ASSERT_EQ(r0[i].params.size(), ref[i].params.size());
    ASSERT_EQ(r1[i].params.size(), ref[i].params.size());
    for (size_t j = 0; j < ref[i].params.size(); ++j) {
      EXPECT_EQ(r0[i].params[j].second, r1[i].params[j].second) << "parameter " << j << ": replicas differ";
      EXPECT_NEAR(r0[i].params[j].first, ref[i].params[j].first, 1e-5 * ref[i].params[j].first) << "parameter " << j;
    }
  }
  std::filesystem::remove_all(base);
}

TEST(RuntimeMultiProcess, StepTraceFollowsOneAndTwoProcessesStepByStep) { expect_step_traces_follow("split"); }

// A program that steps its prepared optimizer itself (optimizer.step(), what accel-migrate
// leaves) is traced as one that calls optimizer_step: each step is seen at the next backward
// pass, and each epoch's last step when its prepared loader's epoch ends; 48 lines again.
TEST(RuntimeMultiProcess, StepTraceSeesTheProgramsOwnOptimizerStep) { expect_step_traces_follow("plain_step"); }

TEST(RuntimeMultiProcess, CollectiveWithoutPeerFailsWithMessage) {
  auto run = spawn_workers(kWorker, {"timeout"}, 2, {{"ACCELERATE_TIMEOUT_SECONDS", "5"}});
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  const auto& out = run.workers[0].output;
  EXPECT_NE(out.find(": accelerate: all_reduce (reduce) failed on process 0 of 2"), std::string::npos) << out;
}

TEST(RuntimeMultiProcess, CollectiveWithSilentPeerTimesOut) {
  auto run = spawn_workers(kWorker, {"timeout", "silent"}, 2, {{"ACCELERATE_TIMEOUT_SECONDS", "2"}});
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  const auto& out = run.workers[0].output;
  EXPECT_NE(out.find(": accelerate: all_reduce (reduce) failed on process 0 of 2 (ranks 0..1, gloo, timeout 2s)"),
            std::string::npos)
      << out;
  std::cout << out;
}

// Issue #15, item 2: process 1 leaves its loop early and waits in wait_for_everyone while
// process 0 waits in the gradient all-reduce of its next step. Without the divergence watch
// both would wait for the 30-minute timeout; now both fail within seconds, naming both
// collectives (the same collective number) and both processes.
TEST(RuntimeMultiProcess, DivergentCollectivesFailEveryProcessQuickly) {
  SpawnOptions opts;
  opts.timeout = std::chrono::seconds(60);
  const auto start = std::chrono::steady_clock::now();
  auto run = spawn_workers(kWorker, {"diverge"}, opts);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  // Whole run (2 LibTorch start-ups included) well under a timeout; each process's own
  // time from the divergence to its error under 10 s.
  EXPECT_LT(elapsed, 20.0) << run.summary();
  const std::regex caught("CAUGHT after ([0-9.e+-]+) s");
  const std::regex message(
      "process 0 is in 'all_reduce of gradient bucket 0 of 1 \\(2 parameters\\)' \\(collective #([0-9]+)\\) "
      "while process 1 is in 'barrier \\(wait_for_everyone\\)' \\(collective #([0-9]+)\\)");
  for (const auto& w : run.workers) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(w.output, m, caught)) << "rank " << w.rank << ":\n" << w.output;
    EXPECT_LT(std::stod(m[1]), 10.0) << w.output;
    ASSERT_TRUE(std::regex_search(w.output, m, message)) << "rank " << w.rank << ":\n" << w.output;
    EXPECT_EQ(m[1], m[2]) << w.output;
    EXPECT_NE(w.output.find("failed on process " + std::to_string(w.rank) + " of 2"), std::string::npos) << w.output;
    EXPECT_NE(w.output.find("check_trigger"), std::string::npos) << "no advice in:\n" << w.output;
  }
  std::cout << "divergence: both processes failed, " << elapsed << " s after start\n" << run.workers[1].output;
}

TEST(RuntimeMultiProcess, DivergenceRulesOnAStore) {
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.distributed_env = false;
  auto run = spawn_workers(kWorker, {"watch_rules"}, opts);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
}

// Issue #15, item 8: unseeded draws agree across processes, and a regression whose problem
// comes from the global generator gives on 2 processes what each computes as 1 process.
TEST(RuntimeMultiProcess, UnseededProgramsDrawTheSameOnEveryProcess) {
  auto run = spawn_workers(kWorker, {"rng"}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_NE(run.workers[1].output.find("rng: processes=2"), std::string::npos) << run.summary();
  std::cout << run.workers[0].output;
}

// Issue #29, item 4: shared_seed(local) is process 0's value on 2 processes and the value
// itself on 1, without moving torch's generator.
TEST(RuntimeMultiProcess, SharedSeedOfALocalValue) {
  for (int nprocs : {1, 2}) {
    auto run = spawn_workers(kWorker, {"shared_value"}, nprocs);
    ASSERT_TRUE(run.all_succeeded()) << run.summary();
    EXPECT_NE(run.workers[0].output.find("shared_value: processes=" + std::to_string(nprocs) + " done with 0"),
              std::string::npos)
        << run.summary();
  }
}

// Issue #15, item 14: every collective (and the gradient sync) with grad enabled, under
// NoGradGuard and under InferenceMode.
TEST(RuntimeMultiProcess, CollectivesWorkInEveryGradMode) {
  auto run = spawn_workers(kWorker, {"modes"}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_NE(run.workers[0].output.find("modes: inference done, 0 failures"), std::string::npos) << run.summary();
}

TEST(RuntimeMultiProcess, RankOutOfRangeNamesTheVariable) {
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.per_rank_env = [](int, std::map<std::string, std::string>& env) {
    env["RANK"] = "5";
    env["WORLD_SIZE"] = "2";
  };
  auto run = spawn_workers(kWorker, {"env"}, opts);
  EXPECT_NE(run.workers[0].exit_code, 0);
  EXPECT_NE(run.workers[0].output.find("RANK=5 is out of range for WORLD_SIZE=2"), std::string::npos) << run.summary();
}

TEST(RuntimeMultiProcess, MissingMasterAddrNamesTheVariable) {
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.env = {{"MASTER_ADDR", ""}};
  opts.per_rank_env = [](int, std::map<std::string, std::string>& env) { env["WORLD_SIZE"] = "2"; };
  auto run = spawn_workers(kWorker, {"env"}, opts);
  EXPECT_NE(run.workers[0].exit_code, 0);
  EXPECT_NE(run.workers[0].output.find("MASTER_ADDR is not set"), std::string::npos) << run.summary();
}

TEST(RuntimeMultiProcess, BusyPortIsReported) {
  // Hold the port with a listening socket, as another job would.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.master_port = ntohs(addr.sin_port);
  opts.env = {{"ACCELERATE_TIMEOUT_SECONDS", "5"}};
  opts.per_rank_env = [](int, std::map<std::string, std::string>& env) { env["WORLD_SIZE"] = "2"; };
  auto run = spawn_workers(kWorker, {"env"}, opts);
  ::close(fd);
  EXPECT_NE(run.workers[0].exit_code, 0);
  EXPECT_NE(run.workers[0].output.find("is busy"), std::string::npos) << run.summary();
}

TEST(RuntimeMultiProcess, UnreachableMasterTimesOutWithMessage) {
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.env = {{"ACCELERATE_TIMEOUT_SECONDS", "3"}};
  // Process 1 alone: nobody serves the store on the (free) port.
  opts.per_rank_env = [](int, std::map<std::string, std::string>& env) {
    env["RANK"] = "1";
    env["LOCAL_RANK"] = "1";
    env["WORLD_SIZE"] = "2";
    env["LOCAL_WORLD_SIZE"] = "2";
  };
  auto run = spawn_workers(kWorker, {"env"}, opts);
  EXPECT_FALSE(run.workers[0].timed_out) << run.summary();
  EXPECT_NE(run.workers[0].exit_code, 0);
  EXPECT_NE(run.workers[0].output.find("cannot reach the TCPStore at MASTER_ADDR=127.0.0.1"), std::string::npos)
      << run.summary();
}

// torchrun hosts the TCPStore in its agent (TORCHELASTIC_USE_AGENT_STORE=True): the
// workers must connect as clients under /worker/attempt_0.
TEST(RuntimeMultiProcess, TorchrunAgentStore) {
#ifndef ACCEL_TORCHRUN
  GTEST_SKIP() << "torchrun not found (apt-get install python3-torch)";
#else
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.distributed_env = false;
  const auto log_dir = std::filesystem::temp_directory_path() / ("accel-torchrun-" + std::to_string(::getpid()));
  const std::string port = std::to_string(accelerate::testing::free_tcp_port());
  auto run = spawn_workers(ACCEL_TORCHRUN,
                           {"--nproc_per_node", "2", "--master_port", port, "--no_python", "--redirects", "1", "--tee",
                            "1", "--log_dir", log_dir.string(), kWorker, "train"},
                           opts);
  std::filesystem::remove_all(log_dir);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_EQ(count(run.workers[0].output, "train: processes=2"), 2) << run.summary();
#endif
}

// Slurm's and Open MPI's variables alone bring up a real 2-process group.
TEST(RuntimeMultiProcess, SlurmAndOpenMpiVariables) {
  for (const std::string launcher : {"slurm", "openmpi"}) {
    SpawnOptions opts;
    opts.distributed_env = false;
    const std::string port = std::to_string(accelerate::testing::free_tcp_port());
    opts.per_rank_env = [&](int rank, std::map<std::string, std::string>& env) {
      const std::string r = std::to_string(rank);
      if (launcher == "slurm") {
        env.insert({{"SLURM_PROCID", r},
                    {"SLURM_STEP_ID", "0"},
                    {"SLURM_LOCALID", r},
                    {"SLURM_NTASKS", "2"},
                    {"SLURM_NTASKS_PER_NODE", "2"},
                    {"SLURM_JOB_NODELIST", "localhost"}});
      } else {
        env.insert({{"OMPI_COMM_WORLD_RANK", r},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", r},
                    {"OMPI_COMM_WORLD_SIZE", "2"},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"MASTER_ADDR", "127.0.0.1"}});
      }
      env["MASTER_PORT"] = port;
    };
    auto run = spawn_workers(kWorker, {"env"}, opts);
    ASSERT_TRUE(run.all_succeeded()) << launcher << "\n" << run.summary();
    EXPECT_NE(run.workers[1].output.find("rank 1 of 2 on cpu"), std::string::npos) << run.summary();
  }
}

TEST(RuntimeMultiProcess, NoLauncherIsSingleProcess) {
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.distributed_env = false;
  auto run = spawn_workers(kWorker, {"env"}, opts);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_NE(run.workers[0].output.find("rank 0 of 1 on cpu"), std::string::npos) << run.summary();
}

}  // namespace
