// accelerate-accelerator in file mode: a main() whose file needs nothing migrated, but which
// includes a program header that trains (backward()), constructs the Accelerator: the header,
// migrated alone, reaches it through accelerate::Accelerator::current(), which throws unless
// main() made one (issue 29: a classifier's fit() in a header, main() only calling it).
// RUN: %accel-migrate %s -o %t.cpp -- %stub-flags -I %S 2> %t.err
// RUN: FileCheck %s < %t.cpp
// RUN: FileCheck %s --check-prefix=NOTE < %t.err
// NOTE: accelerator_header_trains.cpp:[[# @LINE + 15]]:12: note: main() constructs the Accelerator although this file needs none itself: the program's header fit_header.h trains (backward() at line 11); migrated, it reaches the Accelerator through accelerate::Accelerator::current() [accelerate-accelerator]
// (%accel-migrate checks that the migrated file migrates to itself: no second Accelerator.)
//
// A header that only predicts: nothing to migrate, no Accelerator.
// RUN: %accel-migrate %s -o %t.predict.cpp -- %stub-flags -I %S -DPREDICT_ONLY 2> %t.predict.err
// RUN: FileCheck %s --check-prefix=PREDICT < %t.predict.err
// PREDICT: nothing to migrate
// RUN: cmp %s %t.predict.cpp
#include <torch/torch.h>

#ifndef PREDICT_ONLY
#include "Inputs/program/fit_header.h"
#endif
#include "Inputs/program/predict_header.h"

int main() {
  // CHECK: int main() {
  // CHECK-NEXT: accelerate::Accelerator accelerator;
  torch::Tensor x = torch::randn({8, 4}), y = torch::randn({8, 2});
#ifndef PREDICT_ONLY
  Classifier c;
  c.fit(x, y);
#endif
  Predictor p;
  auto out = p.predict(x);
  (void)out;
  return 0;
}
