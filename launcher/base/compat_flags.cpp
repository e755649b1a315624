#include "base/compat_flags.h"

#include <accelerate/core/detail/env_names.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace accelerate::launcher {

namespace {

constexpr auto V = Arity::kValue;
constexpr auto S = Arity::kSwitch;
constexpr auto T = CompatKind::kTuning;
constexpr auto D = CompatKind::kDeepSpeed;
constexpr auto R = CompatKind::kRefused;

const char* const kTpu = "TPUs are not supported by the LibTorch launcher";
const char* const kMegatron =
    "Megatron-LM tensor and pipeline parallelism are not available in the LibTorch runtime (data parallel "
    "and FSDP are: --use_fsdp)";
const char* const kDeepSpeedLauncher =
    "DeepSpeed's own multi-machine launcher is not used: start each machine with accelerate launch "
    "--num_machines/--machine_rank/--main_process_ip, or under mpirun/Slurm (docs/multi-node.md)";
const char* const kDynamo = "torch.compile (TorchDynamo) exists in Python only";
const char* const kFp8 = "only read with --mixed_precision fp8, which the LibTorch runtime refuses";
const char* const kParallelism =
    "ParallelismConfig's tensor, context and sequence parallelism are not available in the LibTorch runtime: "
    "data parallel is --num_processes, sharding is --use_fsdp";
const char* const kParallelSize =
    "a size above 1 asks for tensor, context or sequence parallelism, which the LibTorch runtime does not have "
    "(1 is accepted): data parallel is --num_processes, sharding is --use_fsdp";
const char* const kParallelData =
    "data-parallel sizes of ParallelismConfig are not read: the processes are --num_processes (--num_machines), "
    "replicated, or sharded with --use_fsdp (1 is accepted)";
const std::string kClippingWhy =
    std::string("-> ") + env_names::kGradientClipping + ": optimizer_step() clips the gradient norm";

// Sorted by family, as the reference's `accelerate launch --help` groups them.
const std::vector<CompatFlag> kFlags = {
    // torchrun's elastic agent and notebooks
    {"rdzv_backend", V, T, "torchrun's rendezvous backend: this launcher has its own rendezvous"},
    {"rdzv_conf", V, T, "torchrun's rendezvous settings: this launcher has its own rendezvous"},
    {"role", V, T, "torchrun's worker role name, a label only"},
    {"main_training_function", V, T, "the Python function notebook_launcher calls: the program is run whole"},
    {"same_network", S, T, "for TPU pods; machines here always meet at --main_process_ip"},
    // torch.compile
    {"dynamo_backend", V, T, kDynamo},
    {"dynamo_mode", V, T, kDynamo},
    {"dynamo_use_fullgraph", S, T, kDynamo},
    {"dynamo_use_dynamic", S, T, kDynamo},
    {"dynamo_use_regional_compilation", S, T, kDynamo},
    // TPU, SageMaker, Intel
    {"tpu", S, R, kTpu},
    {"tpu_cluster", S, R, kTpu},
    {"no_tpu_cluster", S, T, "the default: no TPU cluster"},
    {"tpu_use_sudo", S, R, kTpu},
    {"vm", V, R, kTpu},
    {"env", V, R, "sets variables on TPU VMs; TPUs are not supported (set variables in the shell that launches)"},
    {"downcast_bf16", S, T, "TPU-only bf16 storage; bf16 here is --mixed_precision bf16"},
    {"aws_access_key_id", V, R, "Amazon SageMaker is not supported by the LibTorch launcher"},
    {"aws_secret_access_key", V, R, "Amazon SageMaker is not supported by the LibTorch launcher"},
    {"ipex", S, R, "Intel Extension for PyTorch is Python-only"},
    {"use_xpu", S, R, "Intel XPU devices are not supported by the LibTorch runtime (CPU and CUDA are)"},
    {"mpirun_ccl", V, T,
     "oneCCL's worker threads: oneCCL is not a backend of the LibTorch runtime (gloo and nccl are)"},
    // DeepSpeed: mapped onto FSDP where FSDP does the same thing (deepspeed_map.h)
    {"use_deepspeed", S, D, "ZeRO maps onto FSDP"},
    {"deepspeed_config_file", V, D, "its ZeRO, offload, accumulation, clipping and precision settings map"},
    {"zero_stage", V, D, "0 -> data parallel, 1 and 2 -> SHARD_GRAD_OP, 3 -> FULL_SHARD"},
    {"offload_optimizer_device", V, D, "cpu -> FSDP parameter offload"},
    {"offload_param_device", V, D, "cpu -> FSDP parameter offload"},
    {"gradient_clipping", V, D, kClippingWhy.c_str()},
    {"zero3_init_flag", V, T, "deepspeed.zero.Init builds a Python model sharded; the program builds its own"},
    {"zero3_save_16bit_model", V, T, "save_model() writes the full fp32 weights (FULL_STATE_DICT), not a 16-bit copy"},
    {"offload_optimizer_nvme_path", V, R, "offloading to NVMe is not available (cpu is)"},
    {"offload_param_nvme_path", V, R, "offloading to NVMe is not available (cpu is)"},
    {"deepspeed_hostfile", V, R, kDeepSpeedLauncher},
    {"deepspeed_exclusion_filter", V, R, kDeepSpeedLauncher},
    {"deepspeed_inclusion_filter", V, R, kDeepSpeedLauncher},
    {"deepspeed_multinode_launcher", V, R, kDeepSpeedLauncher},
    {"deepspeed_moe_layer_cls_names", V, R, "DeepSpeed mixture-of-experts layers are not available"},
    // FSDP settings with no effect on what is computed here
    {"fsdp_use_orig_params", V, T, "the model always holds its original parameters here"},
    {"fsdp_version", V, T,
     "FSDP1 and FSDP2 are PyTorch's two implementations; this runtime has one (FSDP2's "
     "fsdp_reshard_after_forward maps onto its sharding strategy)"},
    {"fsdp_cpu_ram_efficient_loading", V, T, "Python's meta-device loading: the program builds its model itself"},
    {"fsdp_sync_module_states", V, T, "prepare() always copies process 0's parameters to every process"},
    {"fsdp_activation_checkpointing", V, R, "activation checkpointing is not implemented by the LibTorch runtime"},
    // Megatron-LM, and the tensor parallelism of v1.3-v1.9
    {"use_tp", S, R, "tensor parallelism is not available in the LibTorch runtime (data parallel and FSDP are)"},
    {"tp_size", V, R, "tensor parallelism is not available in the LibTorch runtime (1 is accepted)", "1"},
    {"use_megatron_lm", S, R, kMegatron},
    {"megatron_lm_tp_degree", V, R, kMegatron},
    {"megatron_lm_pp_degree", V, R, kMegatron},
    {"megatron_lm_num_micro_batches", V, R, kMegatron},
    {"megatron_lm_sequence_parallelism", V, R, kMegatron},
    {"megatron_lm_recompute_activations", V, R, kMegatron},
    {"megatron_lm_use_distributed_optimizer", V, R, kMegatron},
    {"megatron_lm_gradient_clipping", V, R, kMegatron},
    {"megatron_lm_use_custom_fsdp", V, R, kMegatron},
    {"megatron_lm_no_load_optim", V, R, kMegatron},
    {"megatron_lm_eod_mask_loss", V, R, kMegatron},
    {"megatron_lm_overlap_cpu_optimizer_d2h_h2d", V, R, kMegatron},
    {"megatron_lm_no_save_optim", V, R, kMegatron},
    {"megatron_lm_optimizer_cpu_offload", V, R, kMegatron},
    {"megatron_lm_use_precision_aware_optimizer", V, R, kMegatron},
    {"megatron_lm_decoder_last_pipeline_num_layers", V, R, kMegatron},
    {"megatron_lm_recompute_granularity", V, R, kMegatron},
    {"megatron_lm_recompute_method", V, R, kMegatron},
    {"megatron_lm_recompute_num_layers", V, R, kMegatron},
    {"megatron_lm_attention_backend", V, R, kMegatron},
    {"megatron_lm_expert_model_parallel_size", V, R, kMegatron, "1"},
    {"megatron_lm_context_parallel_size", V, R, kMegatron, "1"},
    {"megatron_lm_attention_dropout", V, R, kMegatron},
    {"megatron_lm_hidden_dropout", V, R, kMegatron},
    {"megatron_lm_attention_softmax_in_fp32", V, R, kMegatron},
    {"megatron_lm_expert_tensor_parallel_size", V, R, kMegatron, "1"},
    {"megatron_lm_calculate_per_token_loss", V, R, kMegatron},
    {"megatron_lm_use_rotary_position_embeddings", V, R, kMegatron},
    // ParallelismConfig (the reference's N-D parallelism, v1.10 on)
    {"use_parallelism_config", S, R, kParallelism},
    {"parallelism_config_dp_replicate_size", V, R, kParallelData, "1"},
    {"parallelism_config_dp_shard_size", V, R, kParallelData, "1"},
    {"parallelism_config_tp_size", V, R, kParallelSize, "1"},
    {"parallelism_config_cp_size", V, R, kParallelSize, "1"},
    {"parallelism_config_cp_backend", V, T, "only read with parallelism_config_cp_size above 1, which is refused"},
    {"parallelism_config_cp_comm_strategy", V, T,
     "only read with parallelism_config_cp_size above 1, which is refused"},
    {"parallelism_config_sp_size", V, R, kParallelSize, "1"},
    {"parallelism_config_sp_backend", V, T, "only read with parallelism_config_sp_size above 1, which is refused"},
    {"parallelism_config_sp_seq_length", V, T, "only read with parallelism_config_sp_size above 1, which is refused"},
    {"parallelism_config_sp_seq_length_is_variable", V, T,
     "only read with parallelism_config_sp_size above 1, which is refused"},
    {"parallelism_config_sp_attn_implementation", V, T,
     "only read with parallelism_config_sp_size above 1, which is refused"},
    // fp8 (refused as a precision by the plan)
    {"fp8_backend", V, T, kFp8},
    {"fp8_margin", V, T, kFp8},
    {"fp8_interval", V, T, kFp8},
    {"fp8_format", V, T, kFp8},
    {"fp8_amax_history_len", V, T, kFp8},
    {"fp8_amax_compute_algo", V, T, kFp8},
    {"fp8_override_linear_precision", V, T, kFp8},
    {"fp8_opt_level", V, T, kFp8},
    {"fp8_use_autocast_during_eval", S, T, kFp8},
    {"fp8_enable_fsdp_float8_all_gather", V, T, kFp8},
    {"fp8_pad_inner_dim", V, T, kFp8},
};

}  // namespace

const std::vector<CompatFlag>& compat_flags() { return kFlags; }

const CompatFlag* find_compat_flag(const std::string& name) {
  auto it = std::find_if(kFlags.begin(), kFlags.end(), [&](const CompatFlag& f) { return name == f.name; });
  return it == kFlags.end() ? nullptr : &*it;
}

bool asks_for_nothing(const std::string& value) {
  std::string v;
  for (char c : value) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v.empty() || v == "false" || v == "no" || v == "none" || v == "0" || v == "off";
}

bool asks_for_nothing(const CompatFlag& flag, const std::string& value) {
  return asks_for_nothing(value) || (flag.neutral && value == flag.neutral);
}

std::string refusal(const CompatFlag& flag, const std::string& where) {
  return (where.empty() ? "--" + std::string(flag.name) : where) + ": " + flag.why;
}

std::string tuning_warning(const std::vector<std::string>& names, const std::string& spell) {
  std::string text = "these settings change nothing with the LibTorch runtime (results are the same):";
  for (const auto& name : names) {
    const CompatFlag* f = find_compat_flag(name);
    text += "\n  " + spell + name + ": " + (f ? f->why : "not used");
  }
  return text;
}

}  // namespace accelerate::launcher
