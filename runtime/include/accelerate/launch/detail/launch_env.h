#pragma once
// Internal (detail/): programs catch LaunchEnvError from <accelerate/error.h>.
// What the launcher told this process, decoded from environment variables. A pure
// function of the variables (no LibTorch), so every launcher's conventions are unit-tested.
//
// Recognised, in order of precedence:
//   RANK/WORLD_SIZE (+LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT): our
//     `accelerate launch`, Hugging Face `accelerate launch`, torchrun (TORCHELASTIC_*:
//     with TORCHELASTIC_USE_AGENT_STORE=True the agent hosts the TCPStore and every worker
//     connects as a client under the prefix /worker/attempt_<TORCHELASTIC_RESTART_COUNT>);
//   SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (+SLURM_NTASKS_PER_NODE; MASTER_ADDR or the
//     first host of SLURM_STEP_NODELIST/SLURM_JOB_NODELIST; MASTER_PORT or 29500);
//   OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (+MASTER_ADDR; MASTER_PORT or 29500);
//   none of these: a single process.
// Also ACCELERATE_USE_CPU, ACCELERATE_MIXED_PRECISION, ACCELERATE_GRADIENT_ACCUMULATION_STEPS,
// ACCELERATE_TIMEOUT_SECONDS, ACCELERATE_SPLIT_BATCHES, ACCELERATE_PROJECT_DIR,
// ACCELERATE_RDZV_TIMEOUT, ACCELERATE_DEBUG_MODE, and the FSDP settings:
// ACCELERATE_USE_FSDP, FSDP_SHARDING_STRATEGY, FSDP_AUTO_WRAP_POLICY,
// FSDP_MIN_NUM_PARAMS, FSDP_TRANSFORMER_CLS_TO_WRAP, FSDP_OFFLOAD_PARAMS, FSDP_STATE_DICT_TYPE,
// FSDP_BACKWARD_PREFETCH, FSDP_FORWARD_PREFETCH.

#include <accelerate/core/error.h>  // LaunchEnvError
#include <accelerate/core/fsdp_options.h>
#include <accelerate/launch/detail/launch_settings.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace accelerate {

struct LaunchEnv {
  std::string launcher = "none";  // "none", "torchrun", "accelerate", "env", "slurm", "openmpi"
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;
  int64_t local_world_size = 1;
  std::string master_addr;  // empty when world_size == 1
  int master_port = 0;
  bool agent_store = false;  // torchrun's agent hosts the TCPStore: connect as a client
  std::string store_prefix;  // key prefix inside the store (torchrun agent store)
  // ACCELERATE_STORE_KEY: machine 0's launcher serves the store and every connection proves
  // this key (a job with a token, docs/security.md); "" = LibTorch's TCPStore.
  std::string store_key;
  bool use_cpu = false;  // ACCELERATE_USE_CPU
  // ACCELERATE_MIXED_PRECISION, ACCELERATE_SPLIT_BATCHES: typed, decoded by the one decoder the
  // launcher's encoder is tested against (launch_settings.h).
  LaunchSettings settings;
  int64_t gradient_accumulation_steps = 0;           // 0 = unset
  std::optional<std::chrono::milliseconds> timeout;  // ACCELERATE_TIMEOUT_SECONDS
  uint64_t batch_order_control = 0;                  // ACCELERATE_BATCH_ORDER_CONTROL (verify's control runs)
  std::string project_dir;                           // ACCELERATE_PROJECT_DIR ("" = unset)
  std::string log_with;                              // ACCELERATE_LOG_WITH ("" = unset)
  std::optional<double> gradient_clipping;           // ACCELERATE_GRADIENT_CLIPPING (>= 0)
  // How long the processes wait for each other at rendezvous (`accelerate launch
  // --rdzv_timeout`); unset: 600 s, or the collective timeout when that is shorter.
  std::optional<std::chrono::milliseconds> rdzv_timeout;  // ACCELERATE_RDZV_TIMEOUT (seconds)
  bool debug = false;                                     // ACCELERATE_DEBUG_MODE (`accelerate launch --debug`)
  bool use_fsdp = false;                                  // ACCELERATE_USE_FSDP
  FullyShardedDataParallelPlugin fsdp;                    // FSDP_* (unset fields stay unset)

  // Something about the environment the process should say once on stderr ("" = nothing):
  // a Slurm job's batch script that is no srun task runs alone.
  std::string note;

  bool distributed() const { return world_size > 1; }
};

using EnvMap = std::map<std::string, std::string>;

// Throws LaunchEnvError naming the variable when the environment is inconsistent.
LaunchEnv parse_launch_env(const EnvMap& env);

// This process's environment as a map (input for parse_launch_env).
EnvMap current_environment();

// The tasks on node `node` of a Slurm per-node list ("2(x3),1": 2 on nodes 0-2, 1 on node 3);
// -1 when the list does not say.
int64_t slurm_tasks_on_node(const std::string& per_node, int64_t node);

// First host of a Slurm node list: "gpu[03-05,9],cpu1" -> "gpu03".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace accelerate
