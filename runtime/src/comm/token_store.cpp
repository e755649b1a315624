#include "comm/token_store.h"

#include <accelerate/core/error.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/message_auth.h"

namespace accelerate::detail {
namespace {

using store_wire::Frame;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string text_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// What a request waits beyond the store's own timeout before it gives up on the answer.
constexpr milliseconds kTripAllowance{5000};

int poll_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 1000)));
}

// A connection to `a` within `limit` (a blocking connect() would wait for the kernel's SYN
// timeout, minutes past the rendezvous deadline); -1 with `error` otherwise.
int connect_within(const addrinfo* a, milliseconds limit, int* error) {
  const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
    *error = errno;
    close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int so_error = ETIMEDOUT;
  socklen_t len = sizeof(so_error);
  if (poll(&p, 1, static_cast<int>(limit.count())) == 1) getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) {
    *error = so_error;
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// One connection attempt to each address of host:port; -1 (errno in `error`) when none answers.
int connect_once(const std::string& host, int port, Clock::time_point deadline, int* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    *error = EHOSTUNREACH;
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    fd = connect_within(a, std::clamp(left, milliseconds(1), milliseconds(2000)), error);
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

}  // namespace

TokenStore::TokenStore(const std::string& host, int port, const std::string& key, milliseconds timeout)
    : c10d::Store(timeout), endpoint_(host + ":" + std::to_string(port)) {
  try {
    connect_and_prove(host, port, key, Clock::now() + timeout);
  } catch (...) {
    // A constructor that throws runs no destructor: the socket of the connection given up
    // on would stay open for the rest of the process.
    drop_connection();
    throw;
  }
}

TokenStore::~TokenStore() { drop_connection(); }

void TokenStore::drop_connection() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  pending_.clear();
}

void TokenStore::fail(const std::string& what) const {
  throw DistributedError("the job's store at " + endpoint_ + " (served by machine 0's launcher): " + what);
}

// Connects and proves, again with a fresh nonce whenever the connection is refused or closed
// before the proofs are through (the store is not up yet, or it dropped this connection
// among many waiting ones), until `deadline`. A refused key or a store that cannot prove the
// key ends it at once.
void TokenStore::connect_and_prove(const std::string& host, int port, const std::string& key,
                                   Clock::time_point deadline) {
  for (std::string why;; std::this_thread::sleep_for(milliseconds(100))) {
    drop_connection();
    if (Clock::now() >= deadline) fail(why.empty() ? "no answer" : why);
    int error = 0;
    fd_ = connect_once(host, port, deadline, &error);
    if (fd_ < 0) {
      why = std::string("cannot connect: ") + std::strerror(error);
      continue;
    }
    const auto first = read_line(deadline);
    if (!first) {
      why = "it closed the connection before its challenge";
      continue;
    }
    const auto challenge = store_wire::parse_challenge(*first);
    if (!challenge) fail("what answers there is not this job's store (no challenge): another job on this port?");
    const std::string nonce = auth::random_hex(store_wire::kNonceBytes);
    send_bytes(store_wire::proof_line(key, *challenge, nonce) + "\n");
    const auto answer = read_line(deadline);
    if (!answer) {
      why = "it closed the connection during the handshake";
      continue;
    }
    if (!store_wire::check_ok(key, nonce, *answer)) {
      fail(
          "it refused this process's store key, or did not prove that it holds the job's: another job on this "
          "port, or a launcher with another job token?");
    }
    start_session(key, *challenge, nonce);
    return;
  }
}

void TokenStore::start_session(const std::string& key, const std::string& challenge, const std::string& nonce) {
  const std::string session = store_wire::session_key(key, challenge, nonce);
  sealer_.emplace(session, "c>s");
  unsealer_.emplace(session, "s>c");
  if (!pending_.empty()) unsealer_->feed(pending_.data(), pending_.size());
  pending_.clear();
}

std::optional<std::string> TokenStore::read_line(Clock::time_point deadline) {
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (pending_.size() > store_wire::kMaxHandshakeLine) return std::string();
    pollfd p{fd_, POLLIN, 0};
    if (Clock::now() >= deadline) fail("no answer during the handshake");
    if (poll(&p, 1, poll_ms(deadline)) <= 0) continue;
    char buf[512];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno != EINTR)) return std::nullopt;
    if (n > 0) pending_.append(buf, static_cast<size_t>(n));
  }
}

