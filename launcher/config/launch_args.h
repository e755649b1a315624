#pragma once
// `accelerate launch` flags, spelled as in Hugging Face Accelerate.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/cli_args.h"

#include <accelerate/core/precision_type.h>

namespace accelerate::launcher {

// What the command line asks for. Each flag the launcher honours is declared once, bound to
// its field, in launch_args.cpp's table (kFlags); the fields from use_deepspeed on are
// filled from compat_flags.h's flags and the program.
struct LaunchArgs {
  bool help = false;  // parse_launch_args then throws an empty UsageError: the caller prints the usage
  std::optional<std::string> config_file;
  bool quiet = false;
  bool cpu = false;
  bool multi_gpu = false;
  bool no_python = false;
  bool module = false;
  bool debug = false;
  bool split_batches = false;  // our addition (Hugging Face sets it in code only)
  bool enable_cpu_affinity = false;
  std::optional<int> num_processes;
  std::optional<int> num_machines;
  std::optional<int> machine_rank;
  std::optional<int> main_process_port;
  std::optional<int> gradient_accumulation_steps;
  std::optional<int> num_cpu_threads_per_process;
  std::optional<std::string> main_process_ip;
  std::optional<int> rdzv_timeout;               // seconds the machines wait for each other
  std::optional<std::string> network_interface;  // GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME
  std::optional<std::string> job_token_file;     // the job token's file (job_token.h)
  std::optional<PrecisionType> mixed_precision;  // read once from the flag's text (fp8 kept, refused by the plan)
  std::optional<std::string> gpu_ids;
  std::optional<std::string> tee;  // "0".."3", as torchrun: 1 stdout, 2 stderr, 3 both
  std::optional<std::string> log_dir;
  std::optional<bool> rank_prefix;             // our addition: --rank_prefix / --no_rank_prefix
  std::optional<int> max_restarts;             // restart every process after a failure, up to N times
  std::optional<double> monitor_interval;      // seconds between checks of the processes
  std::optional<std::string> project_dir;      // ACCELERATE_PROJECT_DIR (save_state() / load_state())
  std::optional<std::string> mpirun_hostfile;  // the hosts mpirun starts the processes on
  std::optional<std::string> trace;            // ACCELERATE_TRACE (the step trace, docs/runtime-api.md)
  std::optional<std::string> log_with;         // ACCELERATE_LOG_WITH (init_trackers(); the runtime checks the names)
  // Sharded data parallel (docs/fsdp.md): --use_fsdp and the --fsdp_* values, checked here
  // and passed on as ACCELERATE_USE_FSDP / FSDP_* in their canonical spelling.
  bool use_fsdp = false;
  std::optional<std::string> fsdp_sharding_strategy;
  std::optional<std::string> fsdp_auto_wrap_policy;
  std::optional<std::string> fsdp_min_num_params;
  std::optional<std::string> fsdp_offload_params;  // "true" / "false"
  std::optional<std::string> fsdp_state_dict_type;
  std::optional<std::string> fsdp_transformer_layer_cls_to_wrap;
  std::optional<std::string> fsdp_backward_prefetch;  // BACKWARD_PRE / BACKWARD_POST / NO_PREFETCH
  // --fsdp_backward_prefetch_policy, the reference's older name: parse_launch_args folds it
  // into fsdp_backward_prefetch (refusing the two with different values).
  std::optional<std::string> fsdp_backward_prefetch_policy;
  std::optional<std::string> fsdp_forward_prefetch;  // "true" / "false"
  // --fsdp_reshard_after_forward (FSDP2's spelling), as the strategy it means: folded into
  // fsdp_sharding_strategy by parse_launch_args (refusing the two when they differ).
  std::optional<std::string> fsdp_reshard_after_forward;
  // DeepSpeed (deepspeed_map.h): --use_deepspeed and its other flags, name -> value.
  bool use_deepspeed = false;
  std::map<std::string, std::string> deepspeed;
  // The reference's flags that tune Python or speed only (compat_flags.h), for the warning.
  std::vector<std::string> tuning_flags;
  // The program and its arguments, untouched.
  std::vector<std::string> command;
};

// The parser's specs: the table's flags, then compat_flags()'s (without help lines).
const std::vector<FlagSpec>& launch_flag_specs();

// Parses `accelerate launch` arguments; throws UsageError. A missing program is an error
// unless allow_no_program (used by `accelerate test`, which supplies its own).
LaunchArgs parse_launch_args(const std::vector<std::string>& args, bool allow_no_program = false);

std::string launch_usage();

}  // namespace accelerate::launcher
