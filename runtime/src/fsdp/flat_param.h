#pragma once
// One FSDP unit: its parameters laid end to end in one flat buffer (the "flat parameter"),
// split into world_size equal shards, of which this process keeps one.
//
//   full    world_size * S elements (compute dtype, on the device): every parameter of the
//           unit is a view into it (Tensor::set_data), so the model's own tensors, and the
//           views autograd saves of them, read it. Under FULL_SHARD its storage is emptied
//           when the unit is not needed (the tensors keep their sizes; the storage's data
//           pointer and byte count are swapped) and refilled by an all-gather before the
//           next read (param_access.h).
//   shard   S elements (fp32, or the parameters' dtype): the master copy the optimizer
//           updates, through one "piece" per parameter (the part of that parameter this
//           process owns, flat; empty when it owns none). With fp32 parameters under
//           SHARD_GRAD_OP the shard is the local slice of `full` itself.
//   grads   during a synchronising backward, each parameter's .grad() is a view into one
//           flat buffer, reduce-scattered when the unit's gradients are complete; each
//           piece's .grad() then holds the averaged shard. The parameters' own .grad() reads
//           as zeros (a one-element sentinel), so that Module::zero_grad() stays visible.
#include "fsdp/fsdp_units.h"
#include "fsdp/unit_buffer_pool.h"

#include <accelerate/comm/detail/process_state.h>

#include <torch/torch.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

struct FlatParamConfig {
  bool reshard = true;                              // FULL_SHARD: free the full parameters when unused
  c10::ScalarType compute_dtype = torch::kFloat32;  // of the full parameters (bf16 mixed precision)
  torch::Device device{torch::kCPU};                // where the full parameters live
  torch::Device shard_device{torch::kCPU};          // where shards and optimizer state live (offload: CPU)
  // Where FULL_SHARD's freed full buffers wait for the next gather (null: back to the allocator).
  std::shared_ptr<UnitBufferPool> pool;
  // Where a unit's flat gradient buffer waits, once reduced, for the next unit's backward
  // (null: back to the allocator); emptied at the end of each backward pass.
  std::shared_ptr<UnitBufferPool> grad_pool;
};

