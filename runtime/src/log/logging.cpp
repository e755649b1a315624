// accelerate/logging.h on spdlog: one stderr sink shared by every logger (spdlog's sink holds
// the lock, so lines of different threads do not interleave), one pattern, and our own level
// word ("note" for info, as in the runtime's messages before this logger existed and in a
// compiler's diagnostics). Compiled without LibTorch's include directories (runtime/CMakeLists:
// accelerate_log): a LibTorch wheel carries its own {fmt}, which must not meet Debian's here.
#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/error.h>
#include <accelerate/log/logging.h>

#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace accelerate {

struct Logger::State {
  std::string name;
  std::atomic<LogLevel> level{LogLevel::info};
  std::shared_ptr<spdlog::logger> out;
  std::mutex once_mutex;
  std::set<std::pair<std::string, int>> said_once;
};

namespace {

const char* level_word(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "note";
    case spdlog::level::warn:
      return "warning";
    case spdlog::level::err:
      return "error";
    default:
      return "critical";
  }
}

// %* in the pattern: the level as this project words it.
class LevelWord : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
    const std::string_view word = level_word(msg.level);
    dest.append(word.data(), word.data() + word.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<LevelWord>(); }
};

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::debug:
      return spdlog::level::debug;
    case LogLevel::info:
      return spdlog::level::info;
    case LogLevel::warning:
      return spdlog::level::warn;
    case LogLevel::error:
      return spdlog::level::err;
    case LogLevel::critical:
      return spdlog::level::critical;
    case LogLevel::off:
      break;
  }
  return spdlog::level::off;
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Logger::State>> loggers;
  std::shared_ptr<spdlog::sinks::sink> sink = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto pattern = std::make_unique<spdlog::pattern_formatter>();
    pattern->add_flag<LevelWord>('*').set_pattern("%n: %*: %v");
    sink->set_formatter(std::move(pattern));
    return sink;
  }();
  std::optional<LogProcess> process;
  std::function<LogProcess()> source;
  std::optional<LogProcess> from_source;  // the source's answer, asked once
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: loggers may be used by static destructors
  return *r;
}

LogProcess current_process() {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (r.process) return *r.process;
  if (!r.from_source) r.from_source = r.source ? r.source() : LogProcess{};
  return *r.from_source;
}

std::optional<LogLevel> level_named(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::map<std::string, LogLevel> names = {
      {"debug", LogLevel::debug},    {"info", LogLevel::info},   {"warning", LogLevel::warning},
      {"warn", LogLevel::warning},   {"error", LogLevel::error}, {"critical", LogLevel::critical},
      {"fatal", LogLevel::critical}, {"off", LogLevel::off}};
  const auto it = names.find(t);
  return it == names.end() ? std::nullopt : std::optional<LogLevel>(it->second);
}

constexpr const char* kLevelNames = "debug, info, warning, error, critical or off, in any case";

}  // namespace

LogLevel parse_log_level(const std::string& text) {
  if (auto level = level_named(text)) return *level;
  throw Error(ErrorCode::Config, "accelerate: '" + text + "' is not a log level (" + kLevelNames + ")");
}

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
    case LogLevel::critical:
      return "critical";
    case LogLevel::off:
      break;
  }
  return "off";
}

Logger get_logger(const std::string& name, std::optional<LogLevel> level) {
  // Checked at every call (a bad value is an error wherever it is met), applied only to a
  // logger made now: a level set since (set_level, the launcher's -q) is not undone by a
  // later get_logger of the same name.
  std::optional<LogLevel> from_env;
  if (const char* env = std::getenv(env_names::kLogLevel); env != nullptr && *env != '\0') {
    from_env = level_named(env);
    if (!from_env) {
      throw LaunchEnvError(std::string("accelerate: ") + env_names::kLogLevel + "='" + env + "' is not a log level (" +
                           kLevelNames + ")");
    }
  }
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  auto& state = r.loggers[name];
  if (!state) {
    state = std::make_shared<Logger::State>();
    state->name = name;
    state->out = std::make_shared<spdlog::logger>(name, r.sink);
    state->out->set_level(spdlog::level::trace);  // the level is ours (State::level); spdlog prints what we pass
    state->level = level.value_or(from_env.value_or(LogLevel::info));
  } else if (level) {
    state->level = *level;
  }
  return Logger(state);
}

bool Logger::enabled(LogLevel level) const { return level != LogLevel::off && level >= state_->level.load(); }
LogLevel Logger::level() const { return state_->level.load(); }
void Logger::set_level(LogLevel level) const { state_->level = level; }
const std::string& Logger::name() const { return state_->name; }

void Logger::log(LogLevel level, const std::string& message, LogScope scope) const {
  if (!enabled(level)) return;
  // An exception's what() already begins with "accelerate: " (error.h's convention): the
  // pattern names the logger once.
  const std::string prefix = state_->name + ": ";
  const std::string text = message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  const LogProcess process = current_process();
  if (scope == LogScope::main_process || process.count <= 1) {
    if (process.index == 0) state_->out->log(to_spdlog(level), text);
    return;
  }
  const std::string line = "[process " + std::to_string(process.index) + "] " + text;
  if (scope == LogScope::all_processes) {
    state_->out->log(to_spdlog(level), line);
    return;
  }
  if (!process.wait_for_everyone) {
    throw Error(ErrorCode::InvalidState, "accelerate: " + state_->name + ": in_order logging on " +
                                             std::to_string(process.count) +
                                             " processes needs the Accelerator (its process group): create it first");
  }
  for (int64_t turn = 0; turn < process.count; ++turn) {
    if (turn == process.index) state_->out->log(to_spdlog(level), line);
    process.wait_for_everyone();
  }
}

void Logger::warning_once(const std::string& message, LogScope scope) const {
  {
    const std::lock_guard<std::mutex> lock(state_->once_mutex);
    if (!state_->said_once.emplace(message, static_cast<int>(scope)).second) return;
  }
  warning(message, scope);
}

namespace detail {
void set_log_process(std::optional<LogProcess> process) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.process = std::move(process);
}

void set_log_process_source(std::function<LogProcess()> source) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.source = std::move(source);
  r.from_source.reset();
}

const Logger& runtime_log() {
  static const Logger logger = get_logger("accelerate");
  return logger;
}
}  // namespace detail

}  // namespace accelerate
