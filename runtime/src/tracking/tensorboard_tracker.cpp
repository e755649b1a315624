// The "tensorboard" tracker: an event file TensorBoard reads (`tensorboard --logdir
// LOGGING_DIR`), one per run, named as TensorFlow names them so that TensorBoard finds it.
// The configuration goes to tensorboard_config.jsonl beside it (one line per run, as the
// jsonl tracker writes its own): the hparams plugin's summaries are not written.
#include <accelerate/core/error.h>

#include "tracking/builtin_trackers.h"
#include "tracking/tensorboard_events.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

namespace accelerate {
namespace detail {
namespace {

namespace fs = std::filesystem;

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

class TensorBoardTracker : public Tracker {
 public:
  std::string name() const override { return "tensorboard"; }
  void start(const std::string& dir, const TrackerConfig& config) override {
    const double now = static_cast<double>(std::time(nullptr));
    // events.out.tfevents.<seconds>.<host>.<pid>: a new file per run, never an old one.
    path_ = fs::path(dir) / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." + host_name() +
                             "." + std::to_string(getpid()));
    out_.open(path_, std::ios::binary | std::ios::app);
    if (!out_) {
      throw Error(ErrorCode::Config, "accelerate: the tensorboard tracker cannot write " + path_.string() +
                                         "; check the logging directory");
    }
    write(tensorboard::version_event(now));
    append_config_jsonl(dir, "tensorboard_config.jsonl", config, name());
  }
  void log(const LogValues& values, int64_t step, double wall_time) override {
    write(tensorboard::scalars_event(values, step, wall_time));
  }
  void finish() override { out_.close(); }

 private:
  void write(const std::string& event) {
    const std::string rec = tensorboard::record(event);
    out_.write(rec.data(), static_cast<std::streamsize>(rec.size()));
    out_.flush();
  }
  fs::path path_;
  std::ofstream out_;
};

}  // namespace

std::unique_ptr<Tracker> make_tensorboard_tracker() { return std::make_unique<TensorBoardTracker>(); }

}  // namespace detail
}  // namespace accelerate
