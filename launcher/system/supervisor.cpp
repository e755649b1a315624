#include "system/supervisor.h"

#include "system/shm_cleanup.h"

#include <accelerate/core/error.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

namespace accelerate::launcher {

namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe_write = -1;

void on_signal(int signo) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  (void)!write(g_signal_pipe_write, &byte, 1);
  errno = saved;
}

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a closed terminal or pipe must not stop the supervision
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void say(const SupervisorOptions& options, const std::string& text) {
  std::string line = options.name + ": " + text + "\n";
  write_all(STDERR_FILENO, line.data(), line.size());
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

int exit_code_of(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

struct Stream;

// The stream whose unfinished line (a progress bar redrawn with '\r') is on the terminal:
// another stream's output first ends that line, so that no rank's line is glued to a bar.
struct OpenLine {
  Stream* owner = nullptr;
  int fd = -1;
};

// One output stream of one child: forwarded to our own stdout/stderr, copied to its log,
// and (for stderr) remembered for the failure report.
struct Stream {
  int fd = -1;
  int out_fd = STDOUT_FILENO;
  int log_fd = -1;
  size_t child = 0;
  bool is_stderr = false;
  std::string prefix;
  bool split_lines = true;
  std::string partial;
  std::deque<std::string>* tail = nullptr;
  size_t tail_limit = 0;
  std::string tail_partial;
  OpenLine* open = nullptr;  // shared by every stream of the job
  bool line_open = false;    // this stream's unfinished line is on the terminal

  void remember(const char* data, size_t size) {
    if (!tail) return;
    tail_partial.append(data, size);
    size_t start = 0, nl;
    while ((nl = tail_partial.find('\n', start)) != std::string::npos) {
      tail->push_back(tail_partial.substr(start, nl - start));
      if (tail->size() > tail_limit) tail->pop_front();
      start = nl + 1;
    }
    tail_partial.erase(0, start);
  }

  // Writes `text` (no '\n' in it) as one write: each '\r'-separated redraw keeps the prefix
  // at the start of the line; `complete` ends the line, else it stays open for redraws.
  void emit(const std::string& text, bool complete) {
    if (open->owner != nullptr && open->owner != this) {
      write_all(open->fd, "\n", 1);
      open->owner->line_open = false;
      open->owner = nullptr;
    }
    std::string out;
    size_t start = 0;
    for (bool first = true;; first = false) {
      const size_t cr = text.find('\r', start);
      const std::string piece = text.substr(start, cr == std::string::npos ? std::string::npos : cr - start);
      if (!first) {
        out += "\r" + prefix + piece;
      } else if (!piece.empty() || cr == std::string::npos) {
        out += (line_open ? "" : prefix) + piece;
      }
      if (cr == std::string::npos) break;
      start = cr + 1;
    }
    if (complete) out += "\n";
    line_open = !complete;
    open->owner = complete ? nullptr : this;
    open->fd = out_fd;
    write_all(out_fd, out.data(), out.size());
  }

  void feed(const char* data, size_t size) {
    if (log_fd >= 0) write_all(log_fd, data, size);
    remember(data, size);
    if (!split_lines) {
      write_all(out_fd, data, size);
      return;
    }
    partial.append(data, size);
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      // One write per line keeps lines of different ranks from interleaving.
      emit(partial.substr(start, nl - start), true);
      start = nl + 1;
    }
    partial.erase(0, start);
    // A redraw ('\r') is shown as it comes: a progress bar would otherwise appear only at
    // its last newline, as one long line. Text that continues an open redraw goes at once
    // too: a program that writes the '\r' and the bar in two writes would else show each
    // bar one redraw late.
    if (partial.find('\r') != std::string::npos || (line_open && !partial.empty())) {
      emit(partial, false);
      partial.clear();
    }
  }

  void finish() {
    if (!partial.empty()) {
      emit(partial, true);
      partial.clear();
    } else if (line_open) {
      emit("", true);
    }
    if (tail && !tail_partial.empty()) {
      tail->push_back(tail_partial);
      if (tail->size() > tail_limit) tail->pop_front();
      tail_partial.clear();
    }
    if (fd >= 0) close(fd);
    fd = -1;
    if (log_fd >= 0) close(log_fd);
    log_fd = -1;
  }
};

struct Child {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  std::deque<std::string> stderr_tail;
};

class Supervisor {
 public:
  Supervisor(const std::function<std::vector<ChildSpec>(int)>& make_children, const SupervisorOptions& options)
      : make_children_(make_children), options_(options) {}

  int run() {
    install_signal_handlers();
    int code = 0;
    try {
      for (attempt_ = 0;; ++attempt_) {
        run_attempt();
        remove_shm_segments(options_.shm_prefix);  // a killed process may have left some
        AttemptOutcome outcome = local_outcome();
        if (options_.peers) outcome = options_.peers->end_attempt(attempt_, outcome);
        const bool restart = outcome.failed && outcome.restartable && attempt_ < options_.max_restarts;
        code = report(outcome, restart);
        if (!restart) break;
        say(options_, "restarting every process (restart " + std::to_string(attempt_ + 1) + " of at most " +
                          std::to_string(options_.max_restarts) + ")");
      }
    } catch (...) {  // e.g. no free port for a restart: every process of the attempt has ended
      remove_shm_segments(options_.shm_prefix);
      restore_signal_handlers();
      throw;
    }
    restore_signal_handlers();
    return code;
  }

 private:
  // One start of every process, supervised until all have ended.
  void run_attempt() {
    specs_ = make_children_(attempt_);
    children_.assign(specs_.size(), Child());
    streams_.clear();
    first_failure_ = -1;
    start_failed_ = exec_failed_ = stopping_ = killed_ = false;
    for (size_t i = 0; i < specs_.size() && !start_failed_ && !interrupt_signal_; ++i) {
      start(i);
      drain_signals_nonblocking();
    }
    if (start_failed_) begin_stopping();
    loop();
  }

  void install_signal_handlers() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(ErrorCode::Internal, "pipe2 failed");
    signal_read_ = fds[0];
    g_signal_pipe_write = fds[1];
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, &saved_[sig]);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &saved_[SIGPIPE]);
  }

  void restore_signal_handlers() {
    for (auto& [sig, sa] : saved_) sigaction(sig, &sa, nullptr);
    close(signal_read_);
    close(g_signal_pipe_write);
    g_signal_pipe_write = -1;
  }

  int open_log(const ChildSpec& spec, const char* stream) {
    std::string path = *options_.log_dir + "/rank" + std::to_string(spec.rank) + "." + stream + ".log";
    // A restarted attempt appends: the log of the failure that caused it stays readable.
    const int mode = attempt_ == 0 ? O_TRUNC : O_APPEND;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | mode | O_CLOEXEC, 0644);
    if (fd < 0) say(options_, "cannot write log " + path + ": " + std::strerror(errno));
    return fd;
  }

  void start(size_t index) {
    const ChildSpec& spec = specs_[index];
    Child& child = children_[index];
    // stdout goes straight to our stdout when nothing needs to see it: a single process then
    // behaves exactly as if run directly (line-buffered on a terminal).
    bool tee_out = (options_.tee & 1) && options_.log_dir;
    bool pipe_stdout = options_.prefix_stdout || tee_out || specs_.size() > 1;
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
    if ((pipe_stdout && pipe2(out_pipe, O_CLOEXEC) != 0) || pipe2(err_pipe, O_CLOEXEC) != 0 ||
        pipe2(exec_pipe, O_CLOEXEC) != 0) {
      say(options_, std::string("cannot create pipes: ") + std::strerror(errno));
      start_failed_ = true;
      return;
    }
    std::vector<char*> argv, envp;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t parent = getpid();

    // Signals stay blocked across fork: the child must not run our handler (it would
    // write into the launcher's signal pipe) before it has reset its dispositions.
    sigset_t all, previous;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &previous);
    pid_t pid = fork();
    if (pid != 0) sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (pid < 0) {
      say(options_, std::string("fork failed: ") + std::strerror(errno));
      start_failed_ = true;
      return;
    }
    if (pid == 0) {
      // Child: its own process group (so signals reach its own children too), killed if
      // the launcher dies in any way, default signal dispositions, then exec.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(128 + SIGKILL);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &dfl, nullptr);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      if (pipe_stdout) dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
      execvpe(argv[0], argv.data(), envp.data());
      int err = errno;
      (void)!write(exec_pipe[1], &err, sizeof(err));
      _exit(127);
    }
    setpgid(pid, pid);  // also here: no window where a signal would miss the group
    child.pid = pid;
    child.running = true;
    if (pipe_stdout) close(out_pipe[1]);
    close(err_pipe[1]);
    close(exec_pipe[1]);
    int err = 0;
    ssize_t n;
    do {
      n = read(exec_pipe[0], &err, sizeof(err));
    } while (n < 0 && errno == EINTR);
    close(exec_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof(err))) {
      say(options_,
          "cannot run '" + spec.argv[0] + "' (rank " + std::to_string(spec.rank) + "): " + std::strerror(err));
      start_failed_ = true;
      exec_failed_ = true;
      if (options_.peers) options_.peers->failed_here(attempt_, spec.rank, 127, "could not be started");
    }

    if (pipe_stdout) add_stream(index, out_pipe[0], false, tee_out ? open_log(spec, "stdout") : -1);
    bool tee_err = (options_.tee & 2) && options_.log_dir;
    add_stream(index, err_pipe[0], true, tee_err ? open_log(spec, "stderr") : -1);
  }

  void add_stream(size_t index, int fd, bool is_stderr, int log_fd) {
    auto s = std::make_unique<Stream>();
    s->fd = fd;
    s->child = index;
    s->is_stderr = is_stderr;
    s->out_fd = is_stderr ? STDERR_FILENO : STDOUT_FILENO;
    s->log_fd = log_fd;
    s->open = &open_line_;
    const bool prefixed = is_stderr ? options_.prefix_stderr : options_.prefix_stdout;
    s->prefix = prefixed ? "[rank" + std::to_string(specs_[index].rank) + "]: " : "";
    // Without prefixes a single process's bytes pass through as they come (progress bars).
    s->split_lines = prefixed || specs_.size() > 1;
    if (is_stderr) {
      s->tail = &children_[index].stderr_tail;
      s->tail_limit = options_.tail_lines;
    }
    streams_.push_back(std::move(s));
  }

  void signal_all(int sig) {
    for (auto& child : children_) {
      // The group was created by the child itself; the group id is its pid.
      if (child.pid > 0) {
        if (kill(-child.pid, sig) != 0 && child.running) kill(child.pid, sig);
      }
    }
  }

  void begin_stopping() {
    if (stopping_) return;
    stopping_ = true;
    signal_all(SIGTERM);
    kill_deadline_ = Clock::now() + options_.grace;
  }

  void on_launcher_signal(int sig) {
    if (sig == SIGCHLD) {
      reap();
      return;
    }
    if (interrupt_signal_ == 0) {
      interrupt_signal_ = sig;
      say(options_, std::string("received SIG") + sigabbrev_np(sig) + ": passing it to every process");
      if (options_.peers) {
        options_.peers->failed_here(attempt_, -1, 128 + sig, std::string("received SIG") + sigabbrev_np(sig));
      }
      // Forward the very signal (Ctrl-C stays SIGINT for the programs), then escalate.
      stopping_ = true;
      signal_all(sig);
      kill_deadline_ = Clock::now() + options_.grace;
    } else {
      say(options_, "second signal: killing every process now");
      signal_all(SIGKILL);
      killed_ = true;
    }
  }

  void reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (size_t i = 0; i < children_.size(); ++i) {
        Child& child = children_[i];
        if (child.pid != pid || !child.running) continue;
        child.running = false;
        child.status = status;
        bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (failed && first_failure_ < 0 && !interrupt_signal_ && !stopping_) {
          first_failure_ = static_cast<int>(i);
          say(options_, "rank " + std::to_string(specs_[i].rank) + " (pid " + std::to_string(pid) + ") " +
                            describe_status(status) + ": stopping the other processes");
          if (options_.peers) {
            options_.peers->failed_here(attempt_, specs_[i].rank, exit_code_of(status), describe_status(status));
          }
          begin_stopping();
        }
      }
    }
  }

  void drain_signals_nonblocking() {
    unsigned char buf[64];
    ssize_t n;
    while ((n = read(signal_read_, buf, sizeof(buf))) > 0) {
      for (ssize_t i = 0; i < n; ++i) on_launcher_signal(buf[i]);
    }
  }

  bool any_running() const {
    for (const auto& c : children_) {
      if (c.running) return true;
    }
    return false;
  }

  void loop() {
    std::optional<Clock::time_point> drain_deadline;
    for (;;) {
      bool running = any_running();
      bool open_streams = false;
      for (auto& s : streams_) open_streams |= s->fd >= 0;
      if (!running && !open_streams) break;
      if (!running && !drain_deadline) {
        // A grandchild may keep a pipe open after its parent died: read what is there, but
        // do not wait for it.
        drain_deadline = Clock::now() + std::chrono::milliseconds(500);
      }

      std::vector<pollfd> fds;
      fds.push_back({signal_read_, POLLIN, 0});
      std::vector<Stream*> polled;
      for (auto& s : streams_) {
        if (s->fd < 0) continue;
        fds.push_back({s->fd, POLLIN, 0});
        polled.push_back(s.get());
      }
      // Another machine may ask us to stop (until we are stopping anyway).
      const size_t peer_index = fds.size();
      if (options_.peers && !stopping_) fds.push_back({options_.peers->stop_fd(), POLLIN, 0});
      int timeout_ms = -1;
      auto now = Clock::now();
      auto limit = [&](Clock::time_point t) {
        int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count()) + 1;
        ms = std::max(ms, 0);
        timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
      };
      if (stopping_ && !killed_) limit(kill_deadline_);
      if (drain_deadline) limit(*drain_deadline);
      // Also wake now and then: a lost SIGCHLD must not hang the launcher.
      const int interval = std::max(1, static_cast<int>(options_.monitor_interval.count()));
      if (timeout_ms < 0 || timeout_ms > interval) timeout_ms = interval;

      int ready = poll(fds.data(), fds.size(), timeout_ms);
      if (ready < 0 && errno != EINTR) break;
      if (ready > 0) {
        if (fds[0].revents & POLLIN) drain_signals_nonblocking();
        if (peer_index < fds.size() && (fds[peer_index].revents & POLLIN) && !stopping_) {
          say(options_, options_.peers->stop_reason() + ": stopping the processes of this machine");
          begin_stopping();
        }
        for (size_t i = 1; i < peer_index; ++i) {
          if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          Stream* s = polled[i - 1];
          char buf[65536];
          ssize_t n = read(s->fd, buf, sizeof(buf));
          if (n > 0) {
            s->feed(buf, static_cast<size_t>(n));
          } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            s->finish();
          }
        }
      }
      reap();
      now = Clock::now();
      if (stopping_ && !killed_ && now >= kill_deadline_) {
        if (any_running()) say(options_, "processes still running after the grace period: sending SIGKILL");
        signal_all(SIGKILL);
        killed_ = true;
      }
      if (drain_deadline && now >= *drain_deadline) {
        for (auto& s : streams_) {
          if (s->fd >= 0) s->finish();
        }
      }
    }
    for (auto& s : streams_) {
      if (s->fd >= 0) s->finish();
    }
    // Stragglers in the children's groups (their own children) go too.
    if (stopping_) signal_all(SIGKILL);
    stop_leftover_groups();
  }

  // Processes that a rank started and left behind (still in its process group) would be
  // orphans once the launcher exits: SIGTERM, then SIGKILL after the grace period.
  void stop_leftover_groups() {
    std::vector<pid_t> groups;
    for (size_t i = 0; i < children_.size(); ++i) {
      pid_t group = children_[i].pid;
      if (group > 0 && kill(-group, 0) == 0) {
        say(options_,
            "rank " + std::to_string(specs_[i].rank) + " left processes running in its process group: stopping them");
        kill(-group, SIGTERM);
        groups.push_back(group);
      }
    }
    const auto deadline = Clock::now() + options_.grace;
    while (!groups.empty()) {
      std::vector<pid_t> alive;
      for (pid_t g : groups) {
        if (kill(-g, 0) == 0) alive.push_back(g);
      }
      groups.swap(alive);
      if (groups.empty()) break;
      if (Clock::now() >= deadline) {
        for (pid_t g : groups) kill(-g, SIGKILL);
        break;
      }
      usleep(20000);
    }
  }

  // How the attempt ended here: the first failing rank's code, 128 + signal when the
  // launcher was interrupted, 127 when a program could not be started.
  AttemptOutcome local_outcome() const {
    AttemptOutcome o;
    o.restartable = !exec_failed_ && !interrupt_signal_;
    o.failed = exec_failed_ || interrupt_signal_ || first_failure_ >= 0;
    if (exec_failed_)
      o.code = 127;
    else if (interrupt_signal_)
      o.code = 128 + interrupt_signal_;
    else if (first_failure_ >= 0)
      o.code = exit_code_of(children_[first_failure_].status);
    return o;
  }

  // Tells the attempt's story (the failed rank here, or the failure on another machine) and
  // returns its exit code.
  int report(const AttemptOutcome& outcome, bool restarting) {
    if (exec_failed_ || interrupt_signal_) return outcome.code;
    if (first_failure_ >= 0) {
      const Child& child = children_[first_failure_];
      const ChildSpec& spec = specs_[first_failure_];
      std::string text = "rank " + std::to_string(spec.rank) + " (local rank " + std::to_string(spec.local_rank) +
                         ", pid " + std::to_string(child.pid) + ") " + describe_status(child.status);
      say(options_, text);
      if (!child.stderr_tail.empty()) {
        std::string tail = options_.name + ": last " + std::to_string(child.stderr_tail.size()) + " line(s) of rank " +
                           std::to_string(spec.rank) + "'s stderr:\n";
        for (const auto& line : child.stderr_tail) tail += "    " + line + "\n";
        write_all(STDERR_FILENO, tail.data(), tail.size());
      }
    }
    if (!outcome.cause.empty()) say(options_, "the job failed first on another machine: " + outcome.cause);
    if (outcome.failed && !restarting) {
      say(options_, "exiting with code " + std::to_string(outcome.code) +
                        (attempt_ > 0 ? " after " + std::to_string(attempt_) + " restart(s)" : ""));
    }
    return outcome.code;
  }

  const std::function<std::vector<ChildSpec>(int)>& make_children_;
  const SupervisorOptions& options_;
  int attempt_ = 0;
  std::vector<ChildSpec> specs_;
  std::vector<Child> children_;
  std::vector<std::unique_ptr<Stream>> streams_;
  OpenLine open_line_;  // shared by the streams: whose unfinished line is on the terminal
  std::map<int, struct sigaction> saved_;
  int signal_read_ = -1;
  int interrupt_signal_ = 0;
  int first_failure_ = -1;
  bool start_failed_ = false;
  bool exec_failed_ = false;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point kill_deadline_{};
};

}  // namespace

int supervise(const std::function<std::vector<ChildSpec>(int restart)>& make_children,
              const SupervisorOptions& options) {
  if (options.log_dir) {
    std::error_code ec;
    std::filesystem::create_directories(*options.log_dir, ec);
    if (ec) say(options, "cannot create log directory " + *options.log_dir + ": " + ec.message());
  }
  Supervisor supervisor(make_children, options);
  return supervisor.run();
}

int supervise(const std::vector<ChildSpec>& children, const SupervisorOptions& options) {
  const std::function<std::vector<ChildSpec>(int)> same = [&children](int) { return children; };
  SupervisorOptions once = options;
  once.max_restarts = 0;
  return supervise(same, once);
}

}  // namespace accelerate::launcher
