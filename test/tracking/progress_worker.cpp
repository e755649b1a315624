// A loop with accelerate::ProgressBar and ordinary output in the middle; check_progress.py
// runs it under the launcher on a pseudo-terminal and into pipes. With --split, process 0
// draws its own bar as many programs do: the '\r' and the text in two writes, 20 ms apart.
#include <accelerate/accelerate.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

namespace {

void write_text(const std::string& text) {
  if (write(STDERR_FILENO, text.data(), text.size()) < 0) std::perror("write");
}

// The '\r' alone first, then the bar: the launcher must show the bar when it comes.
int split_writes(const accelerate::Accelerator& acc, int steps) {
  for (int i = 1; i <= steps; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (acc.process_index() != 0) continue;
    write_text("\r");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    write_text("train: " + std::to_string(i) + "/" + std::to_string(steps) + " split");
  }
  if (acc.process_index() == 0) write_text("\n");
  std::cout << "progress_worker " << acc.process_index() << " done" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  accelerate::Accelerator acc;
  const int steps = 6;
  if (argc > 1 && std::strcmp(argv[1], "--split") == 0) return split_writes(acc, steps);
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
