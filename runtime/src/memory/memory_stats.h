#pragma once
// The runtime's side of counted memory (accelerate/memory.h): what the Accelerator tells
// the counter about the process and the shared memory it maps.

#include <cstdint>

namespace accelerate {
namespace detail {
struct ProcessState;

namespace memory_stats {

// Throws LaunchEnvError for a malformed ACCELERATE_MEMORY_STATS. The library reads it when it
// is loaded, before main(), where it cannot throw: a bad value turns counting off there, and
// the Accelerator's constructor calls this before the rendezvous.
void check_environment();
// Records the process's rank for the line printed at exit and takes a sample of the shared
// memory (below). No-op when counting is off.
void on_accelerator(const ProcessState& ps) noexcept;
// Re-reads this process's share of the runtime's shared-memory segments and counts the
// difference. The runtime maps segments only while an Accelerator is constructed or a
// model prepared, so a sample after each of those keeps the count exact. No-op when off.
void sample_shared_memory(const ProcessState& ps) noexcept;

// Takes a sample when it goes out of scope, whichever way the scope is left.
class SharedMemorySample {
 public:
  explicit SharedMemorySample(const ProcessState& ps) : ps_(ps) {}
  SharedMemorySample(const SharedMemorySample&) = delete;
  SharedMemorySample& operator=(const SharedMemorySample&) = delete;
  ~SharedMemorySample() { sample_shared_memory(ps_); }

 private:
  const ProcessState& ps_;
};

}  // namespace memory_stats
}  // namespace detail
}  // namespace accelerate
