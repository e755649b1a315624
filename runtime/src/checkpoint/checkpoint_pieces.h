#pragma once
// The pieces of a checkpoint, each one file: how a model, an optimizer, a scheduler, a
// registered object and one process's own state (random generators, data loader positions,
// step counter) are written and read back. File names are the on-disk layout.
#include "checkpoint/checkpoint_fs.h"

#include <accelerate/data/detail/loader_position.h>

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {
namespace ckpt {

std::string model_file(size_t i);        // model_<i>.pt (loadable with torch::load(model, ...))
std::string optimizer_file(size_t i);    // optimizer_<i>.pt
std::string scheduler_file(size_t i);    // scheduler_<i>.pt
std::string object_file(size_t i);       // custom_checkpoint_<i>.pt
std::string process_file(int64_t rank);  // process_<rank>.pt
inline constexpr const char* kScalerFile = "scaler.pt";

// Writes the archive to `path` and flushes it to disk; returns its size in bytes.
uint64_t write_archive(torch::serialize::OutputArchive& archive, const fs::path& path);
// Reads an archive with its tensors placed on `device`. Throws CheckpointError naming the file.
void read_archive(torch::serialize::InputArchive& archive, const fs::path& path, const torch::Device& device);

// Loads saved parameters and buffers into `module` in place (the prepared tensors keep
// their identity, device, gradient hooks and optimizer state); a missing entry or a
// different shape or dtype is a CheckpointError naming it.
void load_module(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& where);

// An LR scheduler's position (LibTorch keeps it in the protected step_count_).
void save_scheduler(torch::optim::LRScheduler& scheduler, torch::serialize::OutputArchive& archive);
void load_scheduler(torch::optim::LRScheduler& scheduler, torch::serialize::InputArchive& archive);

// One data loader's position as saved: the epoch to resume in and the batches of it this
// process had received, with what is needed to convert it to another number of processes.
struct LoaderRecord {
  uint64_t epoch = 0;
  uint64_t batches = 0;
  std::optional<uint64_t> seed;
  std::vector<int64_t> order;  // the epoch in progress's order, when drawn from the generator
  int64_t num_processes = 1;
  bool split_batches = false;
};

// What each process saves for itself in process_<rank>.pt.
struct ProcessRecord {
  int64_t rank = 0;
  int64_t num_processes = 1;
  int64_t step = 0;
  torch::Tensor cpu_rng;                // the default CPU generator's state
  std::vector<torch::Tensor> cuda_rng;  // each CUDA device's default generator, when available
  std::vector<LoaderRecord> loaders;
};

// `split_batches` is the Accelerator's (every loader it prepared splits by it), recorded
// with each loader so that resume_point can convert its position.
ProcessRecord capture_process(int64_t rank, int64_t num_processes, int64_t step,
                              const std::vector<std::shared_ptr<LoaderPosition>>& loaders, bool split_batches);
void save_process(const ProcessRecord& record, torch::serialize::OutputArchive& archive);
ProcessRecord load_process(torch::serialize::InputArchive& archive);
// Sets this process's random generators to the recorded states.
void restore_generators(const ProcessRecord& record);

// Where a loader saved by `record` resumes on `num_processes` processes: the same global
// position, which must fall on a whole number of this run's batches (else CheckpointError).
LoaderPosition::Resume resume_point(const LoaderRecord& record, int64_t num_processes, size_t index);

}  // namespace ckpt
}  // namespace detail
}  // namespace accelerate
