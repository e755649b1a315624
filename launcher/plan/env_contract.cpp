#include "plan/env_contract.h"

#include <accelerate/core/detail/env_names.h>

#include <unistd.h>

extern char** environ;

namespace accelerate::launcher {

std::map<std::string, std::string> rank_variables(const LaunchPlan& plan, int local_rank, int restart) {
  std::map<std::string, std::string> v = job_variables(plan);
  const int rank = plan.machine_rank * plan.local_processes + local_rank;
  v["RANK"] = std::to_string(rank);
  v["LOCAL_RANK"] = std::to_string(local_rank);
  v["WORLD_SIZE"] = std::to_string(plan.num_processes);
  v["LOCAL_WORLD_SIZE"] = std::to_string(plan.local_processes);
  v["GROUP_RANK"] = std::to_string(plan.machine_rank);
  v["NODE_RANK"] = std::to_string(plan.machine_rank);
  v["GROUP_WORLD_SIZE"] = std::to_string(plan.num_machines);
  v["ROLE_RANK"] = std::to_string(rank);
  v["ROLE_WORLD_SIZE"] = std::to_string(plan.num_processes);
  if (plan.max_restarts > 0) {
    // As torchrun: which attempt this is (0 first), so a program can tell a restart.
    v["TORCHELASTIC_RESTART_COUNT"] = std::to_string(restart);
    v["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(plan.max_restarts);
  }
  return v;
}

std::map<std::string, std::string> job_variables(const LaunchPlan& plan) {
  // The typed settings through their one encoding, which the runtime's decoder is tested against.
  std::map<std::string, std::string> v = encode_launch_settings(plan.settings);
  v["MASTER_ADDR"] = plan.master_addr;
  v["MASTER_PORT"] = std::to_string(plan.master_port);
  v[env_names::kUseCpu] = plan.use_cpu ? "true" : "false";
  if (plan.gradient_accumulation_steps) {
    v[env_names::kGradientAccumulationSteps] = std::to_string(*plan.gradient_accumulation_steps);
  }
  if (plan.debug) v[env_names::kDebugMode] = "true";
  if (plan.enable_cpu_affinity) v[env_names::kCpuAffinity] = "1";
  if (plan.omp_num_threads) v["OMP_NUM_THREADS"] = std::to_string(*plan.omp_num_threads);
  if (plan.cuda_visible_devices) v["CUDA_VISIBLE_DEVICES"] = *plan.cuda_visible_devices;
  if (plan.project_dir) v[env_names::kProjectDir] = *plan.project_dir;
  if (plan.trace_dir) v[env_names::kTrace] = *plan.trace_dir;
  if (plan.log_with) v[env_names::kLogWith] = *plan.log_with;
  if (plan.gradient_clipping) v[env_names::kGradientClipping] = *plan.gradient_clipping;
  if (plan.rdzv_timeout_set) v[env_names::kRdzvTimeout] = std::to_string(plan.rdzv_timeout);
  if (plan.network_interface) {
    v["GLOO_SOCKET_IFNAME"] = *plan.network_interface;
    v["NCCL_SOCKET_IFNAME"] = *plan.network_interface;
  }
  if (plan.use_fsdp) {
    // As the reference's launcher: the strategy, offload and size threshold always, the
    // others when chosen (the runtime defaults them as the reference's plugin does).
    v[env_names::kUseFsdp] = "true";
    v[env_names::kFsdpShardingStrategy] = plan.fsdp_sharding_strategy;
    v[env_names::kFsdpOffloadParams] = plan.fsdp_offload_params;
    v[env_names::kFsdpMinNumParams] = plan.fsdp_min_num_params;
    if (plan.fsdp_auto_wrap_policy) v[env_names::kFsdpAutoWrapPolicy] = *plan.fsdp_auto_wrap_policy;
    if (plan.fsdp_state_dict_type) v[env_names::kFsdpStateDictType] = *plan.fsdp_state_dict_type;
    if (plan.fsdp_transformer_layer_cls_to_wrap) {
      v[env_names::kFsdpTransformerClsToWrap] = *plan.fsdp_transformer_layer_cls_to_wrap;
    }
    if (plan.fsdp_backward_prefetch) v[env_names::kFsdpBackwardPrefetch] = *plan.fsdp_backward_prefetch;
    if (plan.fsdp_forward_prefetch) v[env_names::kFsdpForwardPrefetch] = *plan.fsdp_forward_prefetch;
  }
  return v;
}

std::vector<std::string> merge_environment(const std::vector<std::string>& base,
                                           const std::map<std::string, std::string>& vars) {
  std::vector<std::string> out;
  for (const auto& entry : base) {
    std::string name = entry.substr(0, entry.find('='));
    if (vars.count(name) || name.rfind("TORCHELASTIC_", 0) == 0) continue;
    out.push_back(entry);
  }
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace accelerate::launcher
