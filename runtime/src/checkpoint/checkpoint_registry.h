#pragma once
// What save_state writes and load_state restores besides the Accelerator's prepared models,
// optimizers and schedulers (accelerator/prepared_objects.h), and where numbered checkpoints
// go: kept in registration order, since a checkpoint matches objects by position.
#include <accelerate/checkpoint/checkpoint.h>
#include <accelerate/core/project_config.h>
#include <accelerate/data/detail/loader_position.h>

#include <memory>
#include <vector>

namespace accelerate {
namespace detail {

struct CheckpointRegistry {
  ProjectConfiguration project;                          // options' copy; iteration counts saves
  std::vector<CheckpointObject> objects;                 // register_for_checkpointing, in order
  std::vector<std::shared_ptr<LoaderPosition>> loaders;  // prepared data loaders, in order
};

}  // namespace detail
}  // namespace accelerate
