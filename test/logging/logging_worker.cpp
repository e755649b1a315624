// A program that logs as a user's would (accelerate/logging.h), before and after its
// Accelerator exists; test/logging/check_logging.py runs it on 2 real processes.
#include <accelerate/accelerate.h>

#include <chrono>
#include <string>
#include <thread>

int main() {
  using accelerate::LogScope;
  const accelerate::Logger log = accelerate::get_logger("worker");
  log.info("before the accelerator: main process only");
  log.info("before the accelerator: every process", LogScope::all_processes);
  accelerate::Accelerator acc;
  const std::string me = std::to_string(acc.process_index());
  log.info("after: main process only");
  log.debug("a debug line");
  log.warning("a warning");
  // Process 0 takes its turn late: without the turns' barrier process 1's line would come
  // first (check_logging.py reads both processes' lines from one file, in write order).
  if (acc.process_index() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(700));
  log.info("in turn from process " + me, LogScope::in_order);
  log.warning_once("said once");
  log.warning_once("said once");
  acc.wait_for_everyone();
  return 0;
}
