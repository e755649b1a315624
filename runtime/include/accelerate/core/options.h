#pragma once
// Options for the Accelerator, LibTorch style (chained setters):
//   accelerate::Accelerator acc(accelerate::AcceleratorOptions().split_batches(true));
// An option the environment can set is a std::optional: left unset, it comes from the
// environment the launcher sets (ACCELERATE_MIXED_PRECISION, ACCELERATE_USE_CPU, ...), else
// from its default; set in code, it wins over the environment. Accelerator::options()
// returns them resolved (every optional set to the value in force), once, at construction:
//   acc.options().mixed_precision().value()  // "no", "fp16" or "bf16": what runs

#include <accelerate/core/fsdp_options.h>
#include <accelerate/core/project_config.h>

#include <torch/arg.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace accelerate {

struct AcceleratorOptions {
  // "no", "fp16", "bf16"; unset: ACCELERATE_MIXED_PRECISION, else "no".
  TORCH_ARG(std::optional<std::string>, mixed_precision);
  // >= 1; unset: ACCELERATE_GRADIENT_ACCUMULATION_STEPS, else 1.
  TORCH_ARG(std::optional<int64_t>, gradient_accumulation_steps);
  // Run on CPU even when CUDA is available; unset: ACCELERATE_USE_CPU, else false.
  TORCH_ARG(std::optional<bool>, cpu);
  // Data loader sharding, see docs/data-loader.md; unset: ACCELERATE_SPLIT_BATCHES (the
  // launcher's --split_batches), else false.
  TORCH_ARG(std::optional<bool>, split_batches);
  TORCH_ARG(bool, even_batches) = true;
  // Control runs of `accelerate verify` only (data_split.h, DataSplitOptions): not 0, each
  // batch's items are permuted. Unset: ACCELERATE_BATCH_ORDER_CONTROL, else 0 (off).
  TORCH_ARG(std::optional<uint64_t>, batch_order_control);
  // Process group backend, "gloo" or "nccl"; unset: nccl on CUDA, else gloo.
  TORCH_ARG(std::optional<std::string>, backend);
  // Rendezvous and collective timeout, > 0; unset: ACCELERATE_TIMEOUT_SECONDS, else 30 minutes.
  TORCH_ARG(std::optional<std::chrono::milliseconds>, timeout);
  // Gradient buckets, as PyTorch DDP: a small first bucket so communication starts early.
  TORCH_ARG(double, bucket_cap_mb) = 25.0;
  TORCH_ARG(double, first_bucket_cap_mb) = 1.0;
  // As DDP's broadcast_buffers: after each synchronised backward pass, buffers (e.g.
  // BatchNorm running statistics) are copied from process 0 so that all processes agree.
  TORCH_ARG(bool, broadcast_buffers) = true;
  // All-reduce through shared memory among the processes of each host (Gloo between
  // hosts); false on any process uses Gloo's TCP for everything. Unset: ACCELERATE_SHM,
  // else true. See docs/shared-memory.md.
  TORCH_ARG(std::optional<bool>, shared_memory);
  // Where save_state()/load_state() without a directory keep checkpoints (project_config.h);
  // an empty project_dir: ACCELERATE_PROJECT_DIR.
  TORCH_ARG(ProjectConfiguration, project_config) = ProjectConfiguration();
  // Trackers init_trackers() starts: "csv,jsonl,tensorboard", "all" or "" (none; tracking.h,
  // docs/tracking.md). Unset: ACCELERATE_LOG_WITH (accelerate launch --log_with), else none.
  TORCH_ARG(std::optional<std::string>, log_with);
  // Max gradient norm optimizer_step() clips to before stepping (as DeepSpeed's
  // gradient_clipping, which the launcher maps onto it; docs/launcher.md); 0 = no clipping.
  // Unset: ACCELERATE_GRADIENT_CLIPPING, else 0. A program's own clip_grad_norm_ calls are
  // unaffected.
  TORCH_ARG(std::optional<double>, gradient_clipping);
  // Sharded data parallel (docs/fsdp.md): set, it turns FSDP on (as Hugging Face's
  // fsdp_plugin); unset, ACCELERATE_USE_FSDP=true (accelerate launch --use_fsdp) does.
  // Fields left unset come from FSDP_* in the environment, else the defaults. Resolved
  // (options()): set, with every field decided, when FSDP is on; unset when it is off.
  TORCH_ARG(std::optional<FullyShardedDataParallelPlugin>, fsdp_plugin);
};

}  // namespace accelerate
