// Idle FSDP unit buffers (see unit_buffer_pool.h).
#include "fsdp/unit_buffer_pool.h"

#include <utility>

namespace accelerate {
namespace detail {

std::vector<UnitBufferPool::Idle> UnitBufferPool::trim_locked(size_t bytes) {
  std::vector<Idle> dropped;
  // The oldest first: the most recent buffer is the likeliest to be asked for again.
  while (held_ > bytes && !idle_.empty()) {
    held_ -= idle_.front().nbytes;
    dropped.push_back(std::move(idle_.front()));
    idle_.erase(idle_.begin());
  }
  return dropped;
}

void UnitBufferPool::set_limit(size_t bytes) {
  std::vector<Idle> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    dropped = trim_locked(limit_);
  }
}

void UnitBufferPool::clear() {
  std::vector<Idle> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = trim_locked(0);
  }
}

at::DataPtr UnitBufferPool::take(c10::Device device, size_t nbytes) {
  std::vector<Idle> dropped;  // freed after the lock is released (munmap, a device free)
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t k = idle_.size(); k-- > 0;) {
    if (idle_[k].nbytes == nbytes && idle_[k].buffer.device() == device) {
      at::DataPtr found = std::move(idle_[k].buffer);
      held_ -= nbytes;
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(k));
      return found;
    }
  }
  // A miss: the caller allocates. The idle buffers of this device would sit beside it unused.
  for (size_t k = idle_.size(); k-- > 0;) {
    if (idle_[k].buffer.device() != device) continue;
    held_ -= idle_[k].nbytes;
    dropped.push_back(std::move(idle_[k]));
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return at::DataPtr(nullptr, device);
}

void UnitBufferPool::give(at::DataPtr buffer, size_t nbytes) {
  if (!buffer.get() || nbytes == 0) return;
  std::vector<Idle> dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  if (nbytes > limit_) {
    dropped.push_back({std::move(buffer), nbytes});
    return;
  }
  idle_.push_back({std::move(buffer), nbytes});
  held_ += nbytes;
  dropped = trim_locked(limit_);
}

size_t UnitBufferPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

size_t UnitBufferPool::held_buffers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_.size();
}

}  // namespace detail
}  // namespace accelerate
