#include "link/store_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iostream>

#include <accelerate/log/logging.h>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "core/message_auth.h"
#include "core/store_wire.h"
#include "link/link_socket.h"
#include "link/machine_link.h"

namespace accelerate::launcher {
namespace wire = detail::store_wire;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kProveWithin{10000};  // a connection that proves nothing by then is dropped
constexpr size_t kMaxUnproven = 64;          // waiting at once; then the oldest goes first,
constexpr milliseconds kEvictAfter{1000};    // once it has had a second to prove (else the new one goes)
constexpr size_t kReadPerPass = 64 * 1024;   // per connection, then the others are served
constexpr int kAcceptsPerPass = 8;
constexpr size_t kShownRefusals = 16;

struct Conn {
  int fd = -1;
  std::string peer;
  std::string challenge;
  Clock::time_point since;
  std::string in, out;
  bool proven = false;
  std::optional<wire::Sealer> sealer;
  std::optional<wire::Unsealer> unsealer;
};

struct Waiter {
  Conn* conn;
  std::vector<std::string> keys;
  std::optional<Clock::time_point> deadline;
};

std::string host_of(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

}  // namespace

std::string processes_store_key(const JobToken& token) {
  return detail::auth::hmac_hex(token.secret, "accelerate: the processes' store");
}

struct StoreServer::Impl {
  std::string key, name;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::thread thread;
  std::list<Conn> conns;
  std::list<Waiter> waiters;
  std::map<std::string, std::string> data;
  std::set<std::string> shown;
  int refused = 0;

  void serve();
  void accept_new();
  bool make_room();
  void read_from(Conn& c);
  void prove(Conn& c);
  void drop(Conn& c, const std::string& why);
  void handle(Conn& c, const wire::Frame& request);
  void answer(Conn& c, uint8_t status, std::vector<std::string> args = {});
  void settle_waiters(Clock::time_point now);
  void write_to(Conn& c);
};

StoreServer::StoreServer(int port, const std::string& key, const std::string& name) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.key = key;
  d.name = name;
  std::string error;
  d.listen_fd = listen_on_port(port, &error);
  if (d.listen_fd < 0) {
    throw LinkError("cannot serve the processes' store at --main_process_port " + std::to_string(port) + " (" + error +
                    "): another job on this port? Choose another with --main_process_port");
  }
  fcntl(d.listen_fd, F_SETFL, fcntl(d.listen_fd, F_GETFL) | O_NONBLOCK);
  if (pipe2(d.wake, O_CLOEXEC | O_NONBLOCK) != 0) throw LinkError("cannot make a pipe for the store's thread");
  d.thread = std::thread([&d] { d.serve(); });
}

