#pragma once
// The FSDP unit buffers that FULL_SHARD frees between uses, kept for the next gather instead
// of going back to the system. Without it every gather of a large unit gets fresh pages from
// the kernel (glibc serves big blocks with mmap) and pays for faulting and zeroing them,
// twice per unit and step; with it the next unit of the same size reuses them.
//
// A buffer is only reused for a request of exactly its size on its device (units of a model
// are mostly equal: its repeated layers). The pool holds at most `limit` bytes (the
// ShardedModel sets it to its largest unit: FULL_SHARD gathers one unit at a time and does
// not prefetch, so one idle buffer is what the next gather can use) and, on a miss, drops
// the idle buffers of that device before the caller allocates, so that idle and fresh
// buffers never add up to more than a gather needed without the pool. Thread-safe: gathers
// and frees also come from autograd's threads.
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace accelerate {
namespace detail {

class UnitBufferPool {
 public:
  explicit UnitBufferPool(size_t limit_bytes = 0) : limit_(limit_bytes) {}
  UnitBufferPool(const UnitBufferPool&) = delete;
  UnitBufferPool& operator=(const UnitBufferPool&) = delete;

  // Drops what no longer fits under the new limit.
  void set_limit(size_t bytes);
  // Frees every idle buffer (the limit stays).
  void clear();
  // An idle buffer of exactly `nbytes` on `device`, or a null DataPtr (then allocate one).
  at::DataPtr take(c10::Device device, size_t nbytes);
  // Keeps `buffer` (of `nbytes`) for a later take if it fits under the limit; frees it otherwise.
  void give(at::DataPtr buffer, size_t nbytes);
  size_t held_bytes() const;
  size_t held_buffers() const;

 private:
  struct Idle {
    at::DataPtr buffer;
    size_t nbytes = 0;
  };
  // Removes entries from the back until the held bytes are at most `bytes`; returns them so
  // that they are freed outside the lock.
  std::vector<Idle> trim_locked(size_t bytes);

  mutable std::mutex mutex_;
  std::vector<Idle> idle_;  // most recently given last
  size_t limit_ = 0;
  size_t held_ = 0;
};

}  // namespace detail
}  // namespace accelerate
