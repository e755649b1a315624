#pragma once
// TCP plumbing of the launchers' link (machine_link.h): resolving, listening, connecting
// with a deadline, and a connection that carries lines of text.

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "link/job_token.h"
#include "link/link_message.h"

namespace accelerate::launcher {

struct SocketAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text;  // numeric address
};

// The addresses of host:port; throws LinkError naming `what` (e.g. "--main_process_ip").
std::vector<SocketAddress> resolve_host(const std::string& host, int port, const std::string& what);

// True when one of `addresses` belongs to this machine (it can be bound here).
bool is_local(const std::vector<SocketAddress>& addresses);

// "lo 127.0.0.1, eth0 10.0.0.5": this machine's interfaces that are up, for messages.
std::string local_interfaces_text();

// A socket listening on every address of this machine (IPv6 with IPv4 mapped where the
// kernel has IPv6); -1 with `error` set otherwise.
int listen_on_port(int port, std::string* error);

// The next connection waiting on `listen_fd`, or -1 when none is; `peer` is set to its
// "address:port" (refused or dropped connections are logged with it).
int accept_connection(int listen_fd, std::string* peer);

// A connected, non-blocking socket, or -1 with `error` (an errno) when the connection was
// refused, failed or took longer than `timeout`.
int connect_within(const SocketAddress& to, std::chrono::milliseconds timeout, int* error);

// One end of a connection that carries lines. Not thread-safe: one thread uses it.
class LineConnection {
 public:
  explicit LineConnection(int fd);
  ~LineConnection();
  LineConnection(const LineConnection&) = delete;
  LineConnection& operator=(const LineConnection&) = delete;

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  // Sends one line (the newline is added); false (and closed) when the peer is gone.
  bool send(const std::string& line);
  // A launcher's messages are lines of a few hundred bytes; more than this in one call is a
  // flood, read on the next call.
  static constexpr size_t kMaxReceiveBytes = 64 * 1024;

  // Reads what is there (at most kMaxReceiveBytes) without blocking; complete lines are returned. `closed` is set
  // when the peer closed the connection or it failed (the connection is closed then).
  // A peer that sends a line longer than LineDecoder::kMaxLineBytes is closed likewise.
  std::vector<std::string> receive(bool* closed);
  void close();
  // True once the peer sent a line too long for a launcher (it is closed then).
  bool overflowed() const { return decoder_.overflowed(); }

  // From now on every line carries a MAC (HMAC-SHA256 with `key` over the direction and a
  // counter), and a received line whose MAC does not match closes the connection: after the
  // rendezvous nobody on the path can forge, alter, replay or reorder a launcher's message.
  // `sent_as` and `received_as` name the two directions ("0>1", "1>0").
  void seal(const JobToken& key, const std::string& sent_as, const std::string& received_as);
  // True once a received line failed its MAC (the connection is closed then).
  bool tampered() const { return tampered_; }
  // Gives back lines receive() returned that the caller did not use (those that came in the
  // same read as the one it waited for); the next receive() returns them first, checked
  // against the seal in force then.
  void unread(std::vector<std::string> lines);
  bool has_unread() const { return !unread_.empty(); }

  std::chrono::steady_clock::time_point last_heard;
  std::chrono::steady_clock::time_point last_sent;

 private:
  std::string with_mac(const std::string& line);
  bool strip_mac(std::string& line);

  int fd_;
  LineDecoder decoder_;
  std::optional<JobToken> key_;
  std::string sent_as_, received_as_;
  uint64_t sent_count_ = 0, received_count_ = 0;
  std::vector<std::string> unread_;
  bool tampered_ = false;
};

}  // namespace accelerate::launcher
