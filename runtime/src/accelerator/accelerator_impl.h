#pragma once
// Accelerator's private state, shared by the runtime's source files.
#include <accelerate/accelerator.h>
#include <accelerate/detail/accelerator_access.h>
#include <accelerate/detail/process_state.h>
#include <accelerate/precision.h>

#include "checkpoint/checkpoint_registry.h"
#include "comm/grad_sync.h"
#include "fsdp/sharded_model.h"

#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace accelerate {

struct Accelerator::Impl {
  AcceleratorOptions options;
  std::shared_ptr<detail::ProcessState> ps;
  std::string mixed_precision = "no";
  int64_t gradient_accumulation_steps = 1;

  std::vector<std::unique_ptr<detail::GradSync>> grad_syncs;
  FsdpSettings fsdp;                                           // docs/fsdp.md
  std::vector<std::unique_ptr<detail::ShardedModel>> sharded;  // models under SHARD_GRAD_OP / FULL_SHARD
  std::set<const torch::nn::Module*> prepared_models;
  std::vector<torch::optim::Optimizer*> optimizers;
  std::vector<torch::optim::LRScheduler*> schedulers;

  bool communicate = true;     // false inside no_sync / accumulation steps
  bool sync_gradients = true;  // Hugging Face's GradientState.sync_gradients
  int64_t accumulate_calls = 0;

  LoaderState loader;
  std::unique_ptr<MixedPrecision> mp;  // mixed precision: autocast, fp16 loss scaling
  bool trigger = false;                // set_trigger() since the last check_trigger()
  std::optional<uint64_t> seed;
  std::optional<uint64_t> shared_seed;

  detail::CheckpointRegistry checkpoint;  // save_state / load_state (checkpoint_state.cpp)

  struct Tracking {                                // init_trackers / log / end_training (tracking_accelerator.cpp)
    std::vector<std::unique_ptr<Tracker>> added;   // add_tracker, not started yet
    std::vector<std::unique_ptr<Tracker>> active;  // started (main process only)
    bool started = false;
    int64_t next_step = 0;
  } tracking;
};

}  // namespace accelerate
