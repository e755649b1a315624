#pragma once
// Training state on disk: what Accelerator::save_state / load_state / register_for_checkpointing
// (accelerator.h) take and throw. Layout, crash safety and restarts: docs/checkpointing.md.

#include <accelerate/core/error.h>  // CheckpointError

#include <torch/serialize/archive.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace accelerate {

// An object saved with every checkpoint (register_for_checkpointing): anything with
//   void save(torch::serialize::OutputArchive&) const;  void load(torch::serialize::InputArchive&);
// modules, optimizers, the GradScaler, your own counters.
struct CheckpointObject {
  std::function<void(torch::serialize::OutputArchive&)> save;
  std::function<void(torch::serialize::InputArchive&)> load;
};

namespace detail {
template <typename T, typename = void>
struct is_checkpointable : std::false_type {};
template <typename T>
struct is_checkpointable<
    T, std::void_t<decltype(std::declval<const T&>().save(std::declval<torch::serialize::OutputArchive&>())),
                   decltype(std::declval<T&>().load(std::declval<torch::serialize::InputArchive&>()))>>
    : std::true_type {};
}  // namespace detail

// The loop counters of a training program, ready to register, so that a resumed run starts
// its loops where the checkpoint was taken:
//   accelerate::TrainingProgress progress;
//   accelerator.register_for_checkpointing(progress);
//   for (int64_t epoch = progress.epoch; epoch < num_epochs; ++epoch) { ...; progress.epoch = epoch + 1; }
struct TrainingProgress {
  int64_t epoch = 0;  // the epoch to run (or finish) next
  int64_t step = 0;   // steps taken, for your own schedule (save every N steps, logging)

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
};

}  // namespace accelerate
