#pragma once
// Runs the processes of one launch and watches them: their output is forwarded line by
// line, the first failure stops the others, and signals sent to the launcher reach every
// process. No process outlives the launcher.

#include <chrono>
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
};

// Starts every child, supervises them to the end and returns the launcher's exit code:
// 0 when all succeed; the first failing rank's exit code (128+signal when killed); 128+signal
// when the launcher itself was interrupted; 127 when a program cannot be started.
int supervise(const std::vector<ChildSpec>& children, const SupervisorOptions& options);

}  // namespace accelerate::launcher
