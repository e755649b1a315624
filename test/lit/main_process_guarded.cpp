// Output already inside `if (<accelerator>.is_main_process())` (or `is_local_main_process()`,
// `process_index() == 0`, or a conjunction with one) of the same function stays as it is. The else-branch of such an
// if, and a lambda defined inside it (which may run anywhere), are guarded.
// RUN: %check-rule
#include <torch/torch.h>
#include <accelerate/accelerate.h>
#include <cstdio>

// A logging macro: its invocation is the whole statement, so the invocation is guarded.
#define LOG_STEP(step) std::printf("step %d\n", (step))

int main() {
  accelerate::Accelerator acc;
  if (acc.is_main_process()) {
    std::puts("main only");
  } else {
    std::puts("others");
  }
  // CHECK: if (acc.is_main_process()) {
  // CHECK-NEXT: std::puts("main only");
  // CHECK-NEXT: } else {
  // CHECK-NEXT: if (acc.is_main_process()) {
  // CHECK-NEXT: std::puts("others");
  // CHECK-NEXT: }
  // CHECK-NEXT: }
  if (acc.process_index() == 0)
    std::puts("index zero");
  // CHECK-NEXT: if (acc.process_index() == 0)
  // CHECK-NEXT: std::puts("index zero");
  if (acc.is_local_main_process()) {
    auto report = [] {
      std::puts("from a lambda");
    };
    report();
  }
  // CHECK-NEXT: if (acc.is_local_main_process()) {
  // CHECK-NEXT: auto report = [] {
  // CHECK-NEXT: if (accelerate::Accelerator::current().is_main_process()) {
  // CHECK-NEXT: std::puts("from a lambda");
  // CHECK-NEXT: }
  // CHECK-NEXT: };
  // Only a condition that holds on the main process alone guards: not under `!` or `||`.
  bool verbose = acc.process_index() < 4;
  if (!acc.is_main_process()) std::puts("not main");
  // CHECK: if (!acc.is_main_process()) { if (acc.is_main_process()) { std::puts("not main"); } }
  if (acc.is_main_process() || verbose) std::puts("main or verbose");
  // CHECK: if (acc.is_main_process() || verbose) { if (acc.is_main_process()) { std::puts("main or verbose"); } }
  if (verbose && (acc.is_main_process())) std::puts("verbose main");
  // CHECK: {{^}}  if (verbose && (acc.is_main_process())) std::puts("verbose main");
  if (0 == acc.process_index()) std::puts("index zero again");
  // CHECK: {{^}}  if (0 == acc.process_index()) std::puts("index zero again");
  LOG_STEP(1);
  // CHECK: if (acc.is_main_process()) {
  // CHECK-NEXT: LOG_STEP(1);
  // CHECK-NEXT: }
  if (acc.process_index() > 0) LOG_STEP(2);
  // CHECK: if (acc.process_index() > 0) { if (acc.is_main_process()) { LOG_STEP(2); } }
  return 0;
}
