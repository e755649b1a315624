// POSIX shared-memory segments (see shm_segment.h).
#include "shm/shm_segment.h"

#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/error.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace accelerate {
namespace detail {
namespace {

constexpr const char* kShmDir = "/dev/shm";

std::string mib(size_t bytes) {
  std::ostringstream os;
  os.precision(bytes < (size_t(10) << 20) ? 2 : 0);
  os << std::fixed << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return os.str();
}

[[noreturn]] void fail(const std::string& what, const std::string& name, int err) {
  throw DistributedError("accelerate: shared memory: " + what + " " + std::string(kShmDir) + name + ": " +
                         std::strerror(err) + ". Set " + env_names::kShm +
                         "=0 to communicate through Gloo (TCP) instead; see docs/shared-memory.md");
}

void* map(int fd, size_t bytes, const std::string& name) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (data == MAP_FAILED) fail("cannot map", name, err);
  return data;
}

}  // namespace

std::string shm_space_message(const std::string& purpose, size_t needed, size_t available, size_t total) {
  std::ostringstream os;
  os << "accelerate: shared memory: " << kShmDir << " is too small for the " << purpose << ": it needs " << mib(needed)
     << ", but only " << mib(available) << " of its " << mib(total)
     << " are free. Grow it (in Docker: `docker run --shm-size=" << ((needed + total - available) >> 30) + 1
     << "g ...`; elsewhere, as root: `mount -o remount,size=" << ((needed + total - available) >> 30) + 1 << "G "
     << kShmDir << "`), free it (leftover files of other jobs), or set " << env_names::kShm << "=0 to "
     << "communicate through Gloo (TCP) instead (slower on one machine); see docs/shared-memory.md";
  return os.str();
}

std::shared_ptr<ShmSegment> ShmSegment::create(const std::string& name, size_t bytes, const std::string& purpose) {
  struct statvfs fs {};
  if (::statvfs(kShmDir, &fs) == 0) {
    const size_t available = static_cast<size_t>(fs.f_bavail) * fs.f_frsize;
    const size_t total = static_cast<size_t>(fs.f_blocks) * fs.f_frsize;
    if (available < bytes) throw DistributedError(shm_space_message(purpose, bytes, available, total));
  }
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail("cannot create", name, errno);
  // Reserve the pages now: tmpfs hands them out on first touch otherwise, and running out
  // then is a SIGBUS in the middle of a collective.
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    if (err == ENOSPC) {
      struct statvfs now {};
      ::statvfs(kShmDir, &now);
      throw DistributedError(shm_space_message(purpose, bytes, static_cast<size_t>(now.f_bavail) * now.f_frsize,
                                               static_cast<size_t>(now.f_blocks) * now.f_frsize));
    }
    fail("cannot reserve " + mib(bytes) + " for", name, err);
  }
  void* data = nullptr;
  try {
    data = map(fd, bytes, name);
  } catch (...) {
    ::shm_unlink(name.c_str());
    throw;
  }
  return std::shared_ptr<ShmSegment>(new ShmSegment(name, data, bytes, /*owner=*/true));
}

std::shared_ptr<ShmSegment> ShmSegment::open(const std::string& name, size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fail("cannot open", name, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    ::close(fd);
    throw DistributedError("accelerate: shared memory: " + std::string(kShmDir) + name + " is smaller than " +
                           mib(bytes) + ": it is not this job's segment (a name clash?)");
  }
  return std::shared_ptr<ShmSegment>(new ShmSegment(name, map(fd, bytes, name), bytes, /*owner=*/false));
}

void ShmSegment::unlink() {
  if (owner_ && linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

ShmSegment::~ShmSegment() {
  unlink();
  ::munmap(data_, size_);
}

}  // namespace detail
}  // namespace accelerate
