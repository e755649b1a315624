// C++20 in the flags: parsed as C++17 when the file allows it (LibTorch's headers need
// that with clang 16), and said so; a file that needs C++20 is parsed as C++20.
// RUN: %accel-migrate %s -o %t.cpp -- -std=c++20 %stub-flags 2> %t.err
// RUN: FileCheck %s < %t.err
// RUN: %strip %t.cpp | FileCheck %s --check-prefix=OUT
// RUN: %accel-migrate %S/Inputs/needs_cxx20.cpp -o %t20.cpp -- -std=c++20 %stub-flags 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: FileCheck %s --check-prefix=OUT < %t20.cpp
// CHECK: note: {{.*}}cxx20.cpp: parsed as C++17 although the flags ask for -std=c++20
// NEEDS: parsed with -std=c++20 as the flags ask
// OUT: accelerator.backward(loss);
#include <torch/torch.h>
int main() {
  torch::Tensor loss;
  loss.backward();
}
