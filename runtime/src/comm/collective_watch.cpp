// Divergence detection through the c10d store (see collective_watch.h).
#include "comm/collective_watch.h"

#include <chrono>
#include <thread>

namespace accelerate {
namespace detail {
namespace {

const char* const kWatchPrefix = "accelerate/collective/";
const std::string kAbortKey = std::string(kWatchPrefix) + "abort";
const std::string kIdle = "idle";
const std::string kAborted = "aborted";
const std::string kWaiting = "wait ";  // "wait <seq> <kind>"

std::string in_collective(int64_t rank, uint64_t seq, const std::string& kind) {
  return "process " + std::to_string(rank) + " is in '" + kind + "' (collective #" + std::to_string(seq) + ")";
}

bool parse_waiting(const std::string& value, uint64_t& seq, std::string& kind) {
  if (value.rfind(kWaiting, 0) != 0) return false;
  const size_t space = value.find(' ', kWaiting.size());
  if (space == std::string::npos) return false;
  try {
    seq = std::stoull(value.substr(kWaiting.size(), space - kWaiting.size()));
  } catch (const std::exception&) {
    return false;
  }
  kind = value.substr(space + 1);
  return true;
}

}  // namespace

CollectiveWatch::CollectiveWatch(c10::intrusive_ptr<c10d::Store> store, int64_t rank, int64_t world_size,
                                 std::chrono::milliseconds ack_window)
    : store_(std::move(store)), rank_(rank), world_size_(world_size), ack_window_(ack_window) {}

std::string CollectiveWatch::key(int64_t rank) const { return kWatchPrefix + std::to_string(rank); }

void CollectiveWatch::set(const std::string& k, const std::string& value) {
  store_->set(k, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string CollectiveWatch::get(const std::string& k) {
  const auto bytes = store_->get(k);
  return std::string(bytes.begin(), bytes.end());
}

void CollectiveWatch::announce() {
  std::lock_guard<std::mutex> lock(store_mutex_);
  // A store that outlives a job (an agent's, on restart) must not abort the next one.
  if (rank_ == 0 && store_->check({kAbortKey})) store_->deleteKey(kAbortKey);
  set(key(rank_), kIdle);
}

uint64_t CollectiveWatch::begin(const std::string& kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t seq = ++count_;
  Entry& e = recent_[seq % kRecent];
  e.seq = seq;
  e.kind = kind;  // reuses the entry's buffer: no allocation once warm
  return seq;
}

std::optional<std::string> CollectiveWatch::recent_kind(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry& e = recent_[seq % kRecent];
  if (e.seq != seq) return std::nullopt;
  return e.kind;
}

void CollectiveWatch::publish(uint64_t seq, const std::string& kind) {
  std::lock_guard<std::mutex> lock(store_mutex_);
  if (!store_ok_) return;
  try {
    set(key(rank_), kWaiting + std::to_string(seq) + " " + kind);
  } catch (const std::exception&) {
    store_ok_ = false;  // the wait goes on without the watch
  }
}

void CollectiveWatch::clear() {
  std::lock_guard<std::mutex> lock(store_mutex_);
  if (!store_ok_) return;
  try {
    set(key(rank_), kIdle);
  } catch (const std::exception&) {
    store_ok_ = false;
  }
}

// Compares what `peer` publishes with this process's own collectives. Only facts are
// compared ("collective #n had kind k"), so a stale or lagging peer never counts as diverged.
std::optional<std::string> CollectiveWatch::peer_mismatch(int64_t peer, uint64_t seq, const std::string& kind) {
  uint64_t peer_seq = 0;
  std::string peer_kind;
  if (!parse_waiting(get(key(peer)), peer_seq, peer_kind)) return std::nullopt;  // idle: busy elsewhere
  if (peer_seq == seq) {
    if (peer_kind == kind) return std::nullopt;  // the same collective: waiting for someone else
    // Lower rank first, so that every process that finds it writes the same message.
    const auto a = in_collective(rank_, seq, kind), b = in_collective(peer, peer_seq, peer_kind);
    return rank_ < peer ? a + " while " + b : b + " while " + a;
  }
  if (peer_seq > seq) return std::nullopt;  // ahead of us: the peer compares with its own history
  const auto mine = recent_kind(peer_seq);
  if (!mine || *mine == peer_kind) return std::nullopt;  // it lags in a collective we both called
  return in_collective(peer, peer_seq, peer_kind) + " while process " + std::to_string(rank_) + " called '" + *mine +
         "' as collective #" + std::to_string(peer_seq) + " and now waits in '" + kind + "' (collective #" +
         std::to_string(seq) + ")";
}

void CollectiveWatch::abort_with(const std::string& message) {
  set(kAbortKey, message);
  set(key(rank_), kAborted);
  const auto deadline = std::chrono::steady_clock::now() + ack_window_;
  while (std::chrono::steady_clock::now() < deadline) {
    bool someone_waiting = false;
    for (int64_t peer = 0; peer < world_size_ && !someone_waiting; ++peer) {
      if (peer != rank_) someone_waiting = get(key(peer)).rfind(kWaiting, 0) == 0;
    }
    if (!someone_waiting) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::optional<std::string> CollectiveWatch::find_divergence(uint64_t seq, const std::string& kind) {
  std::lock_guard<std::mutex> lock(store_mutex_);
  if (!store_ok_) return std::nullopt;
  try {
    if (store_->check({kAbortKey})) {
      auto message = get(kAbortKey);
      set(key(rank_), kAborted);  // tells the process that wrote it that we have read it
      return message;
    }
    for (int64_t peer = 0; peer < world_size_; ++peer) {
      if (peer == rank_) continue;
      if (auto message = peer_mismatch(peer, seq, kind)) {
        try {
          abort_with(*message);
        } catch (const std::exception&) {
          store_ok_ = false;  // this process still fails with the message
        }
        return message;
      }
    }
  } catch (const std::exception&) {
    store_ok_ = false;  // e.g. the store's host has exited: its connections tell the rest
  }
  return std::nullopt;
}

}  // namespace detail
}  // namespace accelerate
