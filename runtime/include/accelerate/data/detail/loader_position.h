#pragma once
// Internal (detail/), kept in namespace accelerate.
// Where a prepared data loader stands in its epochs, shared between the loader (which keeps
// it current) and the Accelerator (which saves it with every checkpoint and, on load_state,
// leaves a position for the loader's next begin() to resume from).

#include <cstdint>
#include <optional>
#include <vector>

namespace accelerate {

struct LoaderPosition {
  uint64_t epoch = 0;            // the epoch in progress (in_epoch), else the last one begun
  uint64_t next_epoch = 0;       // the epoch the next begin() draws (set_epoch changes it)
  bool in_epoch = false;         // begun and its end not reached yet
  uint64_t batches = 0;          // batches of the epoch in progress this process has received
                                 // (counting those skipped by skip_first_batches)
  std::optional<uint64_t> seed;  // the seeded random sampler's seed; nullopt for others
  // The epoch's order, for samplers that draw it from the default generator (RandomSampler):
  // it cannot be drawn again on resume, since the generator has moved on since.
  std::vector<int64_t> order;
  int64_t num_processes = 1;
  // split_batches is not kept here: save_state records the Accelerator's own
  // (AcceleratorAccess::launch_settings), the one every loader it prepared splits by.

  // The epoch to resume in and the batches of it already consumed by this process.
  uint64_t resume_epoch() const { return in_epoch ? epoch : next_epoch; }
  uint64_t resume_batches() const { return in_epoch ? batches : 0; }

  // Left by load_state; the next begin() starts `epoch` `skip` batches in, with `seed`.
  struct Resume {
    uint64_t epoch = 0;
    uint64_t skip = 0;
    std::optional<uint64_t> seed;
    std::vector<int64_t> order;  // the resumed epoch's order (empty: draw it as usual)
  };
  std::optional<Resume> resume;
};

}  // namespace accelerate
