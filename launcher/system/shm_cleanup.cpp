#include "system/shm_cleanup.h"

#include <sys/mman.h>
#include <unistd.h>

#include <accelerate/core/detail/env_names.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>

namespace accelerate::launcher {

std::string make_shm_prefix() {
  const char* base = std::getenv(env_names::kShmPrefix);
  std::ostringstream os;
  os << (base != nullptr && *base != '\0' ? base : "accelerate") << "-" << ::getpid() << "x" << std::hex
     << std::random_device()();
  return os.str();
}

int remove_shm_segments(const std::string& prefix) {
  if (prefix.empty()) return 0;
  int removed = 0;
  std::error_code ec;
  const std::string start = prefix + "-";
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(start, 0) == 0 && ::shm_unlink(("/" + name).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace accelerate::launcher
