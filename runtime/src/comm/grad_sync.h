#pragma once
// Data-parallel gradient synchronisation for one prepared model, as PyTorch DDP does it:
// parameters are grouped into buckets (reverse parameter order, a small first bucket);
// a hook on each parameter's gradient accumulator marks it ready during backward, and a
// bucket is all-reduced asynchronously (flat fp32/fp64 buffer, SUM, divided by the world
// size) as soon as all its gradients are ready. A callback queued on the autograd engine
// waits for the buckets at the end of backward, so a plain loss.backward() is synchronised too.
//
// Gradients live in the buckets (DDP's gradient_as_bucket_view): each parameter's .grad()
// is a tensor on its place in the bucket, so backward accumulates into the bucket and the
// average is left there, with no copy either way. A gradient that is not there (after
// zero_grad() set it to none, LibTorch 2.x's default, or for a half-precision parameter,
// whose bucket is fp32) is copied in once and the parameter's .grad() is pointed at the
// bucket again. When the processes share a host, the buckets are in shared memory and the
// all-reduce reduces them in place (shm_comm.h), with the division fused in.

#include <accelerate/comm/detail/process_state.h>

#include "shm/shm_comm.h"

#include <torch/csrc/autograd/function.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

class GradSync {
 public:
  // `enabled` is asked at the first gradient of each backward pass (false under no_sync).
  // `buffers` are re-broadcast from process 0 after each synchronised pass (may be empty).
  // `overlap`: start each bucket's all-reduce as soon as it is ready during backward; else
  // all of them at the end of backward.
  GradSync(const ProcessState& ps, std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers,
           double first_bucket_cap_mb, double bucket_cap_mb, std::function<bool()> enabled, bool overlap = true);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Launches the buckets not launched yet (parameters unused in this pass count as zero
  // gradients), waits for all and writes the averages into .grad(). No-op when no
  // synchronised backward pass is in flight.
  void finalize();
  size_t num_buckets() const { return buckets_.size(); }
  // Synchronised backward passes, and buckets launched while backward was still running
  // (overlapped) or only at its end.
  int64_t passes() const { return passes_; }
  int64_t launched_during_backward() const { return launched_during_backward_; }
  int64_t launched_at_end() const { return launched_at_end_; }
  std::vector<size_t> bucket_sizes() const;  // parameters per bucket, in launch order
  bool shared_memory() const { return region_ != nullptr; }
  // Gradients copied into a bucket because they were not in it; seconds spent preparing
  // buckets (those copies, zeroing unused slots); seconds from the end of backward until
  // every bucket was all-reduced (launching those not launched yet, and waiting).
  int64_t copied_gradients() const { return copied_; }
  double copy_seconds() const { return copy_seconds_; }
  double wait_seconds() const { return wait_seconds_; }
  // Called with each parameter and this process's gradient of it just before the bucket
  // holding it is all-reduced (the step trace's --detail); none by default.
  void observe_local_grads(std::function<void(const torch::Tensor&, const torch::Tensor&)> observer) {
    observer_ = std::move(observer);
  }

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // element offset of each parameter in `flat`
    int64_t numel = 0;             // gradient elements; `flat` has one extra slot per parameter
    c10::ScalarType dtype;         // communication dtype
    torch::Tensor flat;
    size_t region_offset = 0;  // bytes from the start of this process's slot of region_
    size_t pending = 0;
    bool launched = false;
    std::string what;  // "all_reduce of gradient bucket i of n (k parameters)"
    uint64_t seq = 0;  // the collective's number (ProcessState::begin)
    c10::intrusive_ptr<c10d::Work> work;
  };

  void on_grad_ready(size_t param);
  void launch_ready_buckets();
  void launch(size_t bucket);
  void build_buckets(double first_cap_mb, double cap_mb);
  void allocate_buckets();
  bool in_bucket(size_t param, const torch::Tensor& grad) const;

  const ProcessState& ps_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  std::vector<size_t> bucket_of_;
  std::vector<Bucket> buckets_;
  std::shared_ptr<ShmRegion> region_;      // the buckets' shared memory (null: Gloo)
  std::vector<torch::Tensor> grad_views_;  // per parameter: its place in its bucket (undefined: dtype differs)
  bool overlap_ = true;
  std::function<void(const torch::Tensor&, const torch::Tensor&)> observer_;
  int64_t copied_ = 0;
  double copy_seconds_ = 0, wait_seconds_ = 0;
  std::function<bool()> enabled_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // keeps the hooked nodes alive
  std::vector<uintptr_t> hook_keys_;
  std::vector<bool> ready_;
  bool in_flight_ = false;
  bool finalizing_ = false;
  int64_t passes_ = 0, launched_during_backward_ = 0, launched_at_end_ = 0;
  size_t next_launch_ = 0;
  std::mutex mutex_;  // hooks run on autograd worker threads
  std::shared_ptr<bool> alive_;
};

// Whether buckets are all-reduced during backward (ACCELERATE_GRAD_SYNC_OVERLAP=1, the
// default) or all at its end (0). On 2 cores with 2 processes the step time is the same
// either way (bench/run.py's policy rows, docs/shared-memory.md).
bool grad_sync_overlap();

}  // namespace detail
}  // namespace accelerate
