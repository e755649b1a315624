#pragma once
// Rewriting a config file as Hugging Face Accelerate's commands do: `accelerate config
// update` (the reference's defaults added, its older spellings converted) and `accelerate
// to-fsdp2` (an FSDP1 fsdp_config in FSDP2's keys). Both keep every other key as it is.

#include <string>
#include <vector>

namespace accelerate::launcher {

struct ConvertedConfig {
  std::string text;                // the new file, keys sorted as the reference writes them
  std::vector<std::string> notes;  // what changed beyond spelling, one line each
};

// The file at `path` (checked first as a launch would read it, ConfigError if it is not
// valid) with the keys the reference adds on load: compute_environment, use_cpu, debug,
// enable_cpu_affinity, num_processes for distributed_type NO; `fp16: true` becomes
// `mixed_precision: fp16`, `dynamo_backend` becomes `dynamo_config`.
ConvertedConfig updated_config(const std::string& path);

// The file at `path` with its fsdp_config in FSDP2's keys (as the reference's to-fsdp2):
// fsdp_sharding_strategy becomes fsdp_reshard_after_forward (FULL_SHARD / HYBRID_SHARD: true,
// the others false), the keys FSDP2 dropped are removed with a note each, fsdp_version: 2.
// A file without fsdp_config, or already FSDP2, comes back unchanged with a note.
ConvertedConfig fsdp2_config(const std::string& path);

// `accelerate config update [--config_file P]`, `accelerate to-fsdp2 --config_file P
// [--output_file Q] [--overwrite]`, `accelerate tpu-config` (refused): exit codes 0, 1
// (a config error), 2 (usage).
int run_config_update_command(const std::vector<std::string>& args);
int run_to_fsdp2_command(const std::vector<std::string>& args);
int run_tpu_config_command(const std::vector<std::string>& args);

}  // namespace accelerate::launcher
