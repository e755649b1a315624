#include "spawn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace accelerate {
namespace testing {
namespace {

// Variables through which a launcher could leak into the workers and change their set-up.
const char* const kLauncherPrefixes[] = {"RANK=",        "WORLD_SIZE=",      "LOCAL_RANK=", "LOCAL_WORLD_SIZE=",
                                         "MASTER_ADDR=", "MASTER_PORT=",     "GROUP_RANK=", "TORCHELASTIC_",
                                         "SLURM_",       "OMPI_COMM_WORLD_", "ACCELERATE_"};

std::map<std::string, std::string> inherited_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    bool launcher = false;
    for (const char* prefix : kLauncherPrefixes) {
      if (entry.rfind(prefix, 0) == 0) launcher = true;
    }
    const auto eq = entry.find('=');
    if (launcher || eq == std::string::npos) continue;
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

bool SpawnResult::all_succeeded() const {
  if (workers.empty()) return false;
  for (const auto& w : workers) {
    if (w.exit_code != 0 || w.timed_out) return false;
  }
  return true;
}

std::string SpawnResult::summary() const {
  std::ostringstream os;
  for (const auto& w : workers) {
    os << "---- rank " << w.rank << ": exit " << w.exit_code << (w.timed_out ? " (timed out)" : "") << " ----\n"
       << w.output << (w.output.empty() || w.output.back() == '\n' ? "" : "\n");
  }
  return os.str();
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("free_tcp_port: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("free_tcp_port: " + err);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

namespace {

struct Child {
  pid_t pid;
  std::string log;
};

std::map<std::string, std::string> worker_environment(int rank, const SpawnOptions& options, int master_port) {
  auto env = inherited_environment();
  if (env.find("OMP_NUM_THREADS") == env.end()) env["OMP_NUM_THREADS"] = "1";
  if (options.distributed_env) {
    env["RANK"] = std::to_string(rank);
    env["LOCAL_RANK"] = std::to_string(rank);
    env["WORLD_SIZE"] = std::to_string(options.nprocs);
    env["LOCAL_WORLD_SIZE"] = std::to_string(options.nprocs);
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = std::to_string(master_port);
  }
  for (const auto& [k, v] : options.env) env[k] = v;
  if (options.per_rank_env) options.per_rank_env(rank, env);
  return env;
}

// Output (stdout and stderr) goes to a temporary log file, read once the child has ended.
Child start_child(const std::string& executable, const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env) {
  char log_template[] = "/tmp/accel-worker-XXXXXX";
  const int log_fd = ::mkstemp(log_template);
  if (log_fd < 0) throw std::runtime_error(std::string("spawn_workers: mkstemp: ") + std::strerror(errno));

  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) {
    if (!v.empty()) env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings{executable};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("spawn_workers: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::close(log_fd);
    ::execve(executable.c_str(), argv.data(), envp.data());
    const std::string msg = "spawn_workers: cannot execute " + executable + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(log_fd);
  return {pid, log_template};
}

// Children still running at the deadline are killed and marked timed out.
void wait_for_children(const std::vector<Child>& children, std::chrono::steady_clock::time_point deadline,
                       SpawnResult& result) {
  result.workers.resize(children.size());
  std::vector<bool> done(children.size(), false);
  size_t remaining = children.size();
  while (remaining > 0) {
    for (size_t i = 0; i < children.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      const pid_t r = ::waitpid(children[i].pid, &status, WNOHANG);
      if (r == children[i].pid) {
        result.workers[i].exit_code = decode_status(status);
        done[i] = true;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t i = 0; i < children.size(); ++i) {
        if (done[i]) continue;
        ::kill(children[i].pid, SIGKILL);
        int status = 0;
        ::waitpid(children[i].pid, &status, 0);
        result.workers[i].exit_code = decode_status(status);
        result.workers[i].timed_out = true;
        done[i] = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

SpawnResult spawn_workers(const std::string& executable, const std::vector<std::string>& args,
                          const SpawnOptions& options) {
  if (options.nprocs < 1) throw std::invalid_argument("spawn_workers: nprocs must be >= 1");
  SpawnResult result;
  result.master_port = options.master_port != 0 ? options.master_port : free_tcp_port();
  std::vector<Child> children;
  for (int rank = 0; rank < options.nprocs; ++rank) {
    children.push_back(start_child(executable, args, worker_environment(rank, options, result.master_port)));
  }
  wait_for_children(children, std::chrono::steady_clock::now() + options.timeout, result);
  for (size_t i = 0; i < children.size(); ++i) {
    result.workers[i].rank = static_cast<int>(i);
    result.workers[i].output = read_file(children[i].log);
    ::unlink(children[i].log.c_str());
  }
  return result;
}

SpawnResult spawn_workers(const std::string& executable, const std::vector<std::string>& args, int nprocs,
                          const std::map<std::string, std::string>& extra_env) {
  SpawnOptions options;
  options.nprocs = nprocs;
  options.env = extra_env;
  return spawn_workers(executable, args, options);
}

InnerRun run_in_mount_namespace(const std::string& private_fallback, const std::string& setup,
                                const std::string& inner_test, SpawnOptions options) {
  options.nprocs = 1;
  options.distributed_env = false;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  self[n > 0 ? n : 0] = '\0';
  const std::string script = "{ mount --make-rprivate / || mount --make-private " + private_fallback +
                             "; } 2>/dev/null && " + (setup.empty() ? "" : setup + " && ") +
                             "exec \"$0\" --gtest_filter=" + inner_test;
  InnerRun inner;
  inner.run = spawn_workers("/usr/bin/unshare",
                            {"--mount", "--propagation", "unchanged", "--", "/bin/sh", "-c", script, self}, options);
  const WorkerResult& w = inner.run.workers[0];
  inner.entered = w.exit_code == 0 || w.output.find("[ RUN      ] " + inner_test) != std::string::npos;
  return inner;
}

bool InnerRun::passed() const {
  const WorkerResult& w = run.workers[0];
  return w.exit_code == 0 && w.output.find("[  PASSED  ] 1 test") != std::string::npos;
}

}  // namespace testing
}  // namespace accelerate
