#pragma once
// Levelled logging, like Hugging Face Accelerate's accelerate.logging.get_logger: a named
// logger whose messages print on the main process only unless asked, at a level taken from
// the call, else ACCELERATE_LOG_LEVEL, else info. The runtime's and the launcher's own
// messages go through it too (logger "accelerate", "accelerate launch", ...), so one
// variable quiets or details all of them. One format, a compiler's:
//
//   NAME: LEVEL: MESSAGE                      (main_process, or a single process)
//   NAME: LEVEL: [process R] MESSAGE          (all_processes / in_order on N > 1 processes,
//                                             as the reference's "[RANK R] MESSAGE")
//
// LEVEL is debug, note (info), warning, error or critical. Written with spdlog (Debian's
// libspdlog); this header does not include it, so a program using it needs nothing more.
// No LibTorch here: the launcher uses it too. See docs/runtime-api.md (Logging).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace accelerate {

enum class LogLevel { debug, info, warning, error, critical, off };

// Which processes print a message. main_process (the default, as in the reference): process
// 0 only. all_processes: every process, each line naming its process. in_order: every
// process, one after another (a barrier after each process's turn, so every process must
// make the call; it needs the Accelerator's process group on more than one process).
enum class LogScope { main_process, all_processes, in_order };

// "debug", "info", "warning" (or "warn"), "error", "critical", "off", in any case (the
// reference's names: DEBUG, INFO, ...). Anything else throws a ConfigError naming them.
LogLevel parse_log_level(const std::string& text);
const char* to_string(LogLevel level);  // "debug", "info", ...

class Logger {
 public:
  void debug(const std::string& message, LogScope scope = LogScope::main_process) const {
    log(LogLevel::debug, message, scope);
  }
  void info(const std::string& message, LogScope scope = LogScope::main_process) const {
    log(LogLevel::info, message, scope);
  }
  void warning(const std::string& message, LogScope scope = LogScope::main_process) const {
    log(LogLevel::warning, message, scope);
  }
  void error(const std::string& message, LogScope scope = LogScope::main_process) const {
    log(LogLevel::error, message, scope);
  }
  void critical(const std::string& message, LogScope scope = LogScope::main_process) const {
    log(LogLevel::critical, message, scope);
  }
  // The same message (text and scope) prints once per logger in this process.
  void warning_once(const std::string& message, LogScope scope = LogScope::main_process) const;
  void log(LogLevel level, const std::string& message, LogScope scope = LogScope::main_process) const;

  bool enabled(LogLevel level) const;
  LogLevel level() const;
  // Shared by every Logger of the same name, as Python's logging.getLogger(name) is.
  void set_level(LogLevel level) const;
  const std::string& name() const;

  struct State;  // logging.cpp

 private:
  friend Logger get_logger(const std::string& name, std::optional<LogLevel> level);
  explicit Logger(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// The logger called `name`, made on the first call. `level` sets its level; without one a new
// logger takes ACCELERATE_LOG_LEVEL (a bad value throws a ConfigError) or info.
Logger get_logger(const std::string& name, std::optional<LogLevel> level = std::nullopt);
inline Logger get_logger(const std::string& name, const std::string& level) {
  return get_logger(name, parse_log_level(level));
}

// Who this process is, for the scopes above.
struct LogProcess {
  int64_t index = 0;
  int64_t count = 1;
  std::function<void()> wait_for_everyone;  // empty: in_order on count > 1 throws
};

namespace detail {
// The Accelerator's process group sets the process (with its barrier) while it exists and
// clears it at its end. Until then the process is what `source` says (libaccelerate reads
// the launch environment; the launcher, which has no processes of its own, sets none: 0 of 1).
void set_log_process(std::optional<LogProcess> process);
void set_log_process_source(std::function<LogProcess()> source);
// The runtime's own logger, "accelerate" (made once).
const Logger& runtime_log();
}  // namespace detail

}  // namespace accelerate
