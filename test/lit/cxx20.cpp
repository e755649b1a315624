// C++20 in the flags. Clang 16 (LibTorch 1.13's headers do not parse as C++20 with it)
// parses as C++17 first and says so; clang 19 parses as the flags ask first. Either falls
// back to the other standard when the first parse fails, and says so.
// RUN: %accel-migrate %s -o %t.cpp -- -std=c++20 %stub-flags 2> %t.err
// RUN: FileCheck %s --check-prefix=%std-first < %t.err
// RUN: %strip %t.cpp | FileCheck %s --check-prefix=OUT
// CXX17FIRST: note: {{.*}}cxx20.cpp: parsed as C++17 although the flags ask for -std=c++20
// ASKEDFIRST-NOT: note:
// ASKEDFIRST: cxx20.cpp: {{[0-9]+}} rewrites
// ASKEDFIRST-NOT: note:
// OUT: accelerator.backward(loss);
//
// A file that needs C++20 (an abbreviated function template).
// RUN: %accel-migrate %S/Inputs/needs_cxx20.cpp -o %t20.cpp -- -std=c++20 %stub-flags 2>&1 | FileCheck %s --check-prefix=NEEDS-%std-first
// RUN: FileCheck %s --check-prefix=OUT < %t20.cpp
// NEEDS-CXX17FIRST: did not parse as C++17; parsed with -std=c++20 as the flags ask
// NEEDS-ASKEDFIRST-NOT: C++17
// NEEDS-ASKEDFIRST: needs_cxx20.cpp: {{[0-9]+}} rewrites
//
// A file that is valid C++17 but not C++20 (`requires` as a name): clang 19 falls back.
// RUN: %accel-migrate %S/Inputs/cxx17_only.cpp -o %t17.cpp -- -std=c++20 %stub-flags 2>&1 | FileCheck %s --check-prefix=ONLY17-%std-first
// RUN: FileCheck %s --check-prefix=OUT < %t17.cpp
// ONLY17-CXX17FIRST: parsed as C++17 although the flags ask for -std=c++20
// ONLY17-ASKEDFIRST: did not parse with -std=c++20; parsed as C++17
//
// The final names of newer standards (CMake writes -std=gnu++23): clang 16 knows them as
// gnu++2b; either way the file is migrated.
// RUN: %accel-migrate %s -o %t23.cpp -- -std=gnu++23 %stub-flags 2>&1 | FileCheck %s --check-prefix=GNU23-%std-first
// GNU23-CXX17FIRST: parsed as C++17 although the flags ask for -std=gnu++23
// GNU23-ASKEDFIRST-NOT: C++17
// GNU23-ASKEDFIRST: cxx20.cpp: {{[0-9]+}} rewrites
// RUN: %accel-migrate %S/Inputs/needs_cxx20.cpp -o %t20b.cpp --keep-std -- -std=gnu++23 %stub-flags 2>&1 | FileCheck %s --check-prefix=KEEP
// KEEP-NOT: C++17
// KEEP: needs_cxx20.cpp: {{[0-9]+}} rewrites
#include <torch/torch.h>
int main() {
  torch::Tensor loss;
  loss.backward();
}
