// Option resolution (resolve_options.h): code over the launch contract over the defaults.
#include "launch/resolve_options.h"

#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/fsdp_options.h>
#include <accelerate/core/precision_type.h>

#include <torch/cuda.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace accelerate {
namespace detail {
namespace {

// Whether the environment (ACCELERATE_SHM) allows shared memory; throws on a bad value.
bool shm_enabled_by_environment() {
  const char* v = std::getenv(env_names::kShm);
  if (v == nullptr || *v == '\0') return true;
  if (const std::optional<bool> on = env_bool(v)) return *on;
  throw LaunchEnvError(std::string("accelerate: ") + env_names::kShm + "='" + v + "' is not one of " + kEnvBoolValues);
}

// The program's mixed_precision text is read here, on its way in (the contract's value
// arrives typed); fp8 from either is refused with its reason before the rendezvous.
PrecisionType resolve_precision(const std::optional<std::string>& code, const LaunchSettings& contract) {
  if (!code) return trainable_precision(contract.mixed_precision.value_or(PrecisionType::No));
  const std::optional<PrecisionType> type = precision_from_string(*code);
  if (!type) {
    throw Error(ErrorCode::Config, "accelerate: mixed_precision='" + *code + "' is not one of " +
                                       precision_choices(false) + "; pass one of them (or leave it unset to use " +
                                       env_names::kMixedPrecision + " / --mixed_precision)");
  }
  return trainable_precision(*type);
}

}  // namespace

ResolvedOptions resolve_options(AcceleratorOptions o, const LaunchEnv& env) {
  LaunchSettings settings;
  settings.mixed_precision = resolve_precision(o.mixed_precision(), env.settings);
  settings.split_batches = o.split_batches().value_or(env.settings.split_batches);
  // options() shows the one spelling of what runs ("BF16" given reads "bf16").
  o.mixed_precision(to_string(*settings.mixed_precision));
  o.split_batches(settings.split_batches);
  o.gradient_accumulation_steps(o.gradient_accumulation_steps().value_or(
      env.gradient_accumulation_steps > 0 ? env.gradient_accumulation_steps : 1));
  if (*o.gradient_accumulation_steps() < 1) {
    throw Error(ErrorCode::Config, "accelerate: gradient_accumulation_steps must be >= 1, got " +
                                       std::to_string(*o.gradient_accumulation_steps()) +
                                       " (1 synchronises gradients every step)");
  }
  o.cpu(o.cpu().value_or(env.use_cpu));
  o.batch_order_control(o.batch_order_control().value_or(env.batch_order_control));
  o.backend(o.backend().value_or(!*o.cpu() && torch::cuda::is_available() ? "nccl" : "gloo"));
  o.timeout(o.timeout().value_or(env.timeout.value_or(std::chrono::minutes(30))));
  if (o.timeout()->count() <= 0) {
    throw Error(ErrorCode::Config, "accelerate: timeout must be > 0, got " + std::to_string(o.timeout()->count()) +
                                       " ms; leave it unset for " + env_names::kTimeoutSeconds + ", else 30 minutes");
  }
  o.shared_memory(o.shared_memory().value_or(shm_enabled_by_environment()));
  ProjectConfiguration project = o.project_config();
  if (project.project_dir().empty()) o.project_config(project.project_dir(env.project_dir));
  o.log_with(o.log_with().value_or(env.log_with));
  o.gradient_clipping(o.gradient_clipping().value_or(env.gradient_clipping.value_or(0.0)));
  if (!(*o.gradient_clipping() >= 0)) {
    throw Error(ErrorCode::Config, "accelerate: gradient_clipping must be >= 0 (0: no clipping), got " +
                                       std::to_string(*o.gradient_clipping()));
  }
  const FsdpSettings fsdp = resolve_fsdp(o.fsdp_plugin(), env.use_fsdp, env.fsdp);
  if (fsdp.enabled) {
    o.fsdp_plugin(FullyShardedDataParallelPlugin()
                      .sharding_strategy(fsdp.sharding_strategy)
                      .auto_wrap_policy(fsdp.auto_wrap_policy)
                      .min_num_params(fsdp.min_num_params)
                      .transformer_layer_cls_to_wrap(fsdp.transformer_layer_cls_to_wrap)
                      .offload_params(fsdp.offload_params)
                      .state_dict_type(fsdp.state_dict_type)
                      .backward_prefetch(fsdp.backward_prefetch)
                      .forward_prefetch(fsdp.forward_prefetch));
  }
  return {o, settings};
}

}  // namespace detail
}  // namespace accelerate