void TokenStore::send_bytes(const std::string& bytes) {
  if (fd_ < 0) fail("its connection was closed after an earlier failure");
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(std::string("the connection failed: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

Frame TokenStore::call(const Frame& request, milliseconds limit) {
  send_bytes(sealer_->seal(request));
  // The server answers a wait when its keys exist or its own timeout passed; a little more
  // here covers the trip.
  const bool forever = limit == milliseconds::zero();
  const milliseconds waited = forever ? milliseconds(0) : limit + kTripAllowance;
  const auto deadline = Clock::now() + waited;
  for (;;) {
    if (auto frame = unsealer_->next()) return *frame;
    if (unsealer_->broken()) fail("it sent " + unsealer_->why() + " (altered on the way?)");
    if (!forever && Clock::now() >= deadline) {
      // A late answer would be read as the next request's: this connection is done.
      drop_connection();
      fail("no answer within " + std::to_string(waited.count()) + " ms (the store timeout, " +
           std::to_string(limit.count()) + " ms, and " + std::to_string(kTripAllowance.count()) + " ms for the trip)");
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, forever ? 1000 : poll_ms(deadline)) <= 0) continue;
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno != EINTR)) fail("it closed the connection (machine 0's launcher ended?)");
    if (n > 0) unsealer_->feed(buf, static_cast<size_t>(n));
  }
}

// The answer of `what` with `status` and `args` arguments, or a failure: the client and the
// server are in step only while every answer is the expected kind.
const Frame& TokenStore::expect(const Frame& answer, uint8_t status, size_t args, const std::string& what) {
  if (answer.code != status || answer.args.size() != args) {
    drop_connection();
    fail("an unexpected answer to " + what + " (status " + std::to_string(answer.code) + ")");
  }
  return answer;
}

void TokenStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  expect(call({store_wire::kSet, {key, text_of(value)}}, timeout_), store_wire::kOk, 0, "set");
}

std::vector<uint8_t> TokenStore::compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                            const std::vector<uint8_t>& desired) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Frame answer = call({store_wire::kCompareSet, {key, text_of(expected), text_of(desired)}}, timeout_);
  return bytes_of(expect(answer, store_wire::kOk, 1, "compareSet").args[0]);
}

std::vector<uint8_t> TokenStore::get(const std::string& key) {
  wait({key});
  std::lock_guard<std::mutex> lock(mutex_);
  const Frame answer = call({store_wire::kGetNow, {key}}, timeout_);
  if (answer.code == store_wire::kMissing) fail("the key '" + key + "' was deleted meanwhile");
  return bytes_of(expect(answer, store_wire::kOk, 1, "get").args[0]);
}

int64_t TokenStore::add(const std::string& key, int64_t value) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Frame answer = call({store_wire::kAdd, {key, std::to_string(value)}}, timeout_);
  if (answer.code == store_wire::kBadRequest) fail("the key '" + key + "' does not hold a number, or it overflowed");
  return std::stoll(expect(answer, store_wire::kOk, 1, "add").args[0]);
}

bool TokenStore::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return expect(call({store_wire::kDelete, {key}}, timeout_), store_wire::kOk, 1, "deleteKey").args[0] == "1";
}

bool TokenStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  return expect(call({store_wire::kCheck, keys}, timeout_), store_wire::kOk, 1, "check").args[0] == "1";
}

int64_t TokenStore::getNumKeys() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::stoll(expect(call({store_wire::kNumKeys, {}}, timeout_), store_wire::kOk, 1, "getNumKeys").args[0]);
}

void TokenStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TokenStore::wait(const std::vector<std::string>& keys, const milliseconds& timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> args{std::to_string(timeout.count())};
  args.insert(args.end(), keys.begin(), keys.end());
  const Frame answer = call({store_wire::kWait, args}, timeout);
  if (answer.code == store_wire::kTimeout && answer.args.empty()) {
    throw DistributedError("Socket Timeout: waited " + std::to_string(timeout.count()) + " ms for " +
                           std::to_string(keys.size()) + " key(s) in the job's store at " + endpoint_ +
                           (keys.empty() ? "" : " (first: '" + keys[0] + "')"));
  }
  expect(answer, store_wire::kOk, 0, "wait");
}

}  // namespace accelerate::detail