int StoreServer::port() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(impl_->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

StoreServer::~StoreServer() {
  Impl& d = *impl_;
  (void)!write(d.wake[1], "q", 1);
  if (d.thread.joinable()) d.thread.join();
  for (auto& c : d.conns) close(c.fd);
  for (int fd : {d.listen_fd, d.wake[0], d.wake[1]}) {
    if (fd >= 0) close(fd);
  }
  if (d.refused > 0) {
    get_logger(d.name).info("the processes' store refused " + std::to_string(d.refused) +
                            " connection(s) that did not prove the job's store key (warnings above)");
  }
}

void StoreServer::Impl::serve() {
  for (;;) {
    std::vector<pollfd> fds{{wake[0], POLLIN, 0}, {listen_fd, POLLIN, 0}};
    for (auto& c : conns) fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    poll(fds.data(), fds.size(), 100);
    if (fds[0].revents != 0) return;
    if (fds[1].revents != 0) accept_new();
    size_t i = 2;
    for (auto& c : conns) {
      if (i < fds.size() && fds[i].fd == c.fd && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) read_from(c);
      if (c.fd >= 0 && !c.out.empty()) write_to(c);
      ++i;
    }
    const auto now = Clock::now();
    for (auto& c : conns) {
      if (c.fd >= 0 && !c.proven && now - c.since > kProveWithin) drop(c, "it proved nothing within 10 s");
    }
    settle_waiters(now);
    waiters.remove_if([](const Waiter& w) { return w.conn->fd < 0; });
    conns.remove_if([](const Conn& c) { return c.fd < 0; });
  }
}

void StoreServer::Impl::accept_new() {
  for (int n = 0; n < kAcceptsPerPass; ++n) {
    std::string peer;
    const int fd = accept_connection(listen_fd, &peer);
    if (fd < 0) return;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (!make_room()) {
      // Every waiting connection is younger than a second: a process among them may be
      // proving right now, so the newcomer is turned away (a process connects again).
      Conn late;
      late.fd = fd;
      late.peer = peer;
      drop(late, "more than " + std::to_string(kMaxUnproven) + " connections at once without a proof");
      continue;
    }
    Conn c;
    c.fd = fd;
    c.peer = peer;
    c.since = Clock::now();
    c.challenge = detail::auth::random_hex(wire::kNonceBytes);
    c.out = wire::challenge_line(c.challenge) + "\n";
    conns.push_back(std::move(c));
  }
}

// Room for one more connection without a proof: true when there is, or when the oldest
// waiting one, after a second to prove, was dropped for it.
bool StoreServer::Impl::make_room() {
  size_t unproven = 0;
  Conn* oldest = nullptr;
  for (auto& c : conns) {
    if (c.fd < 0 || c.proven) continue;
    ++unproven;
    if (oldest == nullptr) oldest = &c;  // the list is in arrival order
  }
  if (unproven < kMaxUnproven) return true;
  if (Clock::now() - oldest->since < kEvictAfter) return false;
  read_from(*oldest);  // a proof that has arrived is read first
  if (oldest->fd >= 0 && !oldest->proven) {
    drop(*oldest, "more than " + std::to_string(kMaxUnproven) + " connections at once without a proof");
  }
  return true;
}

void StoreServer::Impl::drop(Conn& c, const std::string& why) {
  if (c.fd < 0) return;
  close(c.fd);
  c.fd = -1;
  if (c.proven) {
    get_logger(name).warning("the processes' store dropped " + c.peer + ": " + why);
    return;
  }
  ++refused;
  if (shown.size() < kShownRefusals && shown.insert(host_of(c.peer) + " " + why).second) {
    get_logger(name).warning("the processes' store refused a connection from " + c.peer + ": " + why +
                             " (the same from this host again is only counted)");
  }
}

void StoreServer::Impl::read_from(Conn& c) {
  char buf[16384];
  for (size_t got = 0; got < kReadPerPass && c.fd >= 0;) {
    const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      // A process that ends closes its connection: only a stranger's close is news.
      if (!c.proven) return drop(c, "it closed the connection without a proof");
      close(c.fd);
      c.fd = -1;
      return;
    }
    got += static_cast<size_t>(n);
    if (!c.proven) {
      c.in.append(buf, static_cast<size_t>(n));
      prove(c);
      continue;
    }
    c.unsealer->feed(buf, static_cast<size_t>(n));
    while (auto frame = c.unsealer->next()) handle(c, *frame);
    if (c.unsealer->broken()) return drop(c, "it sent " + c.unsealer->why());
  }
}

// The first line must prove the key for this connection's challenge; what follows it in
// the same read already belongs to the sealed frames.
void StoreServer::Impl::prove(Conn& c) {
  const size_t nl = c.in.find('\n');
  if (nl == std::string::npos) {
    if (c.in.size() > wire::kMaxHandshakeLine) drop(c, "not a process of this job (a line over 256 bytes)");
    return;
  }
  const auto nonce = wire::check_proof(key, c.challenge, c.in.substr(0, nl));
  if (!nonce) {
    // Told, so that a process of another job says why it was refused (best effort: one line).
    const std::string refused = "refused\n";
    (void)!::send(c.fd, refused.data(), refused.size(), MSG_NOSIGNAL);
    return drop(c, "it did not prove the job's store key (a stranger, or a process of another job)");
  }
  c.proven = true;
  c.out += wire::ok_line(key, *nonce) + "\n";
  const std::string session = wire::session_key(key, c.challenge, *nonce);
  c.sealer.emplace(session, "s>c");
  c.unsealer.emplace(session, "c>s");
  const std::string rest = c.in.substr(nl + 1);
  c.in.clear();
  c.unsealer->feed(rest.data(), rest.size());
  while (auto frame = c.unsealer->next()) handle(c, *frame);
  if (c.unsealer->broken()) drop(c, "it sent " + c.unsealer->why());
}

