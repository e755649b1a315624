#pragma once
// The runtime's own way into an Accelerator (issue 30 item 2): what the public headers'
// templates (data_loader.h), the helpers (SyncBatchNorm), the runtime's tests and benchmarks
// need of it and users do not call. Kept out of the Accelerator's interface so that
// accelerator.h lists only the API; like every header under detail/, it may change without
// notice.

#include <cstdint>
#include <memory>

namespace accelerate {

class Accelerator;
struct LaunchSettings;
struct LoaderPosition;
struct LoaderState;

}  // namespace accelerate
namespace torch {
namespace optim {
class Optimizer;
}  // namespace optim
}  // namespace torch
namespace accelerate {

namespace detail {

struct ProcessState;

struct AcceleratorAccess {
  // The state the active prepared loader publishes (gather_for_metrics and accumulate()
  // read it); users read it through Accelerator::loader_state() const.
  static LoaderState& loader_state(Accelerator& acc);
  // Process group, store, ranks, collectives with timeout (<accelerate/comm/detail/process_state.h>).
  static ProcessState& process_state(Accelerator& acc);
  // The launch settings this Accelerator runs with, decided once (code over the launch
  // contract over the default; <accelerate/launch/detail/launch_settings.h>): the loaders and
  // save_state read split_batches here rather than copies of it.
  static const LaunchSettings& launch_settings(const Accelerator& acc);
  // Called by prepare_data_loader: the loader's position is saved with the state.
  static void track_data_loader(Accelerator& acc, std::shared_ptr<LoaderPosition> position);
  // process_share() took `real` rows of a batch of `step_real` (`padded`: a copied row): the
  // next backward pass is weighted by it (as a prepared loader's short batch) and counts it.
  static void note_share(Accelerator& acc, int64_t real, int64_t padded, int64_t step_real);
  // The real rows of the last process_share() when a tensor of `rows` rows is that share
  // (its row count matches), else -1 (batch_mean, <accelerate/metrics.h>).
  static int64_t share_real_rows(const Accelerator& acc, int64_t rows);
  // The work report (ACCELERATE_WORK_REPORT): an optimizer step taken (and its line of the
  // step trace, ACCELERATE_TRACE), and the report written (finished: the Accelerator is being
  // destroyed).
  static void count_optimizer_step(Accelerator& acc, const torch::optim::Optimizer& optimizer);
  // The step trace of steps the program took with optimizer.step() itself (not through
  // optimizer_step): a prepared optimizer whose parameters changed since the last look.
  static void trace_steps_taken(Accelerator& acc, const torch::optim::Optimizer* stepping = nullptr);
  // A prepared loader's epoch ended: traces the epoch's last step when tracing is on.
  static void loader_epoch_end(Accelerator& acc);
  // The Accelerator ends (destroyed, or alive at exit): the last step the program took
  // itself, when no later backward pass or epoch end saw it (a full-batch loop's last step).
  static void trace_last_step(Accelerator& acc);
  // One trace line for `optimizer`'s step, with the samples since the previous line: those
  // counted now, or (seen_later: found at the next backward pass) at the last backward pass.
  static void trace_line(Accelerator& acc, const std::vector<torch::Tensor>& params, bool seen_later);
  static void report_work(Accelerator& acc, bool finished);
  // Backward passes so far (the work report's count): process_share's order control numbers
  // each step's permutation with it.
  static int64_t backward_calls(const Accelerator& acc);
};

}  // namespace detail
}  // namespace accelerate
