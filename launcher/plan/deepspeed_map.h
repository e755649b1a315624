#pragma once
// DeepSpeed settings mapped onto what the LibTorch runtime does the same way (docs/launcher.md,
// "DeepSpeed"): ZeRO stage 0 is data parallel, 1 and 2 shard gradients and optimizer state
// (FSDP SHARD_GRAD_OP; stage 1 leaves gradients whole in DeepSpeed, which computes the same),
// 3 shards parameters too (FULL_SHARD); cpu offload is FSDP's parameter offload; accumulation,
// clipping and bf16/fp16 become the runtime's own settings. What has no equivalent is refused.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace accelerate::launcher {

struct LaunchPlan;

// Where the settings come from, flags over the config file's deepspeed_config section; both
// use the reference's names (zero_stage, offload_param_device, gradient_clipping, ...).
struct DeepSpeedRequest {
  bool enabled = false;                       // --use_deepspeed or distributed_type: DEEPSPEED
  std::map<std::string, std::string> values;  // name -> value as written
  std::string config_path;                    // the config file, for messages ("" if none)
  bool precision_given = false;               // --mixed_precision or the file's mixed_precision
  bool accumulation_given = false;            // --gradient_accumulation_steps given
};

// Reads the JSON file of deepspeed_config_file into `values` (the keys that map; "auto"
// leaves a key to the flags). Unknown keys are returned for the tuning warning. Throws
// PlanError naming the file and the key.
std::vector<std::string> read_deepspeed_json(const std::string& path, std::map<std::string, std::string>& values);

// Sets the plan's FSDP, precision, accumulation and clipping from the request and returns
// the one line that says what was mapped (empty when DeepSpeed is not enabled). Throws
// PlanError for what has no equivalent.
std::string apply_deepspeed(const DeepSpeedRequest& request, LaunchPlan& plan);

}  // namespace accelerate::launcher