void StoreServer::Impl::answer(Conn& c, uint8_t status, std::vector<std::string> args) {
  c.out += c.sealer->seal({status, std::move(args)});
}

void StoreServer::Impl::write_to(Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      close(c.fd);
      c.fd = -1;
      return;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
}

// LibTorch's TCPStore semantics, which Gloo and the runtime rely on (a get is a wait, then
// a read, on the client side).
void StoreServer::Impl::handle(Conn& c, const wire::Frame& r) {
  const auto& a = r.args;
  auto has = [this](const std::string& k) { return data.count(k) != 0; };
  if (r.code == wire::kSet && a.size() == 2) {
    data[a[0]] = a[1];
    return answer(c, wire::kOk);
  }
  if (r.code == wire::kCompareSet && a.size() == 3) {
    auto it = data.find(a[0]);
    if (it == data.end()) {
      if (a[1].empty()) data[a[0]] = a[2];
      return answer(c, wire::kOk, {a[1].empty() ? a[2] : a[1]});
    }
    if (it->second == a[1]) it->second = a[2];
    return answer(c, wire::kOk, {it->second});
  }
  if (r.code == wire::kGetNow && a.size() == 1) {
    if (!has(a[0])) return answer(c, wire::kMissing);
    return answer(c, wire::kOk, {data[a[0]]});
  }
  if (r.code == wire::kAdd && a.size() == 2) {
    try {
      long long now = 0;
      if (__builtin_add_overflow(has(a[0]) ? std::stoll(data[a[0]]) : 0LL, std::stoll(a[1]), &now)) {
        return answer(c, wire::kBadRequest);
      }
      data[a[0]] = std::to_string(now);
      return answer(c, wire::kOk, {data[a[0]]});
    } catch (const std::exception&) {
      return answer(c, wire::kBadRequest);
    }
  }
  if (r.code == wire::kDelete && a.size() == 1) return answer(c, wire::kOk, {data.erase(a[0]) ? "1" : "0"});
  if (r.code == wire::kCheck) {
    bool all = true;
    for (const auto& k : a) all = all && has(k);
    return answer(c, wire::kOk, {all ? "1" : "0"});
  }
  if (r.code == wire::kNumKeys) return answer(c, wire::kOk, {std::to_string(data.size())});
  if (r.code == wire::kWait && !a.empty()) {
    long long ms = 0;
    try {
      ms = std::stoll(a[0]);
    } catch (const std::exception&) {
      return answer(c, wire::kBadRequest);
    }
    Waiter w{&c, std::vector<std::string>(a.begin() + 1, a.end()), std::nullopt};
    if (ms > 0) w.deadline = Clock::now() + milliseconds(ms);
    waiters.push_back(std::move(w));
    return;  // answered by settle_waiters, now or later
  }
  answer(c, wire::kBadRequest);
}

void StoreServer::Impl::settle_waiters(Clock::time_point now) {
  for (auto it = waiters.begin(); it != waiters.end();) {
    bool ready = it->conn->fd >= 0;
    for (const auto& k : it->keys) ready = ready && data.count(k) != 0;
    if (ready) {
      answer(*it->conn, wire::kOk);
    } else if (it->conn->fd >= 0 && it->deadline && now >= *it->deadline) {
      answer(*it->conn, wire::kTimeout);
    } else if (it->conn->fd >= 0) {
      ++it;
      continue;
    }
    if (it->conn->fd >= 0) write_to(*it->conn);
    it = waiters.erase(it);
  }
}

}  // namespace accelerate::launcher
