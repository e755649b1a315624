#pragma once
// Runs the processes of one launch and watches them: their output is forwarded line by
// line, the first failure stops the others (and, with restarts, starts them all again),
// and signals sent to the launcher reach every process. No process outlives the launcher.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace accelerate::launcher {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // KEY=VALUE
  int rank = 0;
  int local_rank = 0;
};

struct SupervisorOptions {
  // "[rankN]: " before each forwarded line, for stdout and stderr.
  bool prefix_stdout = false;
  bool prefix_stderr = false;
  int tee = 0;                  // bit 1: stdout, bit 2: stderr into per-rank logs
  std::optional<std::string> log_dir;
  // Between SIGTERM and SIGKILL when stopping the processes.
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  size_t tail_lines = 20;       // stderr lines shown for a failed rank
  std::string name = "accelerate launch";  // prefix of the launcher's own messages
  // After a process fails, stop the others and start every process again, up to this many
  // times (not after the launcher was interrupted, nor when a program cannot be started).
  int max_restarts = 0;
  // The longest wait between two looks at the processes (exits also wake the launcher at once).
  std::chrono::milliseconds monitor_interval{std::chrono::seconds(1)};
  // The job's shared-memory prefix (shm_cleanup.h): what starts with it in /dev/shm is
  // removed once the processes of an attempt have ended, whichever way they ended.
  std::string shm_prefix;
};

// Starts every child, supervises them to the end and returns the launcher's exit code:
// 0 when all succeed; the first failing rank's exit code (128+signal when killed); 128+signal
// when the launcher itself was interrupted; 127 when a program cannot be started.
int supervise(const std::vector<ChildSpec>& children, const SupervisorOptions& options);
// The same with restarts: `make_children(restart)` gives the processes of each attempt
// (0 first). The exit code is that of the last attempt.
int supervise(const std::function<std::vector<ChildSpec>(int restart)>& make_children,
              const SupervisorOptions& options);

}  // namespace accelerate::launcher
