// A tiny program started through `accelerate launch` by test_launcher.py: it reports what
// each rank sees, fails, sleeps or meets its peers, as a test asks. No LibTorch.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

extern char** environ;

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

int rank() { return std::atoi(env_or("RANK", "-1").c_str()); }

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string g_sigint_marker;

// Only async-signal-safe calls here (open, close, _exit): fopen allocates, and a signal that
// lands inside malloc would deadlock it (ThreadSanitizer's report, scripts/sanitize.sh tsan).
void on_sigint(int) {
  if (!g_sigint_marker.empty()) {
    const int fd = open(g_sigint_marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
  }
  _exit(130);
}

void sleep_long() {
  for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// env DIR ARGS...: DIR/rank<R>.env holds the environment, then one "arg=" line per argument.
int mode_env(int argc, char** argv) {
  std::string dir = argv[2];
  std::string text;
  for (char** e = environ; *e; ++e) text += std::string(*e) + "\n";
  for (int i = 3; i < argc; ++i) text += std::string("arg=") + argv[i] + "\n";
  write_file(dir + "/rank" + std::to_string(rank()) + ".env", text);
  std::printf("probe rank %d of %s\n", rank(), env_or("WORLD_SIZE", "?").c_str());
  std::fprintf(stderr, "probe stderr rank %d\n", rank());
  return 0;
}

// fail FAILING_RANK CODE PIDDIR [ignore_term]: every rank records its pid; the failing
// rank exits with CODE after a moment, the others sleep (optionally ignoring SIGTERM).
int mode_fail(char** argv, int argc) {
  int failing = std::atoi(argv[2]);
  int code = std::atoi(argv[3]);
  std::string dir = argv[4];
  bool ignore_term = argc > 5 && std::string(argv[5]) == "ignore_term";
  if (ignore_term && rank() != failing) signal(SIGTERM, SIG_IGN);
  write_file(dir + "/" + std::to_string(rank()) + ".pid", std::to_string(getpid()));
  if (rank() == failing) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::fprintf(stderr, "rank %d failing on purpose with code %d\n", rank(), code);
    return code;
  }
  sleep_long();
  return 0;
}

// sleep PIDDIR: records its pid, notes a SIGINT in PIDDIR/<rank>.sigint, else sleeps.
int mode_sleep(char** argv) {
  std::string dir = argv[2];
  g_sigint_marker = dir + "/" + std::to_string(rank()) + ".sigint";
  signal(SIGINT, on_sigint);
  write_file(dir + "/" + std::to_string(rank()) + ".pid", std::to_string(getpid()));
  sleep_long();
  return 0;
}

// rendezvous TOKEN: rank 0 listens on MASTER_PORT and checks that every other rank of
// its job (same TOKEN) connects to it, as a TCPStore rendezvous would.
int mode_rendezvous(char** argv) {
  std::string token = argv[2];
  int world = std::atoi(env_or("WORLD_SIZE", "1").c_str());
  int port = std::atoi(env_or("MASTER_PORT", "0").c_str());
  std::printf("port=%d\n", port);
  std::fflush(stdout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, env_or("MASTER_ADDR", "127.0.0.1").c_str(), &addr.sin_addr);
  if (rank() == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0) {
      std::fprintf(stderr, "rank 0: cannot listen on port %d: %s\n", port, std::strerror(errno));
      return 1;
    }
    int ok = 0;
    for (int peer = 1; peer < world; ++peer) {
      int c = accept(fd, nullptr, nullptr);
      char buf[128] = {};
      ssize_t n = read(c, buf, sizeof(buf) - 1);
      bool same = n > 0 && token == std::string(buf, static_cast<size_t>(n));
      ok += same;
      (void)!write(c, same ? "y" : "n", 1);
      close(c);
    }
    // Stay a moment so that concurrent jobs overlap.
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    return ok == world - 1 ? 0 : 1;
  }
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      (void)!write(fd, token.data(), token.size());
      char answer = 0;
      ssize_t n = read(fd, &answer, 1);
      close(fd);
      if (n == 1 && answer == 'y') return 0;
      std::fprintf(stderr, "rank %d: met another job on port %d\n", rank(), port);
      return 1;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::fprintf(stderr, "rank %d: nobody listens on port %d\n", rank(), port);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "env" && argc >= 3) return mode_env(argc, argv);
  if (mode == "fail" && argc >= 5) return mode_fail(argv, argc);
  if (mode == "sleep" && argc >= 3) return mode_sleep(argv);
  if (mode == "rendezvous" && argc >= 3) return mode_rendezvous(argv);
  std::fprintf(stderr,
               "usage: launcher_probe env DIR [ARGS] | fail RANK CODE PIDDIR [ignore_term] | "
               "sleep PIDDIR | rendezvous TOKEN\n");
  return 64;
}
