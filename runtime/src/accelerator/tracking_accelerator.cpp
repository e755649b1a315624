// Experiment tracking on the Accelerator (docs/tracking.md): forwards to the TrackerRun it
// owns (tracking/tracker_run.h), with this process's role and the options' directories.
#include "tracking/tracker_run.h"

#include <accelerate/accelerator/accelerator.h>

namespace accelerate {

void Accelerator::add_tracker(std::unique_ptr<Tracker> tracker) { tracker_run().add(std::move(tracker)); }

void Accelerator::init_trackers(const std::string& project_name, const TrackerConfig& config) {
  tracker_run().start(options().log_with().value_or(""), is_main_process(), options().project_config(), project_name,
                      config);
}

void Accelerator::log(const LogValues& values, std::optional<int64_t> step) { tracker_run().log(values, step); }

void Accelerator::log_runtime_stats(std::optional<int64_t> step) {
  const GradSyncStats g = grad_sync_stats();
  LogValues values{{"grad_sync/passes", static_cast<double>(g.passes)},
                   {"grad_sync/buckets", static_cast<double>(g.buckets)},
                   {"grad_sync/launched_during_backward", static_cast<double>(g.launched_during_backward)},
                   {"grad_sync/launched_at_end", static_cast<double>(g.launched_at_end)},
                   {"grad_sync/copied_gradients", static_cast<double>(g.copied_gradients)},
                   {"grad_sync/copy_seconds", g.copy_seconds},
                   {"grad_sync/wait_seconds", g.wait_seconds}};
  const FsdpStats f = fsdp_stats();
  if (f.models > 0) {
    values.insert(values.end(), {{"fsdp/units", static_cast<double>(f.units)},
                                 {"fsdp/local_parameters", static_cast<double>(f.local_parameters)},
                                 {"fsdp/gathered_units", static_cast<double>(f.gathered_units)},
                                 {"fsdp/gathers", static_cast<double>(f.gathers)},
                                 {"fsdp/reductions", static_cast<double>(f.reductions)},
                                 {"fsdp/prefetches", static_cast<double>(f.prefetches)},
                                 {"fsdp/prefetch_hits", static_cast<double>(f.prefetch_hits)}});
  }
  log(values, step);
}

Tracker* Accelerator::get_tracker(const std::string& name) { return tracker_run().get(name); }

void Accelerator::end_training() { tracker_run().end(); }

}  // namespace accelerate
