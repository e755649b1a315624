#pragma once
// The launcher's config file: Hugging Face Accelerate's YAML (or JSON) format, at the same
// default path, with the same keys, so that a file written by either tool works with both.

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/errors.h"

#include <accelerate/core/precision_type.h>

namespace accelerate::launcher {

struct ClusterConfig {
  std::string compute_environment = "LOCAL_MACHINE";
  std::string distributed_type = "NO";
  std::optional<PrecisionType> mixed_precision;  // fp8 kept: the plan refuses it with its reason
  bool use_cpu = false;
  bool debug = false;
  int num_processes = -1;  // -1: not given (the reference's "unset" value)
  int machine_rank = 0;
  int num_machines = 1;
  std::optional<std::string> gpu_ids;
  std::optional<std::string> main_process_ip;
  std::optional<int> main_process_port;
  std::string rdzv_backend = "static";
  bool same_network = false;
  std::string main_training_function = "main";
  bool enable_cpu_affinity = false;
  bool downcast_bf16 = false;
  bool tpu_use_cluster = false;
  bool tpu_use_sudo = false;
  // deepspeed_config.gradient_accumulation_steps (honoured whatever distributed_type is).
  std::optional<int> gradient_accumulation_steps;
  // deepspeed_config's keys, as written, for the mapping onto FSDP (deepspeed_map.h).
  std::map<std::string, std::string> deepspeed;
  // Section keys that only tune Python or speed (compat_flags.h), for the launch's warning.
  std::vector<std::string> tuning_keys;
  // fsdp_config (with distributed_type: FSDP): the keys the runtime honours, in the
  // canonical spelling of `accelerate launch --fsdp_*` (docs/fsdp.md).
  std::optional<std::string> fsdp_sharding_strategy;
  std::optional<std::string> fsdp_auto_wrap_policy;
  std::optional<std::string> fsdp_min_num_params;
  std::optional<std::string> fsdp_transformer_layer_cls_to_wrap;
  std::optional<bool> fsdp_offload_params;
  std::optional<std::string> fsdp_state_dict_type;
  // fsdp_backward_prefetch, or its older name fsdp_backward_prefetch_policy (written back
  // under the newer one).
  std::optional<std::string> fsdp_backward_prefetch;
  std::optional<bool> fsdp_forward_prefetch;
  // Non-empty paradigm sections (deepspeed_config, ...) present in the file: kept for messages.
  std::optional<std::string> mpirun_hostfile;  // mpirun_config.mpirun_hostfile
  std::vector<std::string> unsupported_sections;
};

struct LoadedConfig {
  std::string path;
  ClusterConfig config;
};

// $HF_HOME/accelerate/default_config.yaml, HF_HOME defaulting to
// ${XDG_CACHE_HOME:-~/.cache}/huggingface (the reference's rule).
std::string default_config_path();

// Loads and validates; throws ConfigError naming the key of the first invalid value.
LoadedConfig load_config(const std::string& path);
// The same checks on the file's text (`path` only names it in messages): what load_config
// does once the file is read, callable without a file (the fuzz target, fuzz/).
LoadedConfig parse_config(const std::string& text, const std::string& path);

// Writes `config` as YAML (sorted keys, as the reference writes it), creating the
// directory. Throws ConfigError when the file cannot be written.
void save_config(const ClusterConfig& config, const std::string& path);

// The YAML text save_config writes.
std::string config_to_yaml(const ClusterConfig& config);

bool is_multi_process_type(const std::string& distributed_type);

}  // namespace accelerate::launcher
