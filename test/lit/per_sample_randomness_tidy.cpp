// The clang-tidy module gives accelerate-per-sample-randomness's note as a remark (a
// clang-tidy note belongs to a warning): printed with the check's name and the source line,
// counted as no warning, and no error under --warnings-as-errors. The program is
// per_sample_randomness.cpp with its loader loop drawing noise (-DLOOP).
// REQUIRES: tidy-module
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-per-sample-randomness' --warnings-as-errors='*' %S/per_sample_randomness.cpp -- %stub-flags -DLOOP > %t.out 2> %t.err
// RUN: FileCheck %s < %t.out
// RUN: not grep -E 'warning|error' %t.err
// CHECK: per_sample_randomness.cpp:{{[0-9]+}}:31: remark: per-sample randomness (dropout / noise drawn per batch row): torch::randn_like in a loop over a data loader here: {{.*}} [accelerate-per-sample-randomness]
// CHECK-NEXT: auto noisy = batch.data + torch::randn_like(batch.data);
// CHECK-NOT: per-sample-randomness
