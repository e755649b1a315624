#include <accelerate/core/detail/env_names.h>
#include <accelerate/launch/detail/launch_env.h>
#include <accelerate/log/logging.h>

#include <unistd.h>  // environ (declared by glibc's unistd.h under _GNU_SOURCE, which g++ defines)

#include <algorithm>
#include <cctype>
#include <optional>

namespace accelerate {
namespace {

const std::string* find(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

int64_t parse_int(const std::string& name, const std::string& value) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) {
    throw LaunchEnvError("accelerate: environment variable " + name + "='" + value + "' is not an integer");
  }
  return v;
}

int64_t get_int(const EnvMap& env, const std::string& name, int64_t fallback) {
  const std::string* v = find(env, name);
  return v ? parse_int(name, *v) : fallback;
}

// "accelerate: NAME", how a message about a variable of the contract begins.
std::string about(const char* name) { return std::string("accelerate: ") + name; }

// The contract's one reading of a yes/no variable (launch_settings.h).
bool parse_bool(const std::string& name, const std::string& value) { return detail::parse_env_bool(name, value); }

void read_accelerate_vars(const EnvMap& env, LaunchEnv& out) {
  if (const auto* v = find(env, env_names::kUseCpu)) out.use_cpu = parse_bool(env_names::kUseCpu, *v);
  out.settings = decode_launch_settings(env);
  if (find(env, env_names::kGradientAccumulationSteps)) {
    out.gradient_accumulation_steps = get_int(env, env_names::kGradientAccumulationSteps, 0);
    if (out.gradient_accumulation_steps < 1) {
      throw LaunchEnvError(about(env_names::kGradientAccumulationSteps) + " must be >= 1");
    }
  }
  if (const auto* v = find(env, env_names::kBatchOrderControl)) {
    const int64_t seed = parse_int(env_names::kBatchOrderControl, *v);
    if (seed < 0) throw LaunchEnvError(about(env_names::kBatchOrderControl) + " must be >= 0 (0: off), got " + *v);
    out.batch_order_control = static_cast<uint64_t>(seed);
  }
  if (const auto* v = find(env, env_names::kTimeoutSeconds)) {
    const int64_t s = parse_int(env_names::kTimeoutSeconds, *v);
    if (s <= 0) throw LaunchEnvError(about(env_names::kTimeoutSeconds) + " must be > 0, got " + *v);
    out.timeout = std::chrono::seconds(s);
  }
  if (const auto* v = find(env, env_names::kProjectDir)) out.project_dir = *v;
  if (const auto* v = find(env, env_names::kLogWith)) out.log_with = *v;
  if (const auto* v = find(env, env_names::kGradientClipping)) {
    size_t used = 0;
    double norm = -1;
    try {
      norm = std::stod(*v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v->size() || !(norm >= 0)) {
      throw LaunchEnvError(about(env_names::kGradientClipping) + "='" + *v + "' is not a norm >= 0");
    }
    out.gradient_clipping = norm;
  }
  if (const auto* v = find(env, env_names::kRdzvTimeout)) {
    const int64_t s = parse_int(env_names::kRdzvTimeout, *v);
    if (s <= 0) throw LaunchEnvError(about(env_names::kRdzvTimeout) + " must be > 0 seconds, got " + *v);
    out.rdzv_timeout = std::chrono::seconds(s);
  }
  if (const auto* v = find(env, env_names::kDebugMode)) out.debug = parse_bool(env_names::kDebugMode, *v);
}

// Read whether or not ACCELERATE_USE_FSDP is set: a plugin given in code takes its unset
// fields from here, as the reference's FullyShardedDataParallelPlugin does.
void read_fsdp_vars(const EnvMap& env, LaunchEnv& out) {
  if (const auto* v = find(env, env_names::kUseFsdp)) out.use_fsdp = parse_bool(env_names::kUseFsdp, *v);
  auto& f = out.fsdp;
  try {
    if (const auto* v = find(env, env_names::kFsdpShardingStrategy)) {
      f.sharding_strategy(parse_sharding_strategy(*v, env_names::kFsdpShardingStrategy));
    }
    if (const auto* v = find(env, env_names::kFsdpAutoWrapPolicy)) {
      f.auto_wrap_policy(parse_auto_wrap_policy(*v, env_names::kFsdpAutoWrapPolicy));
    }
    if (const auto* v = find(env, env_names::kFsdpMinNumParams))
      f.min_num_params(parse_min_num_params(*v, env_names::kFsdpMinNumParams));
    if (const auto* v = find(env, env_names::kFsdpTransformerClsToWrap))
      f.transformer_layer_cls_to_wrap(parse_class_list(*v));
    if (const auto* v = find(env, env_names::kFsdpStateDictType)) {
      f.state_dict_type(parse_state_dict_type(*v, env_names::kFsdpStateDictType));
    }
    if (const auto* v = find(env, env_names::kFsdpBackwardPrefetch)) {
      f.backward_prefetch(parse_backward_prefetch(*v, env_names::kFsdpBackwardPrefetch));
    }
  } catch (const FsdpConfigError& e) {
    throw LaunchEnvError(e.what());
  }
  if (const auto* v = find(env, env_names::kFsdpOffloadParams))
    f.offload_params(parse_bool(env_names::kFsdpOffloadParams, *v));
  if (const auto* v = find(env, env_names::kFsdpForwardPrefetch))
    f.forward_prefetch(parse_bool(env_names::kFsdpForwardPrefetch, *v));
}

void read_ranks(const EnvMap& env, LaunchEnv& out, const char* rank, const char* size, const char* local_rank,
                const char* local_size) {
  if (!find(env, size)) {
    throw LaunchEnvError(std::string("accelerate: ") + rank + " is set but " + size + " is not");
  }
  out.rank = get_int(env, rank, 0);
  out.world_size = get_int(env, size, 1);
  // Without the local variables, assume a single machine.
  out.local_rank = get_int(env, local_rank, out.rank);
  out.local_world_size = get_int(env, local_size, out.world_size);
  if (out.world_size < 1) {
    throw LaunchEnvError(std::string("accelerate: ") + size + "=" + std::to_string(out.world_size) + " must be >= 1");
  }
  if (out.rank < 0 || out.rank >= out.world_size) {
    throw LaunchEnvError(std::string("accelerate: ") + rank + "=" + std::to_string(out.rank) + " is out of range for " +
                         size + "=" + std::to_string(out.world_size) + " (ranks are 0.." +
                         std::to_string(out.world_size - 1) + ")");
  }
  if (out.local_world_size < 1 || out.local_world_size > out.world_size) {
    throw LaunchEnvError(std::string("accelerate: ") + local_size + "=" + std::to_string(out.local_world_size) +
                         " must be in 1.." + size + "=" + std::to_string(out.world_size));
  }
  if (out.local_rank < 0 || out.local_rank >= out.local_world_size) {
    throw LaunchEnvError(std::string("accelerate: ") + local_rank + "=" + std::to_string(out.local_rank) +
                         " is out of range for " + local_size + "=" + std::to_string(out.local_world_size));
  }
}

// A task of an srun step: its rank and the step's size, and how many of the step's tasks
// run on this node. That count is the step's (SLURM_STEP_TASKS_PER_NODE, "2(x3),1", at this
// node's index SLURM_NODEID), which srun always sets; SLURM_NTASKS_PER_NODE only exists when
// --ntasks-per-node was given, and is the job's, which a smaller step inside it does not follow.
void read_slurm_ranks(const EnvMap& env, LaunchEnv& out) {
  EnvMap slurm = env;
  slurm.erase("SLURM_NTASKS_PER_NODE");
  const auto* step = find(env, "SLURM_STEP_TASKS_PER_NODE");
  const auto* job = find(env, "SLURM_NTASKS_PER_NODE");
  const auto* per_node = step ? step : job;
  if (per_node != nullptr) {
    const int64_t node = get_int(env, "SLURM_NODEID", 0);
    const int64_t tasks = slurm_tasks_on_node(*per_node, node);
    if (tasks < 1) {
      throw LaunchEnvError(std::string("accelerate: ") +
                           (step ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_NTASKS_PER_NODE") + "=" + *per_node +
                           " names no task count for SLURM_NODEID=" + std::to_string(node));
    }
    slurm["SLURM_NTASKS_PER_NODE"] = std::to_string(tasks);
  }
  read_ranks(slurm, out, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE");
}

void read_master(const EnvMap& env, LaunchEnv& out, const std::string& addr_fallback, int port_fallback,
                 const std::string& why) {
  if (!out.distributed()) return;
  if (const auto* v = find(env, "MASTER_ADDR")) {
    out.master_addr = *v;
  } else if (!addr_fallback.empty()) {
    out.master_addr = addr_fallback;
  } else {
    throw LaunchEnvError("accelerate: MASTER_ADDR is not set; " + why +
                         " (set it to the address of the process with rank 0)");
  }
  if (const auto* v = find(env, "MASTER_PORT")) {
    const int64_t port = parse_int("MASTER_PORT", *v);
    if (port < 1 || port > 65535) {
      throw LaunchEnvError("accelerate: MASTER_PORT=" + *v + " is not a TCP port (1..65535)");
    }
    out.master_port = static_cast<int>(port);
  } else if (port_fallback > 0) {
    out.master_port = port_fallback;
  } else {
    throw LaunchEnvError("accelerate: MASTER_PORT is not set; " + why);
  }
}

}  // namespace

int64_t slurm_tasks_on_node(const std::string& per_node, int64_t node) {
  // Entries "N" or "N(xK)" (N tasks on each of K nodes), comma-separated, in node order.
  int64_t first = 0;
  size_t at = 0;
  while (at < per_node.size()) {
    size_t used = 0;
    int64_t tasks = 0, repeat = 1;
    try {
      tasks = std::stoll(per_node.substr(at), &used);
    } catch (const std::exception&) {
      return -1;
    }
    at += used;
    if (per_node.compare(at, 2, "(x") == 0) {
      size_t more = 0;
      try {
        repeat = std::stoll(per_node.substr(at + 2), &more);
      } catch (const std::exception&) {
        return -1;
      }
      at += 2 + more;
      if (at >= per_node.size() || per_node[at] != ')') return -1;
      ++at;
    }
    if (node >= first && node < first + repeat) return tasks;
    first += repeat;
    if (at < per_node.size() && per_node[at] != ',') return -1;
    ++at;
  }
  return -1;
}

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at the first comma outside brackets.
  size_t depth = 0, end = nodelist.size();
  for (size_t i = 0; i < nodelist.size(); ++i) {
    if (nodelist[i] == '[') ++depth;
    if (nodelist[i] == ']' && depth > 0) --depth;
    if (nodelist[i] == ',' && depth == 0) {
      end = i;
      break;
    }
  }
  const std::string entry = nodelist.substr(0, end);
  const auto open = entry.find('[');
  if (open == std::string::npos) return entry;
  const std::string prefix = entry.substr(0, open);
  const std::string ranges = entry.substr(open + 1);
  size_t stop = 0;
  while (stop < ranges.size() && ranges[stop] != '-' && ranges[stop] != ',' && ranges[stop] != ']') ++stop;
  return prefix + ranges.substr(0, stop);
}

LaunchEnv parse_launch_env(const EnvMap& env) {
  LaunchEnv out;
  read_accelerate_vars(env, out);
  read_fsdp_vars(env, out);

  if (find(env, "RANK") || find(env, "WORLD_SIZE")) {
    if (!find(env, "RANK")) throw LaunchEnvError("accelerate: WORLD_SIZE is set but RANK is not");
    read_ranks(env, out, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE");
    bool accelerate = false;
    for (const auto& [k, v] : env) {
      if (k.rfind(env_names::kPrefix, 0) == 0) accelerate = true;
    }
    // `accelerate launch --max_restarts` sets TORCHELASTIC_RESTART_COUNT too, but no run id
    // and no agent store.
    const bool torchrun = find(env, "TORCHELASTIC_RUN_ID") || find(env, "TORCHELASTIC_USE_AGENT_STORE") ||
                          (find(env, "TORCHELASTIC_RESTART_COUNT") && !accelerate);
    out.launcher = torchrun ? "torchrun" : accelerate ? "accelerate" : "env";
    if (const auto* v = find(env, "TORCHELASTIC_USE_AGENT_STORE")) {
      out.agent_store = parse_bool("TORCHELASTIC_USE_AGENT_STORE", *v);
    }
    if (out.agent_store) {
      const auto* restart = find(env, "TORCHELASTIC_RESTART_COUNT");
      out.store_prefix = "/worker/attempt_" + (restart ? *restart : std::string("0"));
    }
    // Only `accelerate launch` serves such a store: under torchrun (started from inside a job
    // of ours, say) the key is an outer job's and is not used.
    const auto* v = out.launcher == "accelerate" ? find(env, env_names::kStoreKey) : nullptr;
    if (v != nullptr) {
      if (v->size() != 64 || v->find_first_not_of("0123456789abcdef") != std::string::npos) {
        throw LaunchEnvError(about(env_names::kStoreKey) +
                             " is set by `accelerate launch` (64 hex digits); this one is not: do not set it by hand");
      }
      // The launcher's store outlives an attempt: each attempt has its own keys.
      const auto* restart = find(env, "TORCHELASTIC_RESTART_COUNT");
      out.store_key = *v;
      out.store_prefix = "/accelerate/attempt_" + (restart ? *restart : std::string("0"));
    }
    read_master(env, out, "", 0, "the launcher set WORLD_SIZE=" + std::to_string(out.world_size));
    return out;
  }
  if (find(env, "SLURM_PROCID") && find(env, "SLURM_NTASKS") && !find(env, "SLURM_STEP_ID")) {
    // A job's batch script (or salloc's shell) has SLURM_PROCID=0 and the job's task count
    // but is no task of a step: run alone rather than wait for tasks srun never started.
    out.note = "SLURM_NTASKS=" + *find(env, "SLURM_NTASKS") +
               " but this process was not started by srun (no SLURM_STEP_ID): it runs as the only process; start "
               "it with srun to use the job's tasks (docs/multi-node.md, \"Slurm\")";
    return out;
  }
  if (find(env, "SLURM_PROCID") && find(env, "SLURM_NTASKS")) {
    out.launcher = "slurm";
    read_slurm_ranks(env, out);
    std::string host;
    if (const auto* v = find(env, "SLURM_STEP_NODELIST"))
      host = first_slurm_host(*v);
    else if (const auto* v = find(env, "SLURM_JOB_NODELIST"))
      host = first_slurm_host(*v);
    read_master(
        env, out, host, 29500,
        "Slurm set SLURM_NTASKS=" + std::to_string(out.world_size) + " but no SLURM_STEP_NODELIST/SLURM_JOB_NODELIST");
    return out;
  }
  if (find(env, "OMPI_COMM_WORLD_RANK")) {
    out.launcher = "openmpi";
    read_ranks(env, out, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
               "OMPI_COMM_WORLD_LOCAL_SIZE");
    read_master(env, out, "", 29500,
                "mpirun started OMPI_COMM_WORLD_SIZE=" + std::to_string(out.world_size) + " processes");
    return out;
  }
  return out;
}

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

namespace {
// Loggers used before an Accelerator exists (a program's first messages, the Accelerator's
// own while it starts) still print on the main process only: the process is read from the
// launch environment. A malformed one counts as process 0 of 1 here; the Accelerator reports it.
const bool kLogProcessFromEnvironment = [] {
  detail::set_log_process_source([] {
    try {
      const LaunchEnv env = parse_launch_env(current_environment());
      return LogProcess{env.rank, env.world_size, {}};
    } catch (const Error&) {
      return LogProcess{};
    }
  });
  return true;
}();
}  // namespace

}  // namespace accelerate