class FlatParam {
 public:
  // The parameters must already be identical on every process.
  FlatParam(const ProcessState& ps, UnitSpec spec, const FlatParamConfig& config);
  ~FlatParam();  // waits for a prefetch still in flight (its buffer must outlive the collective)
  FlatParam(const FlatParam&) = delete;
  FlatParam& operator=(const FlatParam&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<std::string>& param_names() const { return names_; }
  const std::vector<torch::Tensor>& params() const { return params_; }
  int64_t numel() const { return total_; }                        // parameters of the unit
  int64_t offset(size_t param) const { return offsets_[param]; }  // in the flat layout
  int64_t shard_numel() const { return shard_numel_; }            // S (the last shards may hold padding)
  int64_t full_bytes() const;                                     // of the gathered full parameters
  const FlatParamConfig& config() const { return config_; }

  // ---- the full parameters (param_access.h calls the first three from any thread) -----
  c10::StorageImpl* param_storage() const { return storage_; }
  c10::StorageImpl* grad_storage() const { return grad_shard_.storage().unsafeGetStorageImpl(); }
  // Whether reading `t` (a view of param_storage()) needs a gather first.
  bool needs_gather(const at::Tensor& t) const;
  // Called before an operator touches the gradient shard (the optimizer, about to write the
  // shard): waits for a prefetch still reading the shard first.
  void mark_stale();
  bool present() const { return state_.load() == State::Present; }
  // All-gathers the full parameters from the shards (collective). Also after a step.
  void gather();
  // FULL_SHARD: empties the full parameters' storage (no-op otherwise). Waits for a
  // prefetch first.
  void release();
  // FULL_SHARD prefetch: starts all-gathering a freed unit into a buffer of its own
  // (collective, not waited for). Until gather() has waited for it and moved the buffer into
  // the storage, the unit reads as needing a gather. No-op unless freed, or on one process.
  void prefetch();
  bool fetching() const { return state_.load() == State::Fetching; }

  // ---- gradients (autograd hooks; `sync`: a synchronising backward) ------------------
  void before_grad(size_t param, bool sync);             // AccumulateGrad pre-hook
  bool after_grad(size_t param, bool sync);              // post-hook; true when the unit is complete
  bool pending() const { return grad_flat_.defined(); }  // gradients wait for reduce_grads
  // Reduce-scatters the flat gradients (collective): the pieces' gradients get the average.
  // `overlap`: where the collective runs in the background (shared memory), return once it
  // has started; finish_reduce() then waits for it and sets the pieces' gradients.
  void reduce_grads(bool overlap = false);
  bool reducing() const { return reduction_.out.defined(); }
  void finish_reduce();
  void end_pass();  // forget this pass's readiness

  // ---- the optimizer's view ----------------------------------------------------------
  const std::vector<torch::Tensor>& pieces() const { return pieces_; }
  // Where piece `param` starts inside its parameter (flat index; 0 for an empty piece).
  int64_t piece_start(size_t param) const;
  // The shard itself (S elements; the valid ones first) and how many of them are real.
  const torch::Tensor& shard() const { return shard_; }
  int64_t local_begin() const { return rank_ * shard_numel_; }  // flat index of shard()[0]
  int64_t local_valid() const;
  // The unit's full flat values from the master shards (fp32, `total` elements; collective).
  torch::Tensor gather_master() const;
  // Overwrites this process's shard from the unit's full flat values (`total` elements),
  // or from [begin, begin + values.numel()) of them; the full parameters become stale.
  void load_range(const torch::Tensor& values, int64_t begin);
  void load_full(const torch::Tensor& flat) { load_range(flat, 0); }

 private:
  // Fetching: a prefetch is in flight (its own buffer; the storage is still empty).
  enum class State { Freed, Gathering, Fetching, Present };
  struct Fetch {
    at::DataPtr buffer;       // what becomes the parameters' storage
    torch::Tensor out, send;  // the gather's output (a view of `buffer`) and input
    c10::intrusive_ptr<c10d::Work> work;
    uint64_t seq = 0;
    std::string what;
  };

  struct Reduction {
    torch::Tensor input, out;
    c10::intrusive_ptr<c10d::Work> work;
    uint64_t seq = 0;
    std::string what;
    bool divide = false;  // the average is not fused into the collective
  };

  void refill_storage();
  at::DataPtr take_buffer();
  torch::Tensor take_flat_grads();
  void finish_fetch();  // waits for the prefetch and moves its buffer into the storage
  void build_pieces();
  void set_piece_grad(size_t i, const torch::Tensor& region, bool accumulate);

  const ProcessState& ps_;
  int64_t rank_ = 0, world_ = 1;
  std::string name_;
  std::vector<std::string> names_;
  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offsets_, numels_;
  int64_t total_ = 0, shard_numel_ = 0;
  FlatParamConfig config_;
  bool aliased_ = false;  // shard_ is the local slice of full_

  torch::Tensor full_;
  c10::StorageImpl* storage_ = nullptr;
  size_t nbytes_ = 0;
  std::atomic<State> state_{State::Present};
  std::atomic<bool> stale_{false};
  Fetch fetch_;

  torch::Tensor shard_;
  torch::Tensor grad_shard_;  // S elements; the pieces' gradients point into its storage
  std::vector<torch::Tensor> pieces_;
  std::vector<int64_t> piece_offsets_;  // within the shard

  torch::Tensor grad_flat_;               // world_size * S, during a synchronising backward
  Reduction reduction_;                   // started by reduce_grads(overlap), not finished
  std::vector<torch::Tensor> sentinels_;  // each parameter's .grad() between passes
  std::vector<char> seen_;                // the parameter's gradient arrived in this pass
  std::vector<char> decided_;             // whether keep_ was decided since the last reduction
  std::vector<char> keep_;                // nobody zeroed the parameter's gradient since the last reduction
  size_t ready_ = 0;
};

}  // namespace detail
}  // namespace accelerate
