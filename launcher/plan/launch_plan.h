#pragma once
// Resolves what to start from the flags and the config file: flags win over the file,
// the file over the defaults. Each default that the user did not choose is reported.

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/errors.h"
#include "config/launch_args.h"

#include <accelerate/launch/detail/launch_settings.h>

namespace accelerate::launcher {

struct LaunchPlan {
  int num_processes = 1;  // over all machines
  int num_machines = 1;
  int machine_rank = 0;
  int local_processes = 1;  // on this machine
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rdzv_timeout = 600;                        // seconds; the launchers' and the processes' rendezvous
  bool rdzv_timeout_set = false;                 // passed on to the processes (ACCELERATE_RDZV_TIMEOUT)
  std::optional<std::string> network_interface;  // GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME
  std::optional<std::string> job_token_file;     // several machines: where the job token is
  // What the processes are told through the contract (encode_launch_settings): precision is
  // always said, split_batches when on.
  LaunchSettings settings{PrecisionType::No, false};
  bool use_cpu = false;
  bool debug = false;
  bool enable_cpu_affinity = false;
  std::optional<int> gradient_accumulation_steps;
  std::optional<std::string> cuda_visible_devices;
  std::optional<int> omp_num_threads;  // set when several processes share the machine
  bool omp_defaulted = false;          // we chose it (print torchrun's note)
  bool quiet = false;
  std::optional<bool> rank_prefix;  // unset: decided per stream (terminal or not)
  int tee = 0;                      // bit 1: stdout, bit 2: stderr
  std::optional<std::string> log_dir;
  int max_restarts = 0;                    // restarts of every process after a failure
  double monitor_interval = 1.0;           // seconds between checks (failures also wake us at once)
  std::optional<std::string> project_dir;  // absolute; ACCELERATE_PROJECT_DIR
  std::optional<std::string> trace_dir;    // absolute; ACCELERATE_TRACE
  std::optional<std::string> log_with;     // ACCELERATE_LOG_WITH
  // ACCELERATE_GRADIENT_CLIPPING: max gradient norm optimizer_step() clips to (DeepSpeed's
  // gradient_clipping, deepspeed_map.h).
  std::optional<std::string> gradient_clipping;
  // Sharded data parallel: ACCELERATE_USE_FSDP and FSDP_* (canonical spellings), from the
  // --fsdp_* flags over the config file's fsdp_config over the reference's defaults.
  bool use_fsdp = false;
  std::string fsdp_sharding_strategy = "FULL_SHARD";
  std::string fsdp_min_num_params = "100000000";
  std::string fsdp_offload_params = "false";
  std::optional<std::string> fsdp_auto_wrap_policy;
  std::optional<std::string> fsdp_state_dict_type;
  std::optional<std::string> fsdp_transformer_layer_cls_to_wrap;
  // Unset unless chosen, so that the runtime's defaults (NO_PREFETCH, false) hold, as the
  // reference's plugin defaults them; forward prefetch is "true" or "false".
  std::optional<std::string> fsdp_backward_prefetch;
  std::optional<std::string> fsdp_forward_prefetch;
  // --mpirun_hostfile / mpirun_config.mpirun_hostfile: the installed mpirun starts every
  // process on the hosts of this file (mpirun_launch.h) instead of this launcher.
  std::optional<std::string> mpirun_hostfile;
  std::vector<std::string> command;        // what to exec in each process
  std::optional<std::string> config_path;  // the file that was read, if any
  std::vector<std::string> notes;          // defaults taken, config notes (--quiet hides them)
  // What changes nothing or was mapped (compat_flags.h, deepspeed_map.h): printed even
  // with --quiet, so that no setting is dropped unseen.
  std::vector<std::string> warnings;
};

// `environ_omp` is OMP_NUM_THREADS of the launcher's own environment (null if unset);
// `cpu_count` and `gpu_count` describe this machine (GPUs are counted only when needed).
LaunchPlan make_launch_plan(const LaunchArgs& args, const char* environ_omp, int cpu_count,
                            const std::function<int()>& gpu_count);

}  // namespace accelerate::launcher
