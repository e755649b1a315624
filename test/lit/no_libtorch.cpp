// A program that sees no LibTorch is left exactly as it is (no Accelerator, no guarded
// printing), with a note; --check finds nothing in it.
// RUN: %accel-migrate %s -o %t.cpp 2> %t.err
// RUN: diff %s %t.cpp
// RUN: FileCheck %s < %t.err
// RUN: %accel-migrate --check %s > %t.out 2> /dev/null
// RUN: count 0 < %t.out
#include <cstdio>

int main() {
  std::printf("hello\n");
  return 0;
}
// CHECK: note: {{.*}}no_libtorch.cpp: sees no LibTorch (no torch namespace after its includes): left as it is
// CHECK: no_libtorch.cpp: already migrated or nothing to migrate, 0 warnings
