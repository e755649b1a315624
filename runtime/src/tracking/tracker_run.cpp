// An Accelerator's experiment tracking (tracker_run.h): which trackers start, where they
// write, and that only the main process writes.
#include "tracking/tracker_run.h"

#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/error.h>

#include <chrono>
#include <filesystem>

namespace accelerate {
namespace detail {
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
                std::string("accelerate: init_trackers: the trackers need a directory: "
                            "AcceleratorOptions().project_config(ProjectConfiguration().logging_dir(\"runs\")) or "
                            "project_dir(...), or accelerate launch --project_dir runs (") +
                    env_names::kProjectDir + ")");
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

void TrackerRun::add(std::unique_ptr<Tracker> tracker) {
  if (!tracker) throw Error(ErrorCode::InvalidArgument, "accelerate: add_tracker: the tracker is null");
  if (started_) {
    throw Error(ErrorCode::InvalidState,
                "accelerate: add_tracker after init_trackers: add trackers before init_trackers starts them");
  }
  added_.push_back(std::move(tracker));
}

void TrackerRun::start(const std::string& log_with, bool main, const ProjectConfiguration& project,
                       const std::string& project_name, const TrackerConfig& config) {
  if (started_) {
    throw Error(ErrorCode::InvalidState,
                "accelerate: init_trackers called twice; call end_training() before starting another run");
  }
  // Names are checked on every process, so that a typo fails the whole job alike.
  std::vector<std::unique_ptr<Tracker>> trackers;
  for (const std::string& name : parse_log_with(log_with)) trackers.push_back(make_tracker(name));
  for (auto& added : added_) trackers.push_back(std::move(added));
  added_.clear();
  if (main && !trackers.empty()) {
    const fs::path dir = run_directory(project, project_name);
    for (auto& tracker : trackers) {
      tracker->start(dir.string(), config);
      active_.push_back(std::move(tracker));
    }
  }
  started_ = true;
  next_step_ = 0;
}

void TrackerRun::log(const LogValues& values, std::optional<int64_t> step) {
  if (!started_) {
    throw Error(ErrorCode::InvalidState,
                "accelerate: log() before init_trackers(): nothing would be recorded; call "
                "accelerator.init_trackers(\"project\") first");
  }
  const int64_t at = step.value_or(next_step_);
  next_step_ = at + 1;
  if (active_.empty()) return;
  const double wall_time = now_seconds();
  for (auto& tracker : active_) tracker->log(values, at, wall_time);
}

Tracker* TrackerRun::get(const std::string& name) {
  for (auto& tracker : active_) {
    if (tracker->name() == name) return tracker.get();
  }
  return nullptr;
}

void TrackerRun::end() {
  for (auto& tracker : active_) tracker->finish();
  active_.clear();
  started_ = false;
}

}  // namespace detail
}  // namespace accelerate
