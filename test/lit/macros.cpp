// Edits inside macro expansions are refused (with a warning) unless the whole range is a
// macro argument written in the file; nothing breaks.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags 2> %t.err
// RUN: %strip %t.cpp | FileCheck %s
// RUN: FileCheck %s --check-prefix=DIAG < %t.err
// (%accel-migrate also migrates its output again: it must re-parse and be a fixed
// point; see Inputs/fixpoint.sh.)
#include <torch/torch.h>

#define BACKWARD(x) x.backward()
#define STEP(body) body

int main() {
  torch::Tensor loss;
  BACKWARD(loss);
  // CHECK: BACKWARD(loss);
  STEP(loss.backward());
  // CHECK: STEP(accelerator.backward(loss));
  TORCH_CHECK(loss.item<double>() > 0, "positive");
  // CHECK: TORCH_CHECK(loss.item<double>() > 0, "positive");
  AT_ASSERT(torch::cuda::is_available());
  // CHECK: AT_ASSERT(torch::cuda::is_available());
  return 0;
}
// DIAG: macros.cpp:15:3: warning: not rewritten: the code is inside a macro expansion; migrate it by hand [accelerate-backward]
