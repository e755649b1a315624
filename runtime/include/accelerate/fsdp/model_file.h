#pragma once
// A saved model's tensors without the model's class, for tools that run outside training:
// `accelerate merge-weights` (a SHARDED_STATE_DICT checkpoint into one file) and
// `accelerate estimate-memory` (docs/fsdp.md, "Offline tools").

#include <torch/torch.h>

#include <string>
#include <vector>

namespace accelerate {

struct ModelTensor {
  std::string name;  // dotted, as named_parameters() names it: "encoder.0.weight"
  torch::Tensor value;
  bool is_buffer = false;
};

// Reads a model as save_model(), save() or save_state() wrote it: a FULL archive (also
// torch::save(model)'s), or SHARDED_STATE_DICT metadata (`fsdp_metadata.pt` of a
// save_model directory, `model_<i>.pt` of a checkpoint) whose shard files beside it are put
// back together, whatever number of processes wrote them. Throws CheckpointError naming
// the file.
std::vector<ModelTensor> read_model_file(const std::string& path);

// Writes the tensors as one FULL archive laid out as Module::save writes it (a nested
// archive per submodule, buffers marked as such), through a temporary file and a rename:
// torch::load(model, path) reads it in any program. Throws CheckpointError.
void write_model_file(const std::vector<ModelTensor>& tensors, const std::string& path);

}  // namespace accelerate
