// Tracker names for log_with / --log_with / ACCELERATE_LOG_WITH.
#include <accelerate/core/error.h>
#include <accelerate/tracking/tracking.h>

#include "tracking/builtin_trackers.h"

#include <algorithm>
#include <sstream>

namespace accelerate {

std::unique_ptr<Tracker> make_tracker(const std::string& name) {
  if (name == "csv") return detail::make_csv_tracker();
  if (name == "jsonl") return detail::make_jsonl_tracker();
  if (name == "tensorboard") return detail::make_tensorboard_tracker();
  throw Error(ErrorCode::Config, "accelerate: log_with: unknown tracker '" + name +
                                     "'; the built-in ones are csv, jsonl, tensorboard (or all); "
                                     "add others with Accelerator::add_tracker");
}

std::vector<std::string> parse_log_with(const std::string& spec) {
  std::vector<std::string> names;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    const std::vector<std::string> add = item == "all" ? builtin_trackers() : std::vector<std::string>{item};
    for (const std::string& name : add) {
      make_tracker(name);  // throws for an unknown name, before anything is started
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

}  // namespace accelerate
