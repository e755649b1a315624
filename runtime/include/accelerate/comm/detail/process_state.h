#pragma once
// The one process-wide distributed state: launch environment, device, TCPStore and c10d
// process group. Shared by every Accelerator in the process; reached through
// detail::AcceleratorAccess::process_state(accelerator) by the runtime's own parts
// (<accelerate/accelerator/detail/accelerator_access.h>: SyncBatchNorm, tests, benchmarks).

#include <accelerate/core/detail/torch_compat.h>
#include <accelerate/core/error.h>
#include <accelerate/core/options.h>
#include <accelerate/launch/detail/launch_env.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace accelerate {
namespace detail {

class CollectiveWatch;  // finds processes that wait in different collectives (src/)
class ShmComm;          // the all-reduce of the processes that share a host (src/)

// Held by every collective of the runtime while it makes its buffers and communicates:
// gradients off, and outside InferenceMode, so that the buffers are normal tensors (the
// communication thread writes them outside the caller's InferenceMode, which LibTorch
// refuses for inference tensors). Costs two thread-local flag changes.
struct CommScope {
  c10::InferenceMode normal{false};
  torch::NoGradGuard no_grad;
};

struct ProcessState {
  LaunchEnv env;
  // The resolved options of the Accelerator that created this state: cpu, backend, timeout
  // and shared_memory are process-wide, later Accelerators report these.
  AcceleratorOptions options;
  torch::Device device{torch::kCPU};
  std::string backend;                   // "gloo", "nccl"; "" for a single process
  std::chrono::milliseconds timeout{0};  // rendezvous and collectives
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<CommGroup> group;     // null for a single process
  std::shared_ptr<CollectiveWatch> watch;  // Gloo only (null for NCCL and a single process)
  std::string gloo_endpoint;               // the address (or interfaces) this process gave Gloo; "" otherwise
  // Shared-memory all-reduce among the processes of each host (Gloo between hosts); null
  // when no host has two processes, on CUDA, or when turned off (ACCELERATE_SHM=0).
  std::shared_ptr<ShmComm> shm;

  ProcessState() = default;
  ProcessState(const ProcessState&) = delete;
  ProcessState& operator=(const ProcessState&) = delete;
  ~ProcessState();

  int64_t rank() const { return env.rank; }
  int64_t world_size() const { return env.world_size; }
  bool distributed() const { return group.defined(); }

  // Every collective is numbered and its kind (`what`, the same text on every process)
  // recorded before it starts: call begin() just before launching it and pass the number
  // to wait(). Fails at once if an earlier collective left the group unusable.
  uint64_t begin(const std::string& what) const;
  // Waits for collective `seq` up to `timeout`; any failure becomes a DistributedError
  // naming `what` and this process's rank. On Gloo, a wait that lasts more than a second
  // looks for processes waiting in a different collective and fails all of them within
  // seconds.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, uint64_t seq) const;
  // Runs `launch` (which starts a collective) and waits, with the same error context.
  template <typename F>
  void run(const std::string& what, F&& launch) const {
    const uint64_t seq = begin(what);
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = launch(*group);
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
    wait(work, what, seq);
  }
  [[noreturn]] void fail(const std::string& what, const std::string& cause) const;
  // fail()'s message: the failed step, this process, the group's backend and timeout.
  std::string failure_message(const std::string& what, const std::string& cause) const;
  // A failure that could not be thrown where it happened (a destructor): the next begin()
  // throws it as a DistributedError, before its collective starts.
  void defer_error(const std::string& message) const;
  // Starts an all-reduce of `tensors` in place: through shared memory when the processes
  // share hosts and it can (one contiguous CPU tensor; sum, max or min), else through the
  // process group. Pass it to wait() like any collective.
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<torch::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) const;

 private:
  void wait_watched(c10d::Work& work, const std::string& what, uint64_t seq,
                    std::chrono::steady_clock::time_point deadline) const;
  // After a divergence or a wait that ran out, the group's threads are stuck in a
  // collective: later collectives fail at once, and the group is not destroyed (its
  // destructor would join those threads, hanging the exit).
  [[noreturn]] void fail_broken(const std::string& what, const std::string& cause) const;
  mutable std::atomic<bool> broken_{false};
  mutable std::mutex broken_mutex_;
  mutable std::string broken_cause_;
  mutable std::atomic<bool> deferred_{false};
  mutable std::string deferred_message_;  // guarded by broken_mutex_
};

// NCCL refuses two ranks on one GPU (its "invalid usage", seen on the one-GPU machine:
// docs/gpu.md); this names the cause before the rendezvous. Throws DistributedError when
// `local_processes` NCCL processes of one machine would share `gpus` GPUs.
void check_one_gpu_per_process(int64_t local_processes, int64_t gpus);

// Builds the process state from the environment and resolved options: device, TCPStore
// rendezvous, process group. Throws LaunchEnvError / DistributedError with context.
std::shared_ptr<ProcessState> create_process_state(const AcceleratorOptions& options, const LaunchEnv& env);

// A Gloo process group of `size` processes over `store` (a PrefixStore for a sub-group),
// on the same network devices as the job's own group.
c10::intrusive_ptr<CommGroup> make_gloo_group(const ProcessState& ps, c10::intrusive_ptr<c10d::Store> store, int rank,
                                              int size);

// Overwrites `tensors` on every process with process `root`'s values (one flat buffer per
// communication dtype). Collective: every process passes tensors of the same shapes.
void broadcast_tensors(const ProcessState& ps, const std::vector<torch::Tensor>& tensors, int root,
                       const std::string& what);

// The dtype a tensor travels in: Gloo (1.13) aborts on bf16 and has no bool, and fp32
// sums are more accurate than fp16 ones, so half types go as fp32 and bool as uint8.
c10::ScalarType comm_dtype(c10::ScalarType dtype);

}  // namespace detail
}  // namespace accelerate
