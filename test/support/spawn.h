#pragma once
// A small multi-process test harness: starts N copies of a worker executable as the
// launchers do (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
// MASTER_PORT=<a free port>), waits for them with a deadline and returns each one's exit
// code and captured output (stdout and stderr interleaved).
//
//   auto run = accelerate::testing::spawn_workers(WORKER, {"train", "--steps", "5"}, 2);
//   EXPECT_TRUE(run.all_succeeded()) << run.summary();
//
// No LibTorch here: test drivers that only spawn and check stay cheap to compile.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace accelerate {
namespace testing {

struct SpawnOptions {
  int nprocs = 2;
  // Extra environment for every worker. An empty value removes the variable.
  std::map<std::string, std::string> env;
  // Last word on one worker's environment (e.g. give rank 1 a wrong RANK).
  std::function<void(int rank, std::map<std::string, std::string>& env)> per_rank_env;
  // Set RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/MASTER_ADDR/MASTER_PORT. When false,
  // the workers see no launcher at all (launcher variables are removed either way, so a
  // test run under Slurm or torchrun stays hermetic).
  bool distributed_env = true;
  int master_port = 0;  // 0: pick a free port
  // Workers still running at the deadline are killed (SIGKILL) and marked timed_out.
  std::chrono::seconds timeout{180};
};

struct WorkerResult {
  int rank = 0;
  int exit_code = -1;  // exit status, or 128 + signal number when killed by a signal
  bool timed_out = false;
  std::string output;  // stdout + stderr
};

struct SpawnResult {
  std::vector<WorkerResult> workers;
  int master_port = 0;
  bool all_succeeded() const;
  // Every worker's exit code and output, for failure messages.
  std::string summary() const;
};

// A TCP port on 127.0.0.1 that nobody listened on a moment ago.
int free_tcp_port();

SpawnResult spawn_workers(const std::string& executable, const std::vector<std::string>& args,
                          const SpawnOptions& options);
SpawnResult spawn_workers(const std::string& executable, const std::vector<std::string>& args, int nprocs,
                          const std::map<std::string, std::string>& extra_env = {});

// Runs this test binary again, only its GoogleTest `inner_test`, in a private mount namespace
// (unshare --mount; mounts made private first, so nothing mounted there shows outside), after
// the shell command `setup` (e.g. mounting a small tmpfs; may be empty). `private_fallback`
// is the mount point made private alone where / is no mount point (the Debian 13 root).
// `entered` is false when the namespace could not be made: the caller skips with the output.
struct InnerRun {
  SpawnResult run;
  bool entered = false;
  bool passed() const;  // exit 0 and "[  PASSED  ] 1 test"
};
InnerRun run_in_mount_namespace(const std::string& private_fallback, const std::string& setup,
                                const std::string& inner_test, SpawnOptions options);

}  // namespace testing
}  // namespace accelerate
