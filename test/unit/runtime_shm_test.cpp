// The shared-memory all-reduce (issue #21, docs/shared-memory.md) with real processes on
// this machine (runtime_worker's scenarios in runtime_worker_shm.cpp). Several "hosts" on
// one machine come from ACCELERATE_TEST_HOST_ID, which replaces a process's host identity.
#include "spawn.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <regex>

using accelerate::testing::InnerRun;
using accelerate::testing::run_in_mount_namespace;
using accelerate::testing::spawn_workers;
using accelerate::testing::SpawnOptions;
using accelerate::testing::SpawnResult;

namespace {

const char* const kWorker = ACCEL_RUNTIME_WORKER;

SpawnOptions with_hosts(std::vector<std::string> hosts) {
  SpawnOptions opts;
  opts.nprocs = static_cast<int>(hosts.size());
  opts.per_rank_env = [hosts](int rank, std::map<std::string, std::string>& env) {
    env["ACCELERATE_TEST_HOST_ID"] = hosts[rank];
  };
  return opts;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::vector<std::string> segments(const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().string());
  }
  return found;
}

std::string unique_prefix(const std::string& what) { return "accel-test-" + what + "-" + std::to_string(::getpid()); }

TEST(Shm, AllreduceMatchesGlooOnTwoAndThreeProcesses) {
  for (int n : {2, 3}) {
    auto run = spawn_workers(kWorker, {"shm_vs_gloo"}, n);
    ASSERT_TRUE(run.all_succeeded()) << run.summary();
    for (int r = 0; r < n; ++r) {
      const std::string expected = "shm: rank " + std::to_string(r) + " hosts 1 host 0 local_rank " +
                                   std::to_string(r) + " of " + std::to_string(n);
      EXPECT_TRUE(contains(run.workers[r].output, expected)) << run.summary();
    }
  }
}

// FSDP's collectives (reduce_scatter, all_gather) through shared memory, exact to the bit,
// over odd shard sizes and chunk boundaries of the staging area.
TEST(Shm, FsdpCollectivesOnTwoAndThreeProcesses) {
  for (int n : {2, 3}) {
    auto run = spawn_workers(kWorker, {"shm_fsdp"}, n);
    ASSERT_TRUE(run.all_succeeded()) << run.summary();
    EXPECT_TRUE(contains(run.workers[0].output, "one_host 1")) << run.summary();
  }
}

// Shared memory within each host, Gloo between the hosts' leaders, shared memory again.
TEST(Shm, HierarchicalTwoHostsOfTwo) {
  const auto opts = with_hosts({"A", "A", "B", "B"});
  auto run = spawn_workers(kWorker, {"shm_vs_gloo"}, opts);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_TRUE(contains(run.workers[3].output, "shm: rank 3 hosts 2 host 1 local_rank 1 of 2")) << run.summary();
  // FSDP's collectives have no hierarchical form: Gloo between hosts.
  EXPECT_TRUE(contains(run.workers[3].output, "one_host 0")) << run.summary();
  // 4 processes reproduce 1 process with the 4-fold batch (SGD with momentum, 6 steps).
  auto train = spawn_workers(kWorker, {"train"}, opts);
  ASSERT_TRUE(train.all_succeeded()) << train.summary();
  std::cout << train.workers[0].output;
}

// Hosts of 2 and 1 processes, ranks interleaved: the lone process is its host's leader.
TEST(Shm, UnevenHostsWithALoneProcess) {
  const auto opts = with_hosts({"A", "B", "A"});
  auto run = spawn_workers(kWorker, {"shm_vs_gloo"}, opts);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_TRUE(contains(run.workers[1].output, "shm: rank 1 hosts 2 host 1 local_rank 0 of 1")) << run.summary();
  EXPECT_TRUE(contains(run.workers[2].output, "shm: rank 2 hosts 2 host 0 local_rank 1 of 2")) << run.summary();
  auto train = spawn_workers(kWorker, {"train"}, opts);
  ASSERT_TRUE(train.all_succeeded()) << train.summary();
}

TEST(Shm, GradientsLiveInTheBuckets) {
  auto run = spawn_workers(kWorker, {"grad_views"}, 2);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  std::cout << run.workers[0].output;
}

// One process that turns shared memory off is enough: everyone uses Gloo, nobody hangs.
TEST(Shm, OptOutOnAnyProcessUsesGloo) {
  SpawnOptions opts;
  opts.per_rank_env = [](int rank, std::map<std::string, std::string>& env) {
    if (rank == 1) env["ACCELERATE_SHM"] = "0";
  };
  auto run = spawn_workers(kWorker, {"shm_vs_gloo", "gloo"}, opts);
  ASSERT_TRUE(run.all_succeeded()) << run.summary();
  EXPECT_TRUE(contains(run.workers[0].output, "shm: off")) << run.summary();
}

// A process killed by SIGKILL: the other one fails within seconds, naming it, and the
// segments' names were removed at set-up, so none is left.
TEST(Shm, KilledPeerFailsTheOthersQuickly) {
  const std::string prefix = unique_prefix("kill");
  SpawnOptions opts;
  opts.env = {{"ACCELERATE_SHM_PREFIX", prefix}};
  opts.timeout = std::chrono::seconds(60);
  auto run = spawn_workers(kWorker, {"shm_kill"}, opts);
  EXPECT_EQ(run.workers[1].exit_code, 128 + 9) << run.summary();
  EXPECT_TRUE(contains(run.workers[1].output, "SEGMENTS 0")) << run.summary();
  ASSERT_EQ(run.workers[0].exit_code, 0) << run.summary();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.workers[0].output, m, std::regex("CAUGHT after ([0-9.e+-]+) s: (.*)")))
      << run.summary();
  EXPECT_LT(std::stod(m[1]), 10.0) << run.summary();
  EXPECT_TRUE(contains(m[2], "all_reduce of gradient bucket")) << m[2];
  EXPECT_TRUE(contains(m[2], "process 1 (pid ")) << m[2];
  EXPECT_TRUE(contains(m[2], "has exited")) << m[2];
  EXPECT_TRUE(segments(prefix).empty());
}

