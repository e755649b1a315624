#pragma once
// Where a run keeps its checkpoints, as Hugging Face Accelerate's ProjectConfiguration:
//   accelerate::AcceleratorOptions().project_config(
//       accelerate::ProjectConfiguration().project_dir("runs/exp1").total_limit(3))
// save_state() / load_state() without a directory then use
// project_dir/checkpoints/checkpoint_<iteration> (docs/checkpointing.md).

#include <torch/arg.h>

#include <cstdint>
#include <optional>
#include <string>

namespace accelerate {

struct ProjectConfiguration {
  // Root of the run's files. Empty: ACCELERATE_PROJECT_DIR (accelerate launch --project_dir).
  TORCH_ARG(std::string, project_dir) = "";
  // As in the reference. save_state()/load_state() without a directory always name
  // checkpoints automatically; an explicit directory is used as given either way.
  TORCH_ARG(bool, automatic_checkpoint_naming) = false;
  // Keep at most this many automatically named checkpoints (the oldest are deleted once a
  // newer one is complete); nullopt keeps every one.
  TORCH_ARG(std::optional<int64_t>, total_limit) = std::nullopt;
  // The number of the next automatically named checkpoint. load_state of checkpoint_<n>
  // sets it to n + 1, so a resumed run continues the numbering.
  TORCH_ARG(int64_t, iteration) = 0;
  // Where init_trackers() writes (logging_dir/project_name). Empty: project_dir.
  TORCH_ARG(std::string, logging_dir) = "";
};

}  // namespace accelerate
