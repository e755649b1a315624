// Counted memory (accelerate/memory.h): a wrapper of LibTorch's CPU allocator that counts
// the bytes of every live storage, plus this process's share of the runtime's shared memory.
#include <accelerate/memory/memory.h>

#include <accelerate/comm/detail/process_state.h>
#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/error.h>
#include <accelerate/launch/detail/launch_settings.h>
#include <accelerate/log/logging.h>

#include "core/torch_compat_allocator.h"
#include "memory/memory_stats.h"
#include "shm/shm_comm.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>

namespace accelerate {
namespace {

constexpr const char* kVariable = env_names::kMemoryStats;

// On, off, or malformed (nullopt); unset or empty is off. The same words as ACCELERATE_SHM.
std::optional<bool> requested() {
  const char* v = std::getenv(kVariable);
  if (v == nullptr || *v == '\0') return false;
  return detail::env_bool(v);  // the contract's one reading (launch_settings.h)
}

// The counts. Leaked on purpose, like everything below: storages freed by static
// destructors after main() still reach them.
struct Counts {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> shared{0};  // the part of `current` that is shared memory
  std::atomic<int64_t> rank{-1};   // of the process, once an Accelerator exists
  std::atomic<int64_t> local{1};   // processes of this host, once an Accelerator exists
};
Counts& counts() {
  static Counts* c = new Counts();
  return *c;
}

void add(int64_t delta) {
  Counts& c = counts();
  const int64_t now = c.current.fetch_add(delta) + delta;
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
}

// Each live allocation by its data pointer: the DataPtr of the allocator underneath (which
// frees it) and its size. Keying by data pointer keeps the handed-out DataPtr "simple"
// (context == data), as LibTorch's own CPU allocator's are: code that takes the raw
// pointer (raw_allocate / raw_deallocate) keeps working.
struct Live {
  c10::DataPtr inner;
  size_t nbytes = 0;
};
struct Table {
  std::mutex mutex;
  std::unordered_map<void*, Live> live;
};
Table& table() {
  static Table* t = new Table();
  return *t;
}

void release_counted(void* data) {
  Live gone;
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.live.find(data);
    if (it == t.live.end()) return;  // cannot happen: every DataPtr with this deleter is in the table
    gone = std::move(it->second);
    t.live.erase(it);
  }
  add(-static_cast<int64_t>(gone.nbytes));
  // `gone.inner` frees the memory here, outside the lock.
}

c10::DataPtr wrap_counted(c10::DataPtr allocated, size_t nbytes) {
  void* data = allocated.get();
  const c10::Device device = allocated.device();
  if (data == nullptr) return c10::DataPtr(nullptr, nullptr, &release_counted, device);  // 0 bytes
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.live[data] = Live{std::move(allocated), nbytes};
  }
  add(static_cast<int64_t>(nbytes));
  return c10::DataPtr(data, data, &release_counted, device);
}

// Bytes of this process's mappings of the runtime's shared-memory segments
// (/dev/shm/<prefix>-..., "(deleted)" once unlinked; shm_comm.cpp names them).
int64_t mapped_shared_bytes() {
  const char* p = std::getenv(env_names::kShmPrefix);
  const std::string prefix = std::string("/dev/shm/") + (p != nullptr && *p != '\0' ? p : "accelerate") + "-";
  std::ifstream maps("/proc/self/maps");
  int64_t total = 0;
  std::string line;
  while (std::getline(maps, line)) {
    const size_t path = line.find('/');
    if (path == std::string::npos || line.compare(path, prefix.size(), prefix) != 0) continue;
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &begin, &end) == 2 && end > begin) {
      total += static_cast<int64_t>(end - begin);
    }
  }
  return total;
}

// Every process of a host maps each segment whole (one slot per process, the staging
// area's chunks): its share is the mapping divided by the processes of the host.
void resample_shared() noexcept {
  try {
    const int64_t share = mapped_shared_bytes() / counts().local.load();
    add(share - counts().shared.exchange(share));
  } catch (const std::exception& e) {
    detail::runtime_log().warning(
        std::string("memory: cannot read /proc/self/maps (") + e.what() + "): shared memory is not counted",
        LogScope::all_processes);
  }
}

void print_at_exit() {
  const Counts& c = counts();
  if (c.rank.load() < 0) return;  // no Accelerator here (e.g. a tool that links the library)
  resample_shared();              // what is still mapped now
  std::fprintf(stderr, "accelerate: memory rank=%lld peak_bytes=%lld current_bytes=%lld shared_bytes=%lld\n",
               static_cast<long long>(c.rank.load()), static_cast<long long>(c.peak.load()),
               static_cast<long long>(c.current.load()), static_cast<long long>(c.shared.load()));
  std::fflush(stderr);
}

// Runs when the library is loaded, before main() and before the program's first tensor
// (LibTorch's allocator is registered by libc10, which is loaded and initialised before
// this library). The wrapper is registered with the highest priority so that it stays in
// place; it forwards to whichever allocator was in place before it.
bool install_from_environment() {
  const std::optional<bool> on = requested();
  if (!on.value_or(false)) return false;
  c10::Allocator* wrapper =
      detail::compat::make_forwarding_allocator(c10::GetCPUAllocator(), &wrap_counted, &release_counted);
  c10::SetCPUAllocator(wrapper, std::numeric_limits<uint8_t>::max());
  std::atexit(print_at_exit);
  return true;
}

const bool g_enabled = install_from_environment();

}  // namespace

namespace memory {

bool enabled() { return g_enabled; }
int64_t current_bytes() { return counts().current.load(); }
int64_t peak_bytes() { return counts().peak.load(); }
void reset_peak() { counts().peak.store(counts().current.load()); }

}  // namespace memory

namespace detail {
namespace memory_stats {

void check_environment() {
  if (!requested().has_value()) {
    throw LaunchEnvError("accelerate: " + std::string(kVariable) + "='" + std::getenv(kVariable) + "' is not one of " +
                         kEnvBoolValues);
  }
}

void on_accelerator(const ProcessState& ps) noexcept {
  if (!g_enabled) return;
  counts().rank.store(ps.env.rank);
  sample_shared_memory(ps);
}

void sample_shared_memory(const ProcessState& ps) noexcept {
  if (!g_enabled) return;
  counts().local.store(ps.shm ? std::max(1, ps.shm->topology().local_size()) : 1);
  resample_shared();
}

}  // namespace memory_stats
}  // namespace detail
}  // namespace accelerate
