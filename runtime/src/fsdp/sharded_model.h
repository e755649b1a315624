#pragma once
// A model prepared under SHARD_GRAD_OP or FULL_SHARD: its units (flat_param.h), the
// autograd hooks that reduce-scatter each unit's gradients as soon as they are complete,
// the operator observer's owner (what to gather and free), and the optimizer's re-pointing
// to the shards. One per prepared model; the Accelerator owns it.
//
// Collectives are issued by every process in the same order because every process runs
// the same operators in the same order: the observer gathers a unit at its first read, the
// hooks reduce a unit when its last gradient arrives. Code that makes processes differ in
// what reads the parameters (evaluating on the main process only, a data-dependent branch
// that skips a layer on one process) breaks that; the divergence watch then names the
// collectives that differ (docs/fsdp.md, "Limits").
#include "fsdp/flat_param.h"
#include "fsdp/param_access.h"

#include <accelerate/comm/detail/process_state.h>
#include <accelerate/core/fsdp_options.h>

#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace accelerate {
namespace detail {

class ShardedModel : public AccessOwner {
 public:
  // `module`'s parameters and buffers must already be identical on every process.
  // `communicate` is asked at the first gradient of each backward pass (false under no_sync).
  ShardedModel(const ProcessState& ps, torch::nn::Module& module, const FsdpSettings& settings,
               c10::ScalarType compute_dtype, std::vector<torch::Tensor> buffers, std::function<bool()> communicate);
  ~ShardedModel() override;
  ShardedModel(const ShardedModel&) = delete;
  ShardedModel& operator=(const ShardedModel&) = delete;

  torch::nn::Module& module() const { return module_; }
  const FsdpSettings& settings() const { return settings_; }
  const std::vector<std::shared_ptr<FlatParam>>& units() const { return units_; }

  // Replaces this model's parameters in the optimizer's groups by their pieces (the shards
  // the optimizer then updates). Returns how many it replaced. Throws when the optimizer
  // already holds state for them (prepare it before stepping).
  size_t shard_optimizer(torch::optim::Optimizer& optimizer) const;
  // The piece standing for a parameter of this model (null tensor if it is not one).
  torch::Tensor piece_of(const torch::Tensor& param) const;
  // Every piece (what clipping and the loss scaler see).
  std::vector<torch::Tensor> pieces() const;

  // Ends a backward pass: reduces the units whose gradients are still waiting (parameters
  // unused in the pass count as zero), frees the full parameters under FULL_SHARD,
  // re-broadcasts buffers after a synchronising pass. No-op when no pass is in flight.
  void finalize();
  // Gathers every unit (collective); they stay gathered until the next operator frees them.
  void gather_all();
  void on_access(const std::vector<FlatParam*>& gather, const std::vector<FlatParam*>& in_use) override;

  // Passes and collectives so far (tests, benchmarks).
  struct Stats {
    int64_t passes = 0, gathers = 0, reductions = 0;
    int64_t prefetches = 0, prefetch_hits = 0;  // started; waited for by the read they were for
    int64_t most_gathered = 0;                  // units in memory at once (after a gather)
    int64_t overlapped_reductions = 0;          // reduce-scatters left running beside backward
  };
  Stats stats() const { return stats_; }

 private:
  void install_hooks();
  void before_grad(size_t unit, size_t param);
  void after_grad(size_t unit, size_t param);
  void begin_pass();
  void reduce(size_t unit);
  // Prefetch (docs/fsdp.md, "Prefetch"): the units' gather order in the last iteration
  // (forward and backward, up to the end of a backward pass) predicts the next gather.
  enum class Trigger { Gathered, GradsDone };
  bool prefetching() const;
  bool overlap_reductions() const;
  size_t index_of(const FlatParam* unit) const;
  void record_gather(size_t unit);
  void prefetch_next(Trigger trigger);
  void end_iteration();

  const ProcessState& ps_;
  std::shared_ptr<UnitBufferPool> grad_pool_;  // the units' flat gradient buffers (FlatParamConfig)
  torch::nn::Module& module_;
  FsdpSettings settings_;
  std::vector<torch::Tensor> buffers_;
  std::function<bool()> communicate_;
  std::vector<std::shared_ptr<FlatParam>> units_;
  std::map<const void*, std::pair<size_t, size_t>> where_;  // parameter -> (unit, index)

  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> post_keys_;
  std::vector<const void*> pre_hooks_;

  mutable std::recursive_mutex mutex_;
  bool in_flight_ = false;
  bool sync_ = true;  // of the pass in flight
  std::vector<char> reduced_;
  std::vector<size_t> order_, last_order_;  // gathers of this and of the last iteration
  std::vector<char> last_repeat_;           // last_order_[k] was that unit's second gather or later (backward)
  bool on_track_ = true;                    // order_ is a prefix of last_order_
  std::optional<size_t> prefetched_;        // gathered ahead and not read yet
  std::optional<size_t> reducing_;          // its reduce-scatter runs in the background
  Stats stats_;
  std::shared_ptr<bool> alive_;
};

}  // namespace detail
}  // namespace accelerate
