#pragma once
// Experiment tracking, as Hugging Face Accelerate's: the Accelerator's init_trackers(),
// log() and end_training() (accelerator.h) write through these trackers, on the main
// process only (docs/tracking.md). Built in: "csv", "jsonl", "tensorboard"; a program can
// add its own with Accelerator::add_tracker.

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace accelerate {

// A hyperparameter's value for init_trackers: a number or a text.
class ConfigValue {
 public:
  template <typename T, typename = std::enable_if_t<std::is_arithmetic<T>::value>>
  ConfigValue(T number) : value_(static_cast<double>(number)) {}  // NOLINT(google-explicit-constructor)
  ConfigValue(std::string text) : value_(std::move(text)) {}      // NOLINT(google-explicit-constructor)
  ConfigValue(const char* text) : value_(std::string(text)) {}    // NOLINT(google-explicit-constructor)
  bool is_number() const { return std::holds_alternative<double>(value_); }
  double number() const { return std::get<double>(value_); }
  const std::string& text() const { return std::get<std::string>(value_); }

 private:
  std::variant<double, std::string> value_;
};

// {{"lr", 0.01}, {"optimizer", "SGD"}}: in the order given.
using TrackerConfig = std::vector<std::pair<std::string, ConfigValue>>;
// {{"loss", 0.25}, {"accuracy", 0.91}}: in the order given.
using LogValues = std::vector<std::pair<std::string, double>>;

// One destination of logged values. The Accelerator calls start once (init_trackers), log
// for every Accelerator::log, finish once (end_training or the Accelerator's end); only on
// the main process.
class Tracker {
 public:
  virtual ~Tracker() = default;
  virtual std::string name() const = 0;
  // `dir` is logging_dir/project_name, made before the call.
  virtual void start(const std::string& dir, const TrackerConfig& config) = 0;
  // `wall_time`: seconds since the Unix epoch, as TensorBoard records it.
  virtual void log(const LogValues& values, int64_t step, double wall_time) = 0;
  virtual void finish() = 0;
};

// The built-in trackers' names, for log_with: csv, jsonl, tensorboard. Inline, so that the
// launcher (which links none of the runtime) checks --log_with against the same list.
inline std::vector<std::string> builtin_trackers() { return {"csv", "jsonl", "tensorboard"}; }
// A built-in tracker by name; an accelerate::Error (Config) naming the known ones otherwise.
std::unique_ptr<Tracker> make_tracker(const std::string& name);
// "csv,tensorboard", "all" (every built-in one) or "" (none) -> names; an unknown name is an
// accelerate::Error (Config).
std::vector<std::string> parse_log_with(const std::string& spec);

}  // namespace accelerate
