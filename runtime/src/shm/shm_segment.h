#pragma once
// One POSIX shared-memory segment (shm_open + mmap) shared by the processes of one host.
// The creator reserves its pages up front (posix_fallocate), so a /dev/shm that is too small
// fails here with a message saying how much is needed, instead of a SIGBUS in the middle of
// training. The name is removed as soon as every process has mapped it (unlink()): from
// then on no exit path, SIGKILL included, can leave it behind. Before that, the launcher
// removes /dev/shm/<ACCELERATE_SHM_PREFIX>* when the job ends.

#include <cstddef>
#include <memory>
#include <string>

namespace accelerate {
namespace detail {

class ShmSegment {
 public:
  // Creates a new segment of `bytes` (fails if the name exists). `purpose` goes into the
  // error messages ("gradient buckets of a model", ...).
  static std::shared_ptr<ShmSegment> create(const std::string& name, size_t bytes, const std::string& purpose);
  // Maps an existing segment created by another process of this host.
  static std::shared_ptr<ShmSegment> open(const std::string& name, size_t bytes);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // Removes the name (the mapping stays valid). The creator calls it once every process has
  // mapped the segment; it is also called from the destructor of the creator.
  void unlink();

 private:
  ShmSegment(std::string name, void* data, size_t size, bool owner)
      : name_(std::move(name)), data_(data), size_(size), owner_(owner) {}
  std::string name_;
  void* data_;
  size_t size_;
  bool owner_;
  bool linked_ = true;
};

// The text of the error for a /dev/shm without `needed` free bytes (tested on its own).
std::string shm_space_message(const std::string& purpose, size_t needed, size_t available, size_t total);

}  // namespace detail
}  // namespace accelerate
