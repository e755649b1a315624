// Experiment tracking on the Accelerator (docs/tracking.md): which trackers start, where
// they write, and that only the main process writes.
#include "accelerator/accelerator_impl.h"

#include <chrono>
#include <filesystem>

namespace accelerate {
namespace {

namespace fs = std::filesystem;

// The run's directory: logging_dir (else project_dir) / project_name.
fs::path run_directory(const ProjectConfiguration& project, const std::string& project_name) {
  if (project_name.empty() || project_name.find('/') != std::string::npos || project_name == "." ||
      project_name == "..") {
    throw Error(ErrorCode::InvalidArgument, "accelerate: init_trackers: project name '" + project_name +
                                                "' must be one non-empty directory name (no '/')");
  }
  const std::string root = !project.logging_dir().empty() ? project.logging_dir() : project.project_dir();
  if (root.empty()) {
    throw Error(ErrorCode::Config,
                "accelerate: init_trackers: the trackers need a directory: "
                "AcceleratorOptions().project_config(ProjectConfiguration().logging_dir(\"runs\")) or "
                "project_dir(...), or accelerate launch --project_dir runs (ACCELERATE_PROJECT_DIR)");
  }
  const fs::path dir = fs::path(root) / project_name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(ErrorCode::Config, "accelerate: init_trackers: cannot make " + dir.string() + ": " + ec.message());
  }
  return dir;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void Accelerator::add_tracker(std::unique_ptr<Tracker> tracker) {
  if (!tracker) throw Error(ErrorCode::InvalidArgument, "accelerate: add_tracker: the tracker is null");
  if (impl_->tracking.started) {
    throw Error(ErrorCode::InvalidState,
                "accelerate: add_tracker after init_trackers: add trackers before init_trackers starts them");
  }
  impl_->tracking.added.push_back(std::move(tracker));
}

void Accelerator::init_trackers(const std::string& project_name, const TrackerConfig& config) {
  auto& t = impl_->tracking;
  if (t.started) {
    throw Error(ErrorCode::InvalidState,
                "accelerate: init_trackers called twice; call end_training() before starting another run");
  }
  // Names are checked on every process, so that a typo fails the whole job alike.
  std::vector<std::unique_ptr<Tracker>> trackers;
  for (const std::string& name : parse_log_with(impl_->options.log_with().value_or(""))) {
    trackers.push_back(make_tracker(name));
  }
  for (auto& added : t.added) trackers.push_back(std::move(added));
  t.added.clear();
  if (is_main_process() && !trackers.empty()) {
    const fs::path dir = run_directory(impl_->options.project_config(), project_name);
    for (auto& tracker : trackers) {
      tracker->start(dir.string(), config);
      t.active.push_back(std::move(tracker));
    }
  }
  t.started = true;
  t.next_step = 0;
}

void Accelerator::log(const LogValues& values, std::optional<int64_t> step) {
  auto& t = impl_->tracking;
  if (!t.started) {
    throw Error(ErrorCode::InvalidState,
                "accelerate: log() before init_trackers(): nothing would be recorded; call "
                "accelerator.init_trackers(\"project\") first");
  }
  const int64_t at = step.value_or(t.next_step);
  t.next_step = at + 1;
  if (t.active.empty()) return;
  const double wall_time = now_seconds();
  for (auto& tracker : t.active) tracker->log(values, at, wall_time);
}

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
                                 {"fsdp/reductions", static_cast<double>(f.reductions)}});
  }
  log(values, step);
}

Tracker* Accelerator::get_tracker(const std::string& name) {
  for (auto& tracker : impl_->tracking.active) {
    if (tracker->name() == name) return tracker.get();
  }
  return nullptr;
}

void Accelerator::end_training() {
  auto& t = impl_->tracking;
  for (auto& tracker : t.active) tracker->finish();
  t.active.clear();
  t.started = false;
}

}  // namespace accelerate
