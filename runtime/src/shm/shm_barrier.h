#pragma once
// The synchronisation of the processes of one host inside a shared-memory segment: a
// counting barrier whose waiters spin for a few microseconds, yield their core for up to a
// millisecond and then sleep on a futex (so that processes sharing cores never spin against
// each other for long), a shared abort flag with the reason, and the pids of the processes,
// so that a waiter notices a peer that has died instead of waiting for the whole timeout.

#include <accelerate/core/error.h>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

constexpr int kShmMaxLocal = 512;  // processes per host

// Lives at the start of the control segment; zero-initialised by the creator.
struct ShmControl {
  alignas(64) std::atomic<uint32_t> arrived;      // arrivals at barriers, over all barriers (wraps)
  alignas(64) std::atomic<uint32_t> generation;   // barriers completed (the futex word)
  std::atomic<uint32_t> sleepers;                 // waiters in FUTEX_WAIT
  alignas(64) std::atomic<uint32_t> abort_claim;  // the first process to abort writes the message
  std::atomic<uint32_t> aborted;                  // then sets this
  char abort_message[1024];
  alignas(64) std::atomic<int32_t> pids[kShmMaxLocal];  // 0: not mapped yet
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be lock-free atomics");

// A failure of a shared-memory collective on this host (dead peer, abort, timeout).
class ShmError : public Error {
 public:
  explicit ShmError(const std::string& message) : Error(ErrorCode::SharedMemory, message) {}
};

class ShmBarrier {
 public:
  // `ranks`: the global rank of each local process (for messages). `cancel` (may be null)
  // is polled while waiting: set it to make a stuck wait fail.
  ShmBarrier(ShmControl* control, std::vector<int64_t> ranks, int local_rank, const std::atomic<bool>* cancel)
      : c_(control),
        ranks_(std::move(ranks)),
        n_(static_cast<uint32_t>(ranks_.size())),
        me_(local_rank),
        cancel_(cancel) {}

  // Waits for every process of the host. Throws ShmError when a peer has died or aborted,
  // when `deadline` passes or when cancelled; `stage` names the wait in the message.
  void arrive_and_wait(std::chrono::steady_clock::time_point deadline, const char* stage);
  // Tells every process of the host that this one gives up (they fail at once with `why`).
  void abort(const std::string& why) noexcept;
  // Publishes this process's pid, by which the others tell whether it is still alive.
  void register_self();

 private:
  bool passed(uint32_t target) const;
  void sleep_until_changed(uint32_t seen, std::chrono::milliseconds slice);
  void check_peers(const char* stage) const;
  [[noreturn]] void fail_aborted() const;

  ShmControl* c_;
  std::vector<int64_t> ranks_;
  uint32_t n_;
  int me_;
  const std::atomic<bool>* cancel_;
  uint32_t count_ = 0;  // barriers this process has passed
};

}  // namespace detail
}  // namespace accelerate
