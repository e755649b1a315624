// A program with nothing to migrate comes out byte for byte the same.
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags 2> %t.err
// RUN: diff %s %t.cpp
// RUN: FileCheck %s < %t.err
// CHECK: nothing to migrate
#include <torch/torch.h>

int add(int a, int b) { return a + b; }

int main() {
  torch::Device cpu(torch::kCPU);
  torch::Tensor t = torch::ones({2}, cpu);
  return add(1, 2);
}
