#pragma once
// The one process-wide distributed state: launch environment, device, TCPStore and c10d
// process group. Shared by every Accelerator in the process; reached through
// Accelerator::process_state() by the runtime's own parts (data loader, mixed precision).

#include <accelerate/detail/torch_compat.h>
#include <accelerate/errors.h>
#include <accelerate/launch_env.h>
#include <accelerate/options.h>

#include <chrono>
#include <memory>
#include <string>

namespace accelerate {
namespace detail {

struct ProcessState {
  LaunchEnv env;
  torch::Device device{torch::kCPU};
  std::string backend;                   // "gloo", "nccl"; "" for a single process
  std::chrono::milliseconds timeout{0};  // rendezvous and collectives
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<CommGroup> group;   // null for a single process

  int64_t rank() const { return env.rank; }
  int64_t world_size() const { return env.world_size; }
  bool distributed() const { return group.defined(); }

  // Waits for `work` up to `timeout`; any failure becomes a DistributedError naming
  // `what` (the collective) and this process's rank.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what) const;
  // Runs `launch` (which starts a collective) and waits, with the same error context.
  template <typename F>
  void run(const std::string& what, F&& launch) const {
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = launch(*group);
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
    wait(work, what);
  }
  [[noreturn]] void fail(const std::string& what, const std::string& cause) const;
};

// Builds the process state from the environment and options: device, TCPStore
// rendezvous, process group. Throws LaunchEnvError / DistributedError with context.
std::shared_ptr<ProcessState> create_process_state(const AcceleratorOptions& options,
                                                   const LaunchEnv& env);

// Overwrites `tensors` on every process with process `root`'s values (one flat buffer per
// communication dtype). Collective: every process passes tensors of the same shapes.
void broadcast_tensors(const ProcessState& ps, const std::vector<torch::Tensor>& tensors, int root,
                       const std::string& what);

// The dtype a tensor travels in: Gloo (1.13) aborts on bf16 and has no bool, and fp32
// sums are more accurate than fp16 ones, so half types go as fp32 and bool as uint8.
c10::ScalarType comm_dtype(c10::ScalarType dtype);

}  // namespace detail
}  // namespace accelerate
