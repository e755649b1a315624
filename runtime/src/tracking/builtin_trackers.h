#pragma once
// The built-in trackers (make_tracker in tracking.h picks one by name).

#include <accelerate/tracking/tracking.h>

#include <memory>
#include <string>

namespace accelerate {
namespace detail {

std::unique_ptr<Tracker> make_csv_tracker();
std::unique_ptr<Tracker> make_jsonl_tracker();
std::unique_ptr<Tracker> make_tensorboard_tracker();

// Appends {"wall_time": ..., "config": {...}} as one line to dir/file (jsonl and tensorboard
// keep their run's configuration so).
void append_config_jsonl(const std::string& dir, const std::string& file, const TrackerConfig& config,
                         const std::string& tracker);

}  // namespace detail
}  // namespace accelerate
