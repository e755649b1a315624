#pragma once
// What save_state writes and load_state restores besides the Accelerator's own optimizers
// and schedulers: kept in preparation order, since a checkpoint matches objects by position.
#include <accelerate/checkpoint.h>
#include <accelerate/detail/loader_position.h>
#include <accelerate/project_config.h>

#include <torch/nn/module.h>

#include <memory>
#include <vector>

namespace accelerate {
namespace detail {

struct CheckpointRegistry {
  ProjectConfiguration project;                          // options' copy; iteration counts saves
  std::vector<torch::nn::Module*> models;                // prepared models, in order
  std::vector<CheckpointObject> objects;                 // register_for_checkpointing, in order
  std::vector<std::shared_ptr<LoaderPosition>> loaders;  // prepared data loaders, in order
};

}  // namespace detail
}  // namespace accelerate
