// A file that does not compile: the compiler's errors, "not migrated", a non-zero exit,
// and no output (an existing output file is left untouched).
// RUN: rm -f %t.out && not %accel-migrate %s -o %t.out -- %stub-flags 2> %t.err
// RUN: FileCheck %s < %t.err
// RUN: test ! -e %t.out
// RUN: echo keep > %t.keep && not %accel-migrate %s -o %t.keep -- %stub-flags 2> /dev/null
// RUN: FileCheck %s --check-prefix=KEEP < %t.keep
// In place: the file and no backup.
// RUN: cp %s %t.inplace.cpp && not %accel-migrate -i %t.inplace.cpp -- %stub-flags 2> /dev/null
// RUN: diff %s %t.inplace.cpp
// RUN: test ! -e %t.inplace.cpp.orig
// A missing file.
// RUN: not %accel-migrate %t.missing.cpp -o %t.m -- %stub-flags 2>&1 | FileCheck %s --check-prefix=MISSING
// CHECK: errors.cpp:[[@LINE+6]]:3: error: use of undeclared identifier 'undeclared_function'
// CHECK: accel-migrate: not migrated: {{.*}}errors.cpp
// KEEP: keep
// MISSING: not migrated
#include <torch/torch.h>
int main() {
  undeclared_function();
  torch::Tensor loss;
  loss.backward();
}
