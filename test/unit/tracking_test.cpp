// Experiment tracking on one process (docs/tracking.md): what each built-in file holds, the
// errors a user meets, a program's own tracker, a second run appending. The launcher test
// (test/tracking) covers several processes and independent readers.
#include <accelerate/accelerate.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("accel_tracking_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

accelerate::AcceleratorOptions logging_to(const fs::path& dir, const std::string& log_with) {
  return accelerate::AcceleratorOptions().cpu(true).log_with(log_with).project_config(
      accelerate::ProjectConfiguration().logging_dir(dir.string()));
}

template <typename F>
accelerate::ErrorCode code_of(F&& call) {
  try {
    call();
  } catch (const accelerate::Error& e) {
    return e.code();
  }
  return accelerate::ErrorCode::Internal;  // nothing thrown
}

// Records what the Accelerator hands a tracker.
struct Recorder : accelerate::Tracker {
  std::vector<std::string>* seen;
  explicit Recorder(std::vector<std::string>* seen) : seen(seen) {}
  std::string name() const override { return "recorder"; }
  void start(const std::string& dir, const accelerate::TrackerConfig& config) override {
    seen->push_back("start " + fs::path(dir).filename().string() + " " + std::to_string(config.size()));
  }
  void log(const accelerate::LogValues& values, int64_t step, double) override {
    seen->push_back("log " + std::to_string(step) + " " + values.at(0).first);
  }
  void finish() override { seen->push_back("finish"); }
};

TEST(Tracking, CsvAndJsonLinesHoldEveryValueAndAppend) {
  const fs::path dir = fresh_dir("files");
  accelerate::Accelerator acc(logging_to(dir, "csv, jsonl"));
  for (int run = 0; run < 2; ++run) {
    acc.init_trackers("exp", {{"lr", 0.5}, {"name", "a,b"}});
    acc.log({{"loss", 0.25}, {"acc", 1.0}});
    acc.log({{"loss", 0.125}}, 7);
    acc.log({{"loss", 1e-20}});
    acc.end_training();
  }
  // 17 significant digits: 1e-20 is written as 9.9999999999999995e-21, which reads back exactly.
  const std::string rows = "0,{t},loss,0.25\n0,{t},acc,1\n7,{t},loss,0.125\n8,{t},loss,9.9999999999999995e-21\n";
  EXPECT_EQ(std::stod("9.9999999999999995e-21"), 1e-20);
  std::string csv = slurp(dir / "exp" / "metrics.csv");
  // Wall times vary: blank them out before comparing.
  std::string blanked;
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find(','), b = line.find(',', a + 1);
    blanked += (a == std::string::npos || line.rfind("step,", 0) == 0)
                   ? line + "\n"
                   : line.substr(0, a) + ",{t}" + line.substr(b) + "\n";
  }
  EXPECT_EQ(blanked, "step,wall_time,name,value\n" + rows + rows);
  EXPECT_NE(slurp(dir / "exp" / "config.csv").find(",name,\"a,b\"\n"), std::string::npos);
  const std::string jsonl = slurp(dir / "exp" / "metrics.jsonl");
  EXPECT_NE(jsonl.find("{\"step\":7,"), std::string::npos) << jsonl;
  EXPECT_NE(jsonl.find("\"values\":{\"loss\":0.25,\"acc\":1.0}"), std::string::npos) << jsonl;
  EXPECT_NE(slurp(dir / "exp" / "config.jsonl").find("\"config\":{\"lr\":0.5,\"name\":\"a,b\"}"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Tracking, ErrorsSayWhatToDo) {
  using accelerate::ErrorCode;
  const fs::path dir = fresh_dir("errors");
  EXPECT_EQ(code_of([&] { accelerate::parse_log_with("csv,wandb"); }), ErrorCode::Config);
  accelerate::Accelerator acc(logging_to(dir, "csv"));
  EXPECT_EQ(code_of([&] { acc.log({{"loss", 1.0}}); }), ErrorCode::InvalidState);
  EXPECT_EQ(code_of([&] { acc.init_trackers("a/b"); }), ErrorCode::InvalidArgument);
  acc.init_trackers("ok");
  EXPECT_EQ(code_of([&] { acc.init_trackers("ok"); }), ErrorCode::InvalidState);
  acc.end_training();
  accelerate::Accelerator no_dir(accelerate::AcceleratorOptions().cpu(true).log_with("jsonl"));
  if (std::getenv("ACCELERATE_PROJECT_DIR") == nullptr) {
    EXPECT_EQ(code_of([&] { no_dir.init_trackers("x"); }), ErrorCode::Config);
  }
  fs::remove_all(dir);
}

TEST(Tracking, ProgramTrackerGetsEveryCall) {
  const fs::path dir = fresh_dir("own");
  std::vector<std::string> seen;
  accelerate::Accelerator acc(logging_to(dir, ""));
  acc.add_tracker(std::make_unique<Recorder>(&seen));
  acc.init_trackers("mine", {{"k", 1}});
  EXPECT_NE(acc.get_tracker("recorder"), nullptr);
  EXPECT_EQ(acc.get_tracker("csv"), nullptr);
  acc.log({{"a", 1.0}});
  acc.log({{"b", 2.0}}, 5);
  acc.end_training();
  EXPECT_EQ(seen, (std::vector<std::string>{"start mine 1", "log 0 a", "log 5 b", "finish"}));
  fs::remove_all(dir);
}

}  // namespace
