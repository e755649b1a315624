// A loop with accelerate::ProgressBar and ordinary output in the middle; check_progress.py
// runs it under the launcher on a pseudo-terminal and into pipes.
#include <accelerate/accelerate.h>

#include <chrono>
#include <iostream>
#include <thread>

int main() {
  accelerate::Accelerator acc;
  const int steps = 6;
  accelerate::ProgressBar bar(steps, "train");
  for (int i = 0; i < steps; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    bar.set_postfix("rank=" + std::to_string(acc.process_index()));
    bar.update();
    if (i == 2) std::cout << "midway line from process " << acc.process_index() << std::endl;
  }
  bar.close();
  std::cout << "progress_worker " << acc.process_index() << " done" << std::endl;
  return 0;
}
