// accelerate/logging.h in one process: levels, the one format, scopes on a process set by
// hand, ACCELERATE_LOG_LEVEL, warning_once. check_logging.py runs real processes.
#include <accelerate/core/error.h>
#include <accelerate/log/logging.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

using accelerate::get_logger;
using accelerate::LogLevel;
using accelerate::LogProcess;
using accelerate::LogScope;
namespace detail = accelerate::detail;

// Whatever the test's body printed on stderr.
template <typename F>
std::string stderr_of(F body) {
  testing::internal::CaptureStderr();
  body();
  return testing::internal::GetCapturedStderr();
}

// Each test sets the process it needs and puts the default back.
class Logging : public testing::Test {
 protected:
  void TearDown() override {
    detail::set_log_process(LogProcess{});
    unsetenv("ACCELERATE_LOG_LEVEL");
  }
};

TEST_F(Logging, LevelsFilterAndTheFormatIsOne) {
  const auto log = get_logger("logtest.levels", LogLevel::warning);
  EXPECT_EQ(stderr_of([&] {
              log.debug("d");
              log.info("i");
              log.warning("w");
              log.error("e");
              log.critical("c");
            }),
            "logtest.levels: warning: w\nlogtest.levels: error: e\nlogtest.levels: critical: c\n");
  log.set_level(LogLevel::debug);
  EXPECT_EQ(stderr_of([&] {
              log.debug("d");
              log.info("i");
            }),
            "logtest.levels: debug: d\nlogtest.levels: note: i\n");
  log.set_level(LogLevel::off);
  EXPECT_EQ(stderr_of([&] { log.critical("c"); }), "");
}

TEST_F(Logging, OneLoggerPerName) {
  const auto a = get_logger("logtest.shared", LogLevel::info);
  const auto b = get_logger("logtest.shared");
  b.set_level(LogLevel::error);
  EXPECT_EQ(a.level(), LogLevel::error);
  EXPECT_EQ(a.name(), "logtest.shared");
}

TEST_F(Logging, AnExceptionsOwnPrefixIsNotRepeated) {
  const auto log = get_logger("accelerate", LogLevel::info);
  EXPECT_EQ(stderr_of([&] { log.error("accelerate: all_reduce failed"); }), "accelerate: error: all_reduce failed\n");
  EXPECT_EQ(stderr_of([&] { log.error("accelerated: x"); }), "accelerate: error: accelerated: x\n");
}

TEST_F(Logging, LevelNamesInAnyCase) {
  EXPECT_EQ(accelerate::parse_log_level("DEBUG"), LogLevel::debug);
  EXPECT_EQ(accelerate::parse_log_level("Info"), LogLevel::info);
  EXPECT_EQ(accelerate::parse_log_level("WARN"), LogLevel::warning);
  EXPECT_EQ(accelerate::parse_log_level("warning"), LogLevel::warning);
  EXPECT_EQ(accelerate::parse_log_level("CRITICAL"), LogLevel::critical);
  try {
    accelerate::parse_log_level("verbose");
    FAIL() << "accepted 'verbose'";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::Config);
    EXPECT_NE(std::string(e.what()).find("debug, info, warning, error, critical or off"), std::string::npos);
  }
}

TEST_F(Logging, EnvironmentSetsTheLevelOfLoggersWithoutOne) {
  setenv("ACCELERATE_LOG_LEVEL", "ERROR", 1);
  EXPECT_EQ(get_logger("logtest.env").level(), LogLevel::error);
  EXPECT_EQ(get_logger("logtest.env.given", LogLevel::debug).level(), LogLevel::debug);  // the call wins
  setenv("ACCELERATE_LOG_LEVEL", "loud", 1);
  try {
    get_logger("logtest.env.bad");
    FAIL() << "accepted ACCELERATE_LOG_LEVEL=loud";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::Environment);
    EXPECT_NE(std::string(e.what()).find("ACCELERATE_LOG_LEVEL='loud'"), std::string::npos) << e.what();
  }
  unsetenv("ACCELERATE_LOG_LEVEL");
  EXPECT_EQ(get_logger("logtest.env.default").level(), LogLevel::info);
}

TEST_F(Logging, TheEnvironmentDoesNotUndoALevelSetSince) {
  // The launcher's -q sets its logger to warning; ACCELERATE_LOG_LEVEL=info must not undo it
  // at the next get_logger of that name.
  setenv("ACCELERATE_LOG_LEVEL", "info", 1);
  get_logger("logtest.quiet", LogLevel::warning);
  EXPECT_EQ(get_logger("logtest.quiet").level(), LogLevel::warning);
  get_logger("logtest.quiet").set_level(LogLevel::error);
  EXPECT_EQ(get_logger("logtest.quiet").level(), LogLevel::error);
}

TEST_F(Logging, ScopesOnAProcessOtherThanTheMainOne) {
  const auto log = get_logger("logtest.scope", LogLevel::info);
  detail::set_log_process(LogProcess{1, 2, {}});
  EXPECT_EQ(stderr_of([&] { log.info("main only"); }), "");
  EXPECT_EQ(stderr_of([&] { log.warning("everyone", LogScope::all_processes); }),
            "logtest.scope: warning: [process 1] everyone\n");
  // in_order needs the process group's barrier: none here.
  try {
    log.info("turns", LogScope::in_order);
    FAIL() << "in_order without a barrier";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::InvalidState);
  }
  detail::set_log_process(LogProcess{0, 2, {}});
  EXPECT_EQ(stderr_of([&] { log.info("main only"); }), "logtest.scope: note: main only\n");
}

TEST_F(Logging, InOrderTakesATurnPerProcess) {
  const auto log = get_logger("logtest.order", LogLevel::info);
  std::string events;
  detail::set_log_process(LogProcess{1, 3, [&] { events += "|"; }});
  const std::string out = stderr_of([&] { log.info("mine", LogScope::in_order); });
  events += "end";
  EXPECT_EQ(out, "logtest.order: note: [process 1] mine\n");
  EXPECT_EQ(events, "|||end");  // one barrier per process's turn: 0's, ours, 2's
  // A single process prints at once, with no barrier and no process marker.
  detail::set_log_process(LogProcess{0, 1, [&] { events += "!"; }});
  EXPECT_EQ(stderr_of([&] { log.info("alone", LogScope::in_order); }), "logtest.order: note: alone\n");
  EXPECT_EQ(events, "|||end");
}

TEST_F(Logging, WarningOncePerMessage) {
  const auto log = get_logger("logtest.once", LogLevel::info);
  EXPECT_EQ(stderr_of([&] {
              log.warning_once("a");
              log.warning_once("a");
              log.warning_once("b");
            }),
            "logtest.once: warning: a\nlogtest.once: warning: b\n");
}

TEST_F(Logging, TheProcessComesFromTheSourceUntilSet) {
  const auto log = get_logger("logtest.source", LogLevel::info);
  detail::set_log_process(std::nullopt);
  int asked = 0;
  detail::set_log_process_source([&] {
    ++asked;
    return LogProcess{1, 2, {}};
  });
  EXPECT_EQ(stderr_of([&] { log.info("main only"); }), "");
  EXPECT_EQ(stderr_of([&] { log.info("all", LogScope::all_processes); }), "logtest.source: note: [process 1] all\n");
  EXPECT_EQ(asked, 1);  // asked once
  detail::set_log_process(LogProcess{0, 2, {}});
  EXPECT_EQ(stderr_of([&] { log.info("main only"); }), "logtest.source: note: main only\n");
  detail::set_log_process_source({});
}

}  // namespace
