#pragma once
// The all-reduce of the processes that share a host, over POSIX shared memory, used by
// ProcessState::allreduce and the gradient synchronisation instead of Gloo's loopback TCP.
//
// Each process of a host has a slot in a segment. An all-reduce waits at a barrier until
// every slot holds its process's input, then each process reduces its own slice of every
// slot (in rank order) and writes the result where it is read from, with the averaging
// division fused into that write; a second barrier ends it. Across hosts it is
// hierarchical: reduce within the host into the slot of the host's leader (its lowest
// rank), all-reduce between the leaders over Gloo, and copy back within the host.
//
// Two forms: allreduce() copies any contiguous CPU tensor through a staging area in chunks;
// allreduce_in_place() works on memory that already lives in the processes' slots (the
// gradient buckets, see allocate()), so that gradients are reduced without any copy.
//
// FSDP's two collectives go through the same staging area when every process of the job
// is on this host (one_host()): reduce_scatter() (each process reduces only the slice it
// keeps) and all_gather(). Across hosts FSDP stays on Gloo (docs/fsdp.md).
//
// All shared-memory waits run on one worker thread per process, in the order the
// collectives were started (the same order on every process); callers get a c10d::Work and
// wait for it through ProcessState::wait (timeout, divergence watch). A peer that dies, a
// timeout or a failure on one process fails the collective on every process of the host.

#include <accelerate/core/detail/torch_compat.h>

#include "launch/host_topology.h"
#include "shm/shm_peers.h"
#include "shm/shm_reduce.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace accelerate {
namespace detail {

class ShmSegment;
class ShmBarrier;
struct ShmControl;

// Memory with one slot per process of the host (private memory when the host has one process).
struct ShmRegion {
  std::shared_ptr<void> owner;  // keeps the mapping alive: give it to tensors made on a slot
  std::vector<char*> slots;     // by local rank
  size_t slot_bytes = 0;
  int local_rank = 0;
  char* mine() const { return slots[local_rank]; }
};

class ShmComm {
 public:
  // Collective over every process of the job. Null when no host has two processes of the
  // job, or when shared memory is off on any process (`enabled` false there).
  static std::shared_ptr<ShmComm> create(const ShmPeers& peers, bool enabled);
  ~ShmComm();
  ShmComm(const ShmComm&) = delete;
  ShmComm& operator=(const ShmComm&) = delete;

  const HostTopology& topology() const { return topo_; }
  // The operation, when allreduce() can do this one (else: Gloo).
  std::optional<ShmOp> supported(const std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) const;
  // All-reduces tensor `t` in place (contiguous, on CPU, a type shm_reduce supports).
  c10::intrusive_ptr<c10d::Work> allreduce(const at::Tensor& t, ShmOp op);

  // Collective over the processes of this host: a region of `bytes` per process.
  std::shared_ptr<ShmRegion> allocate(size_t bytes, const std::string& purpose);
  // Sums `numel` elements of `dtype` at `offset` bytes into every slot of `region` over all
  // processes of the job, divides them by `divisor`, and leaves the result in every slot.
  c10::intrusive_ptr<c10d::Work> allreduce_in_place(std::shared_ptr<ShmRegion> region, size_t offset, int64_t numel,
                                                    c10::ScalarType dtype, double divisor);

  // Whether reduce_scatter() and all_gather() can run: every process of the job is on this
  // host (there is no hierarchical form of them).
  bool one_host() const { return topo_.num_hosts == 1 && topo_.local_size() > 1; }
  // output = (sum over the processes, in rank order, of their input's slice [rank * S,
  // (rank + 1) * S)) / divisor, S = output.numel(). Contiguous fp32 CPU tensors; input holds
  // world * S elements and is not modified. Needs one_host().
  c10::intrusive_ptr<c10d::Work> reduce_scatter(const at::Tensor& input, const at::Tensor& output, double divisor);
  // Bytes [rank * B, (rank + 1) * B) of output = process rank's input (B = input's bytes, any
  // dtype; contiguous CPU tensors). input is output's own slice or apart from output. Needs
  // one_host().
  c10::intrusive_ptr<c10d::Work> all_gather(const at::Tensor& input, const at::Tensor& output);

  // Bytes of each chunk of allreduce() (the staging slot size): a chunk and its result stay
  // in a core's L2 cache; measured against 0.25-4 MiB (docs/shared-memory.md).
  static constexpr size_t kChunkBytes = size_t(2) << 20;

 private:
  struct Task {
    std::function<void()> body;
    c10::intrusive_ptr<c10d::Work> work;
  };
  ShmComm(const ShmPeers& peers, HostTopology topo);
  void connect(const ShmPeers& peers);
  std::shared_ptr<ShmSegment> share_segment(const std::string& suffix, size_t bytes, const std::string& purpose);
  c10::intrusive_ptr<c10d::Work> enqueue(std::function<void()> body, c10d::OpType type = c10d::OpType::ALLREDUCE);
  void worker_loop();
  void run_staged(const at::Tensor& t, ShmOp op);
  void run_reduce_scatter(const at::Tensor& input, const at::Tensor& output, double divisor);
  void run_all_gather(const at::Tensor& input, const at::Tensor& output);
  void run_in_place(const ShmRegion& region, size_t offset, int64_t numel, c10::ScalarType dtype, double divisor);
  void across_hosts(void* data, int64_t numel, c10::ScalarType dtype, ShmOp op);
  std::pair<int64_t, int64_t> my_part(int64_t numel, size_t elem) const;
  char* stage(int index) const;
  std::chrono::steady_clock::time_point deadline() const;

  HostTopology topo_;
  int64_t rank_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::string name_;  // of the control segment: regions are named after it
  int regions_ = 0;
  std::shared_ptr<ShmSegment> control_segment_;
  ShmControl* control_ = nullptr;
  std::unique_ptr<ShmBarrier> barrier_;
  c10::intrusive_ptr<CommGroup> leaders_;  // Gloo among the hosts' leaders (null: one host)

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  bool stop_ = false;
  std::atomic<bool> cancel_{false};
  std::exception_ptr broken_;  // the first failure: every later collective fails with it
  std::thread worker_;
};

}  // namespace detail
}  // namespace accelerate
