#pragma once
// Model state under FSDP (docs/fsdp.md, "State dicts"):
//   FULL     one LibTorch archive, laid out exactly as Module::save writes it (nested
//            archives per submodule), with every parameter's full value: torch::load(model,
//            path) reads it in a program without the runtime.
//   SHARDED  a metadata archive (written by process 0: the units' layouts, by parameter name
//            and shape, the world size, and the replicated tensors: frozen parameters and
//            buffers) and one archive per process with its part of every unit's flat
//            parameter. Any number of processes loads it: each reads the parts of the saved
//            flat parameters that overlap its own shards (resharding), by parameter name, so
//            a different wrap policy loads too. A model whose parameters differ in name or
//            shape is refused with the differences named.
#include "fsdp/sharded_model.h"

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {
namespace fsdp_state {

// Full values of the parameters a sharded model's units hold, keyed by TensorImpl, on the
// CPU in the shards' dtype: filled on process 0 only. Collective.
std::map<const void*, torch::Tensor> gather_full(const ShardedModel& model, bool main);

// Writes `model` as Module::save does, taking each tensor's value from `full` when present.
void write_full(const torch::nn::Module& model, const std::map<const void*, torch::Tensor>& full,
                torch::serialize::OutputArchive& archive);

// Reads a FULL archive into the model (sharded or not). `where` names the file in errors.
void read_full(torch::nn::Module& model, const ShardedModel* sharded, torch::serialize::InputArchive& archive,
               const std::string& where);

using ShardPath = std::function<std::string(int64_t rank)>;

// SHARDED: process 0 writes `meta`, every process `shard(rank)`. A model that is not sharded
// is written as one unit held by one process. Each writes atomically; the caller makes the
// processes agree that all files are there.
void write_sharded(const torch::nn::Module& model, const ShardedModel* sharded, int64_t rank, int64_t world,
                   const std::string& meta, const ShardPath& shard);
// Reads a SHARDED state (any saved and current number of processes) into the model.
void read_sharded(torch::nn::Module& model, const ShardedModel* sharded, const std::string& meta,
                  const ShardPath& shard);

// Writes the archive to a temporary name and renames it: a reader never sees half a file.
void save_atomically(torch::serialize::OutputArchive& archive, const std::string& path);
// Reads the archive at `path`; both throw CheckpointError naming the file.
void load_archive(torch::serialize::InputArchive& archive, const std::string& path);

// A tensor of a saved model, by dotted name ("encoder.0.weight"), for offline tools.
struct SavedTensor {
  std::string name;
  torch::Tensor value;
  bool is_buffer = false;
};
using SavedTensors = std::vector<SavedTensor>;

// Every tensor of a SHARDED state, full, without the model: the units' parameters put back
// together from the saved processes' files, then the replicated ones (model_file.h).
SavedTensors read_sharded_values(const std::string& meta, const ShardPath& shard);

// Whether the archive at `path` (or already read) is SHARDED metadata (else a FULL archive).
bool is_sharded_metadata(const std::string& path);
bool is_sharded_metadata(torch::serialize::InputArchive& archive);

}  // namespace fsdp_state
}  // namespace detail
}  // namespace accelerate
