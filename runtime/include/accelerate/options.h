#pragma once
// Options for the Accelerator, LibTorch style (chained setters):
//   accelerate::Accelerator acc(accelerate::AcceleratorOptions().split_batches(true));
// Every option left at its default is taken from the environment the launcher sets
// (ACCELERATE_MIXED_PRECISION, ACCELERATE_GRADIENT_ACCUMULATION_STEPS, ACCELERATE_USE_CPU, ...).

#include <accelerate/fsdp_options.h>
#include <accelerate/project_config.h>

#include <torch/arg.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace accelerate {

struct AcceleratorOptions {
  // "no", "fp16", "bf16"; empty: ACCELERATE_MIXED_PRECISION, else "no".
  TORCH_ARG(std::string, mixed_precision) = "";
  // 0: ACCELERATE_GRADIENT_ACCUMULATION_STEPS, else 1.
  TORCH_ARG(int64_t, gradient_accumulation_steps) = 0;
  // Run on CPU even when CUDA is available (also ACCELERATE_USE_CPU=true).
  TORCH_ARG(bool, cpu) = false;
  // Data loader sharding, see docs/data-loader.md.
  TORCH_ARG(bool, split_batches) = false;
  TORCH_ARG(bool, even_batches) = true;
  // Process group backend: "" picks gloo on CPU and nccl on CUDA.
  TORCH_ARG(std::string, backend) = "";
  // Rendezvous and collective timeout. 0: ACCELERATE_TIMEOUT_SECONDS, else 30 minutes.
  TORCH_ARG(std::chrono::milliseconds, timeout) = std::chrono::milliseconds(0);
  // Gradient buckets, as PyTorch DDP: a small first bucket so communication starts early.
  TORCH_ARG(double, bucket_cap_mb) = 25.0;
  TORCH_ARG(double, first_bucket_cap_mb) = 1.0;
  // As DDP's broadcast_buffers: after each synchronised backward pass, buffers (e.g.
  // BatchNorm running statistics) are copied from process 0 so that all processes agree.
  TORCH_ARG(bool, broadcast_buffers) = true;
  // All-reduce through shared memory among the processes of each host (Gloo between
  // hosts); false (or ACCELERATE_SHM=0 on any process) uses Gloo's TCP for everything.
  // See docs/shared-memory.md.
  TORCH_ARG(bool, shared_memory) = true;
  // Where save_state()/load_state() without a directory keep checkpoints (project_config.h).
  TORCH_ARG(ProjectConfiguration, project_config) = ProjectConfiguration();
  // Sharded data parallel (docs/fsdp.md): set, it turns FSDP on (as Hugging Face's
  // fsdp_plugin); unset, ACCELERATE_USE_FSDP=true (accelerate launch --use_fsdp) does.
  // Fields left unset come from FSDP_* in the environment, else the defaults.
  TORCH_ARG(std::optional<FullyShardedDataParallelPlugin>, fsdp_plugin);
};

}  // namespace accelerate
