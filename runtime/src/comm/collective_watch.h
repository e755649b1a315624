#pragma once
// Finds processes that wait in different collectives (a process that left its training loop
// early waits in a barrier while the others wait in a gradient all-reduce): without it they
// would wait for the whole timeout (30 minutes by default).
//
// Every process numbers its collectives (1, 2, ...) and remembers the kind of the recent
// ones; that is all the fast path does. Only a wait that has lasted a while publishes
// "this process waits in collective #n of kind k" under its own key of the c10d store
// (the TCPStore has its own connections, so it answers while a collective hangs) and
// reads the other processes' keys. A correct program issues the same collectives in the
// same order everywhere, so two processes whose collective #n differ in kind have
// diverged: the one that sees it writes an abort key with the message, and every waiting
// process fails with it. A peer that is only slow (computing, loading data) publishes
// nothing and is never blamed.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace accelerate {
namespace detail {

class CollectiveWatch {
 public:
  // `ack_window`: how long the process that finds a divergence waits for the other waiting
  // processes to read it before it goes on (and perhaps exits, closing the connections they
  // wait on, which would hide the cause from them).
  CollectiveWatch(c10::intrusive_ptr<c10d::Store> store, int64_t rank, int64_t world_size,
                  std::chrono::milliseconds ack_window = std::chrono::seconds(2));

  // Writes this process's key ("idle"); called before the process group exists, so that a
  // waiting peer always finds every key.
  void announce();
  // Numbers the next collective and remembers its kind (the fast path: no store access).
  uint64_t begin(const std::string& kind);

  // The slow path, for a wait on collective `seq` that has lasted a while: publish it, look
  // for a divergence (the message, or nothing), and clear the key when the wait is over.
  void publish(uint64_t seq, const std::string& kind);
  std::optional<std::string> find_divergence(uint64_t seq, const std::string& kind);
  void clear();

 private:
  struct Entry {
    uint64_t seq = 0;
    std::string kind;
  };
  static constexpr size_t kRecent = 64;

  std::optional<std::string> recent_kind(uint64_t seq);
  std::optional<std::string> peer_mismatch(int64_t peer, uint64_t seq, const std::string& kind);
  void abort_with(const std::string& message);
  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);
  std::string key(int64_t rank) const;

  c10::intrusive_ptr<c10d::Store> store_;
  const int64_t rank_, world_size_;
  const std::chrono::milliseconds ack_window_;
  std::mutex mutex_;  // begin() runs on the caller's or an autograd thread
  uint64_t count_ = 0;
  std::array<Entry, kRecent> recent_;
  std::mutex store_mutex_;
  bool store_ok_ = true;  // false once the store has failed (its host has gone)
};

}  // namespace detail
}  // namespace accelerate
