// accelerate::ProgressBar (progress.h): where it prints and how often.
#include <accelerate/accelerator/accelerator.h>
#include <accelerate/core/detail/env_names.h>
#include <accelerate/helpers/progress.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace accelerate {
namespace {

using Clock = std::chrono::steady_clock;

// "1:05" or "1:02:05".
std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

bool on_terminal() {
  const char* tty = std::getenv(env_names::kTty);  // set by accelerate launch run from a terminal
  return (tty != nullptr && std::string(tty) == "1") || isatty(STDERR_FILENO) != 0;
}

// The local main process prints; every process when no Accelerator exists (a plain program).
bool prints_here() { return !Accelerator::exists() || Accelerator::current().is_local_main_process(); }

}  // namespace

ProgressBar::ProgressBar(int64_t total, std::string desc)
    : total_(total < 0 ? 0 : total),
      desc_(std::move(desc)),
      enabled_(prints_here()),
      terminal_(on_terminal()),
      start_(Clock::now()),
      last_draw_(Clock::now()),
      out_(&std::cerr) {
  if (enabled_ && terminal_) draw(false);
}

ProgressBar::~ProgressBar() {
  try {
    close();
  } catch (...) {  // a destructor must not throw; the stream's state is all that can fail
  }
}

std::string ProgressBar::line() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(n_) / elapsed : 0.0;
  char buf[96];
  std::string text = desc_.empty() ? "" : desc_ + ": ";
  if (total_ > 0) {
    const double frac = std::min(1.0, static_cast<double>(n_) / static_cast<double>(total_));
    const int width = 20, filled = static_cast<int>(frac * width);
    std::snprintf(buf, sizeof(buf), "%3d%% |", static_cast<int>(frac * 100));
    text += buf + std::string(filled, '#') + std::string(width - filled, ' ') + "| ";
    text += std::to_string(n_) + "/" + std::to_string(total_);
    const double eta = rate > 0 ? static_cast<double>(total_ - n_) / rate : NAN;
    text += " [" + clock_text(elapsed) + "<" + clock_text(eta);
  } else {
    text += std::to_string(n_) + " [" + clock_text(elapsed);
  }
  std::snprintf(buf, sizeof(buf), ", %.2f it/s]", rate);
  text += buf;
  if (!postfix_.empty()) text += " " + postfix_;
  return text;
}

void ProgressBar::draw(bool final) {
  if (terminal_) {
    // Pad with spaces so that a shorter redraw leaves no tail of the previous one. One
    // string, one write: std::cerr flushes after every <<, and a reader (the launcher) that
    // got the '\r' alone would show an empty bar until the next redraw.
    *out_ << ("\r" + line() + "   " + (final ? "\n" : "")) << std::flush;
  } else {
    *out_ << (line() + '\n') << std::flush;
  }
  last_draw_ = Clock::now();
}

void ProgressBar::update(int64_t steps) {
  if (closed_) return;
  n_ += steps;
  if (!enabled_) return;
  const auto now = Clock::now();
  if (terminal_) {
    if (now - last_draw_ >= std::chrono::milliseconds(100)) draw(false);
    return;
  }
  const int64_t tenth = total_ > 0 ? n_ * 10 / total_ : 0;
  if (tenth > last_tenth_ || now - last_draw_ >= std::chrono::seconds(30)) {
    last_tenth_ = tenth;
    if (total_ == 0 || n_ < total_) draw(false);  // the last line is close()'s
  }
}

void ProgressBar::set_postfix(std::string text) { postfix_ = std::move(text); }

void ProgressBar::close() {
  if (closed_) return;
  closed_ = true;
  if (enabled_) draw(true);
}

}  // namespace accelerate
