#include "link/link_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errors.h"
#include "core/socket_address.h"

namespace accelerate::launcher {

namespace {

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

std::vector<SocketAddress> resolve_host(const std::string& host, int port, const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    throw LinkError(what + " " + host + " does not resolve on this machine (" + gai_strerror(rc) +
                    "): give the address of machine 0 (where --machine_rank 0 runs), or a name that resolves here");
  }
  std::vector<SocketAddress> out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    SocketAddress s;
    std::memcpy(&s.addr, a->ai_addr, a->ai_addrlen);
    s.len = a->ai_addrlen;
    s.text = detail::numeric_address(a->ai_addr);
    out.push_back(s);
  }
  freeaddrinfo(found);
  return out;
}

bool is_local(const std::vector<SocketAddress>& addresses) {
  for (const auto& a : addresses) {
    const int fd = socket(a.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    SocketAddress any_port = a;
    if (a.addr.ss_family == AF_INET)
      reinterpret_cast<sockaddr_in*>(&any_port.addr)->sin_port = 0;
    else
      reinterpret_cast<sockaddr_in6*>(&any_port.addr)->sin6_port = 0;
    const bool bound = bind(fd, reinterpret_cast<const sockaddr*>(&any_port.addr), any_port.len) == 0;
    ::close(fd);
    if (bound) return true;
  }
  return false;
}

std::string local_interfaces_text() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "unknown";
  std::string out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP)) continue;
    if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) continue;
    const std::string text = detail::numeric_address(i->ifa_addr);
    if (text.rfind("fe80:", 0) == 0) continue;  // link-local: not a rendezvous address
    out += (out.empty() ? "" : ", ") + std::string(i->ifa_name) + " " + text;
  }
  freeifaddrs(list);
  return out.empty() ? "none" : out;
}

int listen_on_port(int port, std::string* error) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool v6 = fd >= 0;
  if (!v6) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::strerror(errno);
    return -1;
  }
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || listen(fd, 64) != 0) {
    *error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  set_nonblocking(fd);
  return fd;
}

int connect_within(const SocketAddress& to, std::chrono::milliseconds timeout, int* error) {
  const int fd = socket(to.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to.addr), to.len) != 0) {
    if (errno != EINPROGRESS) {
      *error = errno;
      ::close(fd);
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    const int ready = poll(&p, 1, static_cast<int>(timeout.count()));
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (ready <= 0)
      so_error = ETIMEDOUT;
    else
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      *error = so_error;
      ::close(fd);
      return -1;
    }
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int accept_connection(int listen_fd, std::string* peer) {
  sockaddr_storage from{};
  socklen_t len = sizeof(from);
  const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC);
  if (fd >= 0) {
    const auto* sa = reinterpret_cast<const sockaddr*>(&from);
    const int port = ntohs(from.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port
                                                      : reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
    std::string address = detail::numeric_address(sa);
    // An IPv4 peer on the dual-stack listener shows as ::ffff:10.0.0.2: print it as IPv4.
    if (address.rfind("::ffff:", 0) == 0 && address.find('.') != std::string::npos) address = address.substr(7);
    *peer = address + ":" + std::to_string(port);
  }
  return fd;
}

LineConnection::LineConnection(int fd) : fd_(fd) {
  if (fd_ >= 0) {
    set_nonblocking(fd_);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  last_heard = last_sent = std::chrono::steady_clock::now();
}

LineConnection::~LineConnection() { close(); }

void LineConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void LineConnection::seal(const JobToken& key, const std::string& sent_as, const std::string& received_as) {
  key_ = key;
  sent_as_ = sent_as;
  received_as_ = received_as;
}

std::string LineConnection::with_mac(const std::string& line) {
  if (!key_) return line;
  const std::string mac = prove(*key_, sent_as_ + " " + std::to_string(sent_count_++) + " " + line);
  return line + " mac=" + mac;
}

// Removes the MAC from `line`; false when it is missing or wrong (altered, forged, replayed or
// out of order: the counter is part of what it covers).
bool LineConnection::strip_mac(std::string& line) {
  if (!key_) return true;
  const size_t at = line.rfind(" mac=");
  if (at == std::string::npos) return false;
  const std::string body = line.substr(0, at), mac = line.substr(at + 5);
  if (!proof_matches(*key_, received_as_ + " " + std::to_string(received_count_) + " " + body, mac)) return false;
  ++received_count_;
  line = body;
  return true;
}

bool LineConnection::send(const std::string& line) {
  if (fd_ < 0) return false;
  const std::string data = with_mac(line) + "\n";
  size_t done = 0;
  // Lines are short and the peer reads all the time: a full buffer means a stuck peer,
  // which the heartbeat timeout handles; waiting a little here is enough.
  for (int spins = 0; done < data.size() && spins < 100; ++spins) {
    const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      poll(&p, 1, 10);
      continue;
    }
    close();
    return false;
  }
  last_sent = std::chrono::steady_clock::now();
  // Half a line on the wire would be glued to the next one (and fail its MAC): a peer that
  // takes no more is treated as gone.
  if (done != data.size()) close();
  return done == data.size();
}

void LineConnection::unread(std::vector<std::string> lines) {
  lines.insert(lines.end(), unread_.begin(), unread_.end());
  unread_ = std::move(lines);
}

std::vector<std::string> LineConnection::receive(bool* closed) {
  *closed = false;
  std::vector<std::string> lines;
  for (auto& line : unread_) {
    if (tampered_) break;
    tampered_ = !strip_mac(line);
    if (!tampered_) lines.push_back(std::move(line));
  }
  unread_.clear();
  if (tampered_) {
    *closed = true;
    close();
    return lines;
  }
  if (fd_ < 0) {
    *closed = true;
    return lines;
  }
  char buf[4096];
  // At most kMaxReceiveBytes a call, then back to the caller's poll: a peer sending faster
  // than this side splits lines (a stream of "\n" makes a string per byte) would otherwise
  // keep this loop, and its memory, growing (issue 32's review).
  for (size_t got = 0; got < kMaxReceiveBytes;) {
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
      for (auto& line : decoder_.feed(buf, static_cast<size_t>(n))) {
        if (tampered_) break;
        tampered_ = !strip_mac(line);
        if (!tampered_) lines.push_back(std::move(line));
      }
      if (tampered_) {
        *closed = true;  // what follows an altered line cannot be trusted either
        break;
      }
      last_heard = std::chrono::steady_clock::now();
      if (!decoder_.overflowed()) continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    *closed = true;  // 0: orderly close; < 0: reset or failure; a line too long (LineDecoder)
    break;
  }
  if (*closed) close();
  return lines;
}

}  // namespace accelerate::launcher
