// A training-like run that logs through every built-in tracker; check_tracking.py starts it
// under the launcher (1 and 2 processes) and reads what it wrote with independent readers.
//   tracking_worker            log_with and the directory come from the launcher
#include <accelerate/accelerate.h>

#include <iostream>

int main() {
  accelerate::Accelerator acc;
  acc.init_trackers("demo", {{"lr", 0.125}, {"optimizer", "SGD, momentum \"0.9\""}, {"epochs", 3}});
  for (int step = 0; step < 3; ++step) {
    // process_index tells the reader which process wrote a value: only 0 may.
    acc.log({{"loss", 1.0 / (step + 1)}, {"written_by", static_cast<double>(acc.process_index())}});
  }
  acc.log({{"loss", 0.0625}}, 10);  // an explicit step; the next default one follows it
  acc.log({{"last", 1.5}});
  acc.log_runtime_stats(20);
  acc.end_training();
  std::cout << "tracking_worker " << acc.process_index() << " done" << std::endl;
  return 0;
}
