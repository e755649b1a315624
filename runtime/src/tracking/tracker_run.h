#pragma once
// An Accelerator's experiment tracking (docs/tracking.md): the trackers added before
// init_trackers, those started by it (main process only), and the step the next log()
// records at. The Accelerator's init_trackers / log / end_training forward here.
#include <accelerate/core/project_config.h>
#include <accelerate/tracking/tracking.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

class TrackerRun {
 public:
  // Throws accelerate::Error for a null tracker or once started.
  void add(std::unique_ptr<Tracker> tracker);
  // Starts log_with's trackers and the added ones in project's logging_dir (else
  // project_dir) / project_name; only where `main` (the others check the names alike).
  void start(const std::string& log_with, bool main, const ProjectConfiguration& project,
             const std::string& project_name, const TrackerConfig& config);
  void log(const LogValues& values, std::optional<int64_t> step);
  Tracker* get(const std::string& name);
  void end();

 private:
  std::vector<std::unique_ptr<Tracker>> added_;   // add_tracker, not started yet
  std::vector<std::unique_ptr<Tracker>> active_;  // started (main process only)
  bool started_ = false;
  int64_t next_step_ = 0;
};

}  // namespace detail
}  // namespace accelerate
