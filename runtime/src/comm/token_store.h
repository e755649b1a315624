#pragma once
// The processes' store when the job has a token (docs/security.md): a c10d::Store whose
// server is machine 0's launcher (launcher/link/store_server.h) and whose every
// connection proves the job's store key (ACCELERATE_STORE_KEY, derived from the job token by
// the launcher); frames are sealed (core/store_wire.h). Used in place of LibTorch's
// TCPStore, which has no authentication: a stranger at MAIN_PORT could hold it up.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/store_wire.h"

namespace accelerate::detail {

class TokenStore : public c10d::Store {
 public:
  // Connects to host:port, retrying until `timeout`, and proves `key`; throws
  // DistributedError naming the endpoint when it cannot.
  TokenStore(const std::string& host, int port, const std::string& key, std::chrono::milliseconds timeout);
  ~TokenStore() override;
  TokenStore(const TokenStore&) = delete;
  TokenStore& operator=(const TokenStore&) = delete;

  using c10d::Store::set;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  using c10d::Store::compareSet;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  using Clock = std::chrono::steady_clock;
  void connect_and_prove(const std::string& host, int port, const std::string& key, Clock::time_point deadline);
  void start_session(const std::string& key, const std::string& challenge, const std::string& nonce);
  // The next handshake line; nullopt when the connection closed first.
  std::optional<std::string> read_line(Clock::time_point deadline);
  void drop_connection();
  void send_bytes(const std::string& bytes);
  // One request and its answer; `limit` is how long the answer may take (0: no limit).
  store_wire::Frame call(const store_wire::Frame& request, std::chrono::milliseconds limit);
  [[noreturn]] void fail(const std::string& what) const;
  const store_wire::Frame& expect(const store_wire::Frame& answer, uint8_t status, size_t args,
                                  const std::string& what);

  std::mutex mutex_;  // one request at a time, as TCPStore's client
  int fd_ = -1;
  std::string endpoint_;
  std::string pending_;  // bytes read past the handshake's lines
  std::optional<store_wire::Sealer> sealer_;
  std::optional<store_wire::Unsealer> unsealer_;
};

}  // namespace accelerate::detail
