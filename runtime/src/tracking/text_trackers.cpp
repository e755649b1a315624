// The "csv" and "jsonl" trackers: plain files any tool reads. Both append, so a resumed run
// adds to what the first one wrote (nothing is overwritten), and flush after every log call,
// so a crash keeps every value logged before it.
#include <accelerate/core/error.h>

#include "tracking/builtin_trackers.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace accelerate {
namespace detail {
namespace {

namespace fs = std::filesystem;

std::ofstream open_append(const fs::path& path, const std::string& tracker) {
  std::ofstream out(path, std::ios::app);
  if (!out) {
    throw Error(ErrorCode::Config, "accelerate: the " + tracker + " tracker cannot write " + path.string() +
                                       "; check the logging directory (ProjectConfiguration().logging_dir, "
                                       "project_dir or accelerate launch --project_dir)");
  }
  return out;
}

// Enough digits that the value reads back exactly.
std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// RFC 4180 quoting where needed: names may hold commas or quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::ordered_json config_json(const TrackerConfig& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : config) {
    out[name] = value.is_number() ? nlohmann::ordered_json(value.number()) : nlohmann::ordered_json(value.text());
  }
  return out;
}

// metrics.csv: step,wall_time,name,value (one row per value, so new names need no new
// column); config.csv: wall_time,name,value for each init_trackers.
class CsvTracker : public Tracker {
 public:
  std::string name() const override { return "csv"; }
  void start(const std::string& dir, const TrackerConfig& config) override {
    const fs::path metrics = fs::path(dir) / "metrics.csv", conf = fs::path(dir) / "config.csv";
    const bool new_metrics = !fs::exists(metrics) || fs::file_size(metrics) == 0;
    const bool new_config = !fs::exists(conf) || fs::file_size(conf) == 0;
    out_ = open_append(metrics, name());
    if (new_metrics) out_ << "step,wall_time,name,value\n";
    out_.flush();
    std::ofstream c = open_append(conf, name());
    if (new_config) c << "wall_time,name,value\n";
    const double now = static_cast<double>(std::time(nullptr));
    for (const auto& [key, value] : config) {
      c << exact(now) << ',' << csv_field(key) << ','
        << (value.is_number() ? exact(value.number()) : csv_field(value.text())) << '\n';
    }
  }
  void log(const LogValues& values, int64_t step, double wall_time) override {
    for (const auto& [key, value] : values) {
      out_ << step << ',' << exact(wall_time) << ',' << csv_field(key) << ',' << exact(value) << '\n';
    }
    out_.flush();
  }
  void finish() override { out_.close(); }

 private:
  std::ofstream out_;
};

// metrics.jsonl: {"step": 3, "wall_time": ..., "values": {"loss": 0.25}} per log call (a
// value that is not finite is null: JSON has no NaN); config.jsonl: one line per
// init_trackers, {"wall_time": ..., "config": {...}}.
class JsonlTracker : public Tracker {
 public:
  std::string name() const override { return "jsonl"; }
  void start(const std::string& dir, const TrackerConfig& config) override {
    out_ = open_append(fs::path(dir) / "metrics.jsonl", name());
    append_config_jsonl(dir, "config.jsonl", config, name());
  }
  void log(const LogValues& values, int64_t step, double wall_time) override {
    nlohmann::ordered_json v = nlohmann::ordered_json::object();
    for (const auto& [key, value] : values) v[key] = value;
    out_ << nlohmann::ordered_json{{"step", step}, {"wall_time", wall_time}, {"values", v}}.dump() << '\n';
    out_.flush();
  }
  void finish() override { out_.close(); }

 private:
  std::ofstream out_;
};

}  // namespace

void append_config_jsonl(const std::string& dir, const std::string& file, const TrackerConfig& config,
                         const std::string& tracker) {
  std::ofstream c = open_append(fs::path(dir) / file, tracker);
  const nlohmann::ordered_json line = {{"wall_time", static_cast<double>(std::time(nullptr))},
                                       {"config", config_json(config)}};
  c << line.dump() << '\n';
}

std::unique_ptr<Tracker> make_csv_tracker() { return std::make_unique<CsvTracker>(); }
std::unique_ptr<Tracker> make_jsonl_tracker() { return std::make_unique<JsonlTracker>(); }

}  // namespace detail
}  // namespace accelerate
