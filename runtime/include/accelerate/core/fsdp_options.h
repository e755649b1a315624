#pragma once
// Sharded data parallel (FSDP / ZeRO) settings, with Hugging Face Accelerate's names and
// meanings (FullyShardedDataParallelPlugin, `accelerate launch --use_fsdp --fsdp_*`, the
// `fsdp_config:` block of the config file, the FSDP_* environment variables). See docs/fsdp.md.
//
//   accelerate::Accelerator acc(accelerate::AcceleratorOptions().fsdp_plugin(
//       accelerate::FullyShardedDataParallelPlugin()
//           .sharding_strategy(accelerate::ShardingStrategy::FULL_SHARD)
//           .auto_wrap_policy(accelerate::AutoWrapPolicy::SIZE_BASED_WRAP)
//           .min_num_params(1000000)));
//
// A field left unset is read from the environment the launcher sets, else defaults as in
// Hugging Face Accelerate. No LibTorch here: the launcher and the environment decoder use it.

#include <accelerate/core/error.h>  // FsdpConfigError

#include <torch/arg.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace accelerate {

// Numbered as PyTorch's ShardingStrategy (FSDP_SHARDING_STRATEGY accepts 1, 2, 3 too).
enum class ShardingStrategy {
  FULL_SHARD = 1,     // ZeRO-3: parameters, gradients and optimizer state sharded
  SHARD_GRAD_OP = 2,  // ZeRO-2: gradients and optimizer state sharded, parameters replicated
  NO_SHARD = 3,       // plain data parallel (the DDP path)
};

// Which submodules become units (gathered and freed together under FULL_SHARD; their
// gradients are reduce-scattered together).
enum class AutoWrapPolicy {
  TRANSFORMER_BASED_WRAP,  // submodules whose class name is in transformer_layer_cls_to_wrap
  SIZE_BASED_WRAP,         // the smallest submodules holding at least min_num_params parameters
  NO_WRAP,                 // the whole model is one unit
};

// When a unit's parameters are gathered ahead of their use in backward, as PyTorch's
// BackwardPrefetch (docs/fsdp.md, "Prefetch"). Speed and peak memory only: what is computed
// is the same bit for bit.
enum class BackwardPrefetch {
  BACKWARD_PRE,   // the next unit's gather starts when the current unit is gathered
  BACKWARD_POST,  // ... when the current unit's gradients are complete
  NO_PREFETCH,    // each unit is gathered by the first operator that reads it
};

enum class StateDictType {
  FULL_STATE_DICT,     // gathered on the main process: a plain LibTorch archive
  SHARDED_STATE_DICT,  // one file per process plus metadata; loads on any number of processes
};

struct FullyShardedDataParallelPlugin {
  // FSDP_SHARDING_STRATEGY, else FULL_SHARD.
  TORCH_ARG(std::optional<ShardingStrategy>, sharding_strategy);
  // FSDP_AUTO_WRAP_POLICY, else NO_WRAP.
  TORCH_ARG(std::optional<AutoWrapPolicy>, auto_wrap_policy);
  // FSDP_MIN_NUM_PARAMS, else 0 (SIZE_BASED_WRAP with 0 wraps nothing, as in the reference).
  TORCH_ARG(std::optional<int64_t>, min_num_params);
  // FSDP_TRANSFORMER_CLS_TO_WRAP (comma-separated class names, e.g. "BlockImpl").
  TORCH_ARG(std::optional<std::vector<std::string>>, transformer_layer_cls_to_wrap);
  // FSDP_OFFLOAD_PARAMS, else false: parameter shards, gradient shards and optimizer state
  // live in CPU memory; units are copied to the device when gathered.
  TORCH_ARG(std::optional<bool>, offload_params);
  // FSDP_STATE_DICT_TYPE, else FULL_STATE_DICT.
  TORCH_ARG(std::optional<StateDictType>, state_dict_type);
  // FSDP_BACKWARD_PREFETCH, else NO_PREFETCH (FULL_SHARD only: other strategies keep their
  // parameters gathered through backward).
  TORCH_ARG(std::optional<BackwardPrefetch>, backward_prefetch);
  // FSDP_FORWARD_PREFETCH, else false: in forward, the next unit's gather starts when the
  // current unit is gathered (the order is learnt from the previous iteration).
  TORCH_ARG(std::optional<bool>, forward_prefetch);
};

// The settings in force, every field decided.
struct FsdpSettings {
  bool enabled = false;
  ShardingStrategy sharding_strategy = ShardingStrategy::FULL_SHARD;
  AutoWrapPolicy auto_wrap_policy = AutoWrapPolicy::NO_WRAP;
  int64_t min_num_params = 0;
  std::vector<std::string> transformer_layer_cls_to_wrap;
  bool offload_params = false;
  StateDictType state_dict_type = StateDictType::FULL_STATE_DICT;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::NO_PREFETCH;
  bool forward_prefetch = false;

  bool shards() const { return enabled && sharding_strategy != ShardingStrategy::NO_SHARD; }
};

// Parsers for the spellings Hugging Face accepts. `origin` names where the value came from
// (a variable, env_names::kFsdpShardingStrategy, or a flag, "--fsdp_sharding_strategy") for the
// error message.
// Strategy: FULL_SHARD, SHARD_GRAD_OP, NO_SHARD (any case) or 1, 2, 3; HYBRID_SHARD and
// HYBRID_SHARD_ZERO2 (4, 5) are refused with an explanation.
ShardingStrategy parse_sharding_strategy(const std::string& value, const std::string& origin);
// Hugging Face Accelerate's fsdp_reshard_after_forward (v1.6 on): a yes/no for FSDP2, where
// true frees the gathered parameters after the forward pass (FULL_SHARD) and false keeps
// them until the backward pass (SHARD_GRAD_OP, ZeRO-2), or a sharding strategy's name or
// number for FSDP1, as the reference reads it.
ShardingStrategy parse_reshard_after_forward(const std::string& value, const std::string& origin);
AutoWrapPolicy parse_auto_wrap_policy(const std::string& value, const std::string& origin);
// FULL_STATE_DICT, SHARDED_STATE_DICT; LOCAL_STATE_DICT is refused with an explanation.
StateDictType parse_state_dict_type(const std::string& value, const std::string& origin);
// BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH (any case; the words the reference's launcher writes).
BackwardPrefetch parse_backward_prefetch(const std::string& value, const std::string& origin);
// A non-negative integer; also "1e8" and "100000000.0" (what the reference's launcher writes).
int64_t parse_min_num_params(const std::string& value, const std::string& origin);
// "A,B" -> {"A", "B"} (blanks trimmed, empty entries dropped).
std::vector<std::string> parse_class_list(const std::string& value);

const char* to_string(ShardingStrategy strategy);
const char* to_string(AutoWrapPolicy policy);
const char* to_string(StateDictType type);
const char* to_string(BackwardPrefetch prefetch);

// Code (the plugin's set fields) over the environment's FSDP_* values over the defaults.
// `use_fsdp`: ACCELERATE_USE_FSDP; a plugin given in code enables FSDP by itself.
FsdpSettings resolve_fsdp(const std::optional<FullyShardedDataParallelPlugin>& code, bool use_fsdp,
                          const FullyShardedDataParallelPlugin& environment);

}  // namespace accelerate