// Across hosts: a killed process of host B fails its host's leader, whose Gloo connection to
// host A's leader breaks, which fails host A: every survivor fails within seconds.
TEST(Shm, KilledPeerOnAnotherHostFailsEveryone) {
  auto opts = with_hosts({"A", "A", "B", "B"});
  opts.timeout = std::chrono::seconds(60);
  auto run = spawn_workers(kWorker, {"shm_kill", "3"}, opts);
  EXPECT_EQ(run.workers[3].exit_code, 128 + 9) << run.summary();
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(run.workers[r].exit_code, 0) << run.summary();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(run.workers[r].output, m, std::regex("CAUGHT after ([0-9.e+-]+) s: (.*)")))
        << run.summary();
    EXPECT_LT(std::stod(m[1]), 20.0) << run.summary();
    EXPECT_TRUE(contains(m[2], "all_reduce of gradient bucket")) << m[2];
  }
  EXPECT_TRUE(contains(run.workers[2].output, "process 3 (pid ")) << run.summary();
  std::cout << run.workers[0].output << run.workers[2].output;
}

// With the names kept while the job runs, a killed process 0 (which created them) leaves
// them: the launcher removes them when the job ends.
TEST(Shm, LauncherRemovesTheSegmentsOfAKilledJob) {
#ifndef ACCEL_LAUNCHER
  GTEST_SKIP() << "the launcher is not built";
#else
  const std::string prefix = unique_prefix("launch");
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.distributed_env = false;
  opts.env = {{"ACCELERATE_SHM_PREFIX", prefix}, {"ACCELERATE_SHM_KEEP_NAMES", "1"}, {"OMP_NUM_THREADS", "1"}};
  opts.timeout = std::chrono::seconds(90);
  auto run = spawn_workers(
      ACCEL_LAUNCHER, {"launch", "--cpu", "--num_processes", "2", "--main_process_port", "0", kWorker, "shm_kill", "0"},
      opts);
  const auto& out = run.workers[0].output;
  EXPECT_NE(run.workers[0].exit_code, 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("SEGMENTS [1-9]"))) << "no segment existed while the job ran:\n" << out;
  EXPECT_TRUE(contains(out, "was killed by signal 9")) << out;
  const auto left = segments(prefix);
  EXPECT_TRUE(left.empty()) << left.size() << " segment(s) left, e.g. " << (left.empty() ? "" : left[0]) << "\n" << out;
  for (const auto& f : left) std::filesystem::remove(f);
#endif
}

// Runs inside a mount namespace with an 8 MiB /dev/shm (started by the next test).
TEST(Shm, TinyDevShmInner) {
  if (std::getenv("ACCEL_TINY_SHM_INNER") == nullptr) GTEST_SKIP() << "started by Shm.TooSmallDevShmIsAClearError";
  // Three processes need a staging area of 3 x 2 MiB, a result area of 2 MiB and a page.
  auto staging = spawn_workers(kWorker, {"shm_model", "1000"}, 3);
  const auto& leader = staging.workers[0].output;
  EXPECT_NE(staging.workers[0].exit_code, 0) << staging.summary();
  EXPECT_TRUE(
      contains(leader, "/dev/shm is too small for the all-reduce staging area (3 processes): it needs 8.00 MiB"))
      << leader;
  EXPECT_TRUE(contains(leader, "--shm-size=")) << leader;
  EXPECT_TRUE(contains(leader, "ACCELERATE_SHM=0")) << leader;
  EXPECT_TRUE(contains(staging.workers[1].output, "process 0 could not set up the all-reduce staging area"))
      << staging.summary();
  // Two processes fit (6 MiB + 4 KiB), a model of 2 x 4 MB of gradients does not.
  auto buckets = spawn_workers(kWorker, {"shm_model", "1000000"}, 2);
  EXPECT_NE(buckets.workers[0].exit_code, 0) << buckets.summary();
  EXPECT_TRUE(contains(buckets.workers[0].output, "too small for the gradient buckets of a model (4.0 MB per process)"))
      << buckets.summary();
  // The way out the message gives.
  auto gloo = spawn_workers(kWorker, {"shm_model", "1000000"}, 2, {{"ACCELERATE_SHM", "0"}});
  ASSERT_TRUE(gloo.all_succeeded()) << gloo.summary();
  EXPECT_TRUE(contains(gloo.workers[0].output, "shm: off")) << gloo.summary();
}

TEST(Shm, TooSmallDevShmIsAClearError) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs on /dev/shm in a private mount namespace";
  SpawnOptions opts;
  opts.nprocs = 1;
  opts.distributed_env = false;
  opts.env = {{"ACCEL_TINY_SHM_INNER", "1"}};
  opts.timeout = std::chrono::seconds(150);
  // A tmpfs of 8 MiB on /dev/shm, seen only by the inner test.
  const InnerRun inner = run_in_mount_namespace("/dev/shm", "mount -t tmpfs -o size=8m accel-test-shm /dev/shm",
                                                "Shm.TinyDevShmInner", opts);
  if (!inner.entered) GTEST_SKIP() << "cannot mount a tmpfs in a private mount namespace here: " << inner.run.summary();
  EXPECT_TRUE(inner.passed()) << inner.run.summary();
}

}  // namespace
