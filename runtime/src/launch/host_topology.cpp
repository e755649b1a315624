// Host discovery through the store (see host_topology.h).
#include "launch/host_topology.h"

#include <sys/stat.h>
#include <unistd.h>

#include <accelerate/core/detail/env_names.h>

#include <cstdlib>
#include <fstream>
#include <map>

namespace accelerate {
namespace detail {
namespace {

const std::string kKey = "accelerate/shm/host/";
const std::string kOptedOut = "(shared memory off)";

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string file_id(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) return "-";
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(st.st_ino));
}

}  // namespace

std::string host_identity() {
  if (const char* id = std::getenv(env_names::kTestHostId); id != nullptr && *id != '\0') return id;
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  // Same kernel (boot id), same /dev/shm (a container may have its own), same pid namespace
  // (the liveness checks use pids), same host name.
  return first_line("/proc/sys/kernel/random/boot_id") + "|" + file_id("/dev/shm") + "|" +
         file_id("/proc/self/ns/pid") + "|" + name;
}

HostTopology discover_hosts(c10d::Store& store, int64_t rank, int64_t world_size, bool enabled) {
  const std::string mine = enabled ? host_identity() : kOptedOut;
  store.set(kKey + std::to_string(rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> ids;
  for (int64_t r = 0; r < world_size; ++r) {
    const auto bytes = store.get(kKey + std::to_string(r));
    ids.emplace_back(bytes.begin(), bytes.end());
  }
  HostTopology t;
  std::map<std::string, int> host_of;
  for (int64_t r = 0; r < world_size; ++r) {
    if (ids[r] == kOptedOut) t.enabled = false;
    const bool fresh = host_of.emplace(ids[r], static_cast<int>(host_of.size())).second;
    if (fresh) t.leaders.push_back(r);
    if (ids[r] == ids[rank]) t.local_ranks.push_back(r);
  }
  t.num_hosts = static_cast<int>(host_of.size());
  t.host_index = host_of.at(ids[rank]);
  for (size_t i = 0; i < t.local_ranks.size(); ++i) {
    if (t.local_ranks[i] == rank) t.local_rank = static_cast<int>(i);
  }
  return t;
}

}  // namespace detail
}  // namespace accelerate
