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

// How an attempt ended: on this machine, or (through JobPeers) for the whole job.
struct AttemptOutcome {
  int code = 0;             // the launcher's exit code if this attempt is the last
  bool failed = false;      // a process failed (restarts apply)
  bool restartable = true;  // nothing forbids a restart (interrupted launcher, program that cannot start)
  std::string cause;        // who failed first, when it was on another machine ("" otherwise)
};

// The other machines of a job that spans several (machine_link.h): they stop this machine's
// processes when one of theirs fails, hear about failures here, and agree on each
// attempt's outcome.
class JobPeers {
 public:
  virtual ~JobPeers() = default;
  // Readable when another machine asks this one to stop its processes; stop_reason() says why.
  virtual int stop_fd() const = 0;
  virtual std::string stop_reason() = 0;
  // The first failure here in `attempt`, told at once: rank -1 when the launcher itself was
  // interrupted (code 128 + signal). `what` says how ("exited with code 3", "was killed by
  // signal 9 (SIGKILL)", "could not be started").
  virtual void failed_here(int attempt, int rank, int code, const std::string& what) = 0;
  // Every process here has ended: waits for the other machines and returns the job's outcome.
  virtual AttemptOutcome end_attempt(int attempt, const AttemptOutcome& here) = 0;
};

struct SupervisorOptions {
  // "[rankN]: " before each forwarded line, for stdout and stderr.
  bool prefix_stdout = false;
  bool prefix_stderr = false;
  int tee = 0;  // bit 1: stdout, bit 2: stderr into per-rank logs
  std::optional<std::string> log_dir;
  // Between SIGTERM and SIGKILL when stopping the processes.
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  size_t tail_lines = 20;                  // stderr lines shown for a failed rank
  std::string name = "accelerate launch";  // prefix of the launcher's own messages
  // After a process fails, stop the others and start every process again, up to this many
  // times (not after the launcher was interrupted, nor when a program cannot be started).
  int max_restarts = 0;
  // The longest wait between two looks at the processes (exits also wake the launcher at once).
  std::chrono::milliseconds monitor_interval{std::chrono::seconds(1)};
  // The job's shared-memory prefix (shm_cleanup.h): what starts with it in /dev/shm is
  // removed once the processes of an attempt have ended, whichever way they ended.
  std::string shm_prefix;
  // The job's other machines (null on one machine): restarts and the exit code are decided
  // with them.
  JobPeers* peers = nullptr;
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
