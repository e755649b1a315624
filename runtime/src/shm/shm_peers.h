#pragma once
// What the shared-memory all-reduce needs from its process. The process state (comm/) owns
// the ShmComm, so shm/ cannot include it without an upward include (runtime/layers.txt):
// ProcessState fills this view when it creates one.

#include <accelerate/core/detail/torch_compat.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace accelerate {
namespace detail {

struct ShmPeers {
  c10::intrusive_ptr<c10d::Store> store;  // the job's store
  int64_t rank = 0;
  int64_t world_size = 1;
  std::chrono::milliseconds timeout{0};  // of rendezvous and collectives
  // A Gloo group of `size` processes over `store` (the hosts' leaders), on the same network
  // devices as the job's own group.
  std::function<c10::intrusive_ptr<CommGroup>(c10::intrusive_ptr<c10d::Store> store, int rank, int size)>
      make_gloo_group;
  // The message of a failed step `what`, worded like every other failed collective of the
  // process (rank, backend, timeout); the caller throws it as a DistributedError.
  std::function<std::string(const std::string& what, const std::string& cause)> failure;
};

}  // namespace detail
}  // namespace accelerate
