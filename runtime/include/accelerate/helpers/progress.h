#pragma once
// A progress bar for training loops, in the manner of tqdm under Hugging Face Accelerate
// (`tqdm(..., disable=not accelerator.is_local_main_process)`), built in (docs/tracking.md):
//   accelerate::ProgressBar bar(steps, "train");
//   for (...) { ...; bar.set_postfix("loss=" + std::to_string(loss)); bar.update(); }
// It prints to stderr on the local main process only. On a terminal (or under `accelerate
// launch` run from one: ACCELERATE_TTY) it redraws one line with '\r' at most ten times a
// second; otherwise (a log file, CI) it prints a plain line at each tenth of the total and at
// least every 30 s, so a log gets a few lines rather than thousands of redraws.

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace accelerate {

class ProgressBar {
 public:
  // `total` steps (0: unknown, then no percentage or ETA); `desc` starts the line.
  explicit ProgressBar(int64_t total, std::string desc = "");
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();  // close()

  void update(int64_t steps = 1);
  // Text shown after the counts, e.g. "loss=0.25"; shown at the next redraw.
  void set_postfix(std::string text);
  // The final line (with a newline); later updates print nothing.
  void close();

  int64_t count() const { return n_; }
  // The line as it would be drawn now (for tests and custom output).
  std::string line() const;

 private:
  void draw(bool final);

  int64_t total_;
  std::string desc_;
  std::string postfix_;
  int64_t n_ = 0;
  bool enabled_;
  bool terminal_;
  bool closed_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  int64_t last_tenth_ = 0;
  std::ostream* out_;
};

}  // namespace accelerate
