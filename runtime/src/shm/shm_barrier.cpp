// The barrier of the shared-memory collectives (see shm_barrier.h).
#include "shm/shm_barrier.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <thread>

namespace accelerate {
namespace detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Spinning first pays when the peers are running on other cores and arrive within
// microseconds. Then the waiter yields its core for up to kYieldFor: sched_yield() hands the
// core to any thread that has work, and otherwise returns at once, so the core stays awake.
// Sleeping at once cost a 2-process step on a 2-core VM 8-10 %: a halted virtual CPU is slow
// to wake, and the processes meet at a barrier several times a step (2-process MLP step /
// independent pair 1.19 -> 1.09 with 1 ms of yielding; with four processes on the two cores,
// where yielding matters, 0.95 of the old step: results/2026-12-01-barrier-yield/). Beyond
// that the waiter sleeps, leaving its core to the process it waits for.
constexpr std::chrono::microseconds kSpin{30};
constexpr std::chrono::microseconds kYieldFor{1000};
constexpr milliseconds kSleepSlice{100};  // also how often dead peers are looked for

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Shared (not FUTEX_PRIVATE) futexes: the word is in memory mapped by several processes.
void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, milliseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000), static_cast<long>((timeout.count() % 1000) * 1000000)};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// A pid that no longer runs a process: gone, or a zombie its parent has not reaped yet.
bool has_exited(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');  // the command name may contain spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  const char state = line[paren + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

void ShmBarrier::register_self() { c_->pids[me_].store(static_cast<int32_t>(::getpid()), std::memory_order_release); }

bool ShmBarrier::passed(uint32_t target) const {
  return static_cast<int32_t>(c_->generation.load(std::memory_order_acquire) - target) >= 0;
}

void ShmBarrier::sleep_until_changed(uint32_t seen, milliseconds slice) {
  c_->sleepers.fetch_add(1, std::memory_order_seq_cst);
  // Checked again after announcing the sleep: a waker that completed the barrier in between
  // either sees the sleeper or is seen here (both sides are sequentially consistent).
  if (c_->generation.load(std::memory_order_seq_cst) == seen && !c_->aborted.load(std::memory_order_acquire)) {
    futex_wait(&c_->generation, seen, std::max(slice, milliseconds(1)));
  }
  c_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void ShmBarrier::check_peers(const char* stage) const {
  for (uint32_t i = 0; i < n_; ++i) {
    const pid_t pid = c_->pids[i].load(std::memory_order_acquire);
    if (static_cast<int>(i) == me_ || pid <= 0) continue;
    if (has_exited(pid)) {
      throw ShmError("process " + std::to_string(ranks_[i]) + " (pid " + std::to_string(pid) +
                     ", on this host) has exited while this process waited for it (" + stage +
                     " of the shared-memory all-reduce)");
    }
  }
}

void ShmBarrier::fail_aborted() const {
  throw ShmError(std::string(c_->abort_message, strnlen(c_->abort_message, sizeof(c_->abort_message))));
}

void ShmBarrier::arrive_and_wait(Clock::time_point deadline, const char* stage) {
  const uint32_t k = ++count_;
  if (c_->aborted.load(std::memory_order_acquire)) fail_aborted();
  const uint32_t prev = c_->arrived.fetch_add(1, std::memory_order_acq_rel);
  if (prev + 1 == k * n_) {  // the last to arrive (modulo 2^32, like the counters)
    c_->generation.store(k, std::memory_order_seq_cst);
    if (c_->sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(&c_->generation);
    return;
  }
  const auto spin_until = Clock::now() + kSpin;
  for (int i = 1; !passed(k); ++i) {
    if ((i & 63) == 0 && Clock::now() >= spin_until) break;
    cpu_relax();
  }
  // The clock is read at every turn: with other threads runnable, one yield can last their
  // whole time slice.
  const auto yield_until = Clock::now() + kYieldFor;
  while (!passed(k) && Clock::now() < yield_until) sched_yield();
  auto next_check = Clock::now() + kSleepSlice;
  for (;;) {
    const uint32_t seen = c_->generation.load(std::memory_order_acquire);
    if (static_cast<int32_t>(seen - k) >= 0) return;
    if (c_->aborted.load(std::memory_order_acquire)) fail_aborted();
    if (cancel_ != nullptr && cancel_->load()) throw ShmError("this process is shutting down");
    const auto now = Clock::now();
    if (now >= deadline) {
      throw ShmError(std::string("a process of this host did not reach the shared-memory all-reduce (") + stage +
                     ") within the timeout");
    }
    if (now >= next_check) {
      check_peers(stage);
      next_check = now + kSleepSlice;
    }
    const auto left = std::chrono::duration_cast<milliseconds>(std::min(deadline, next_check) - now);
    sleep_until_changed(seen, std::min(left + milliseconds(1), kSleepSlice));
  }
}

void ShmBarrier::abort(const std::string& why) noexcept {
  uint32_t expected = 0;
  if (c_->abort_claim.compare_exchange_strong(expected, 1)) {
    const std::string text = "process " + std::to_string(ranks_[me_]) + " gave up: " + why;
    const size_t n = std::min(text.size(), sizeof(c_->abort_message) - 1);
    std::memcpy(c_->abort_message, text.data(), n);
    c_->abort_message[n] = '\0';
    c_->aborted.store(1, std::memory_order_release);
  }
  futex_wake_all(&c_->generation);  // sleepers wake and read the flag
}

}  // namespace detail
}  // namespace accelerate
