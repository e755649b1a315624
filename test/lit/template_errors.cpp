// The tool parses without instantiating the bodies of LibTorch's templates (the bulk of a
// parse; tool/ProgramTemplates.h) but instantiates the program's own: a program whose own
// function template fails only once instantiated is still refused, with the compiler's
// error and the line that instantiates it, and nothing is written.
// RUN: rm -f %t.out && not %accel-migrate %s -o %t.out -- %stub-flags 2> %t.err
// RUN: FileCheck %s < %t.err
// RUN: test ! -e %t.out
// The same template instantiated through a class template's member and a variable template.
// RUN: not %accel-migrate %s -o %t.out -- %stub-flags -DTHROUGH_CLASS 2>&1 | FileCheck %s --check-prefix=CLASS
// RUN: not %accel-migrate %s -o %t.out -- %stub-flags -DTHROUGH_VAR 2>&1 | FileCheck %s --check-prefix=VAR
// Without the faulty instantiation the program migrates, and the loop inside the program's
// template is rewritten.
// RUN: %accel-migrate %s -o %t.ok.cpp -- %stub-flags -DNO_FAULT 2> /dev/null
// RUN: FileCheck %s --check-prefix=OK < %t.ok.cpp
// CHECK: error: member reference base type 'int' is not a structure or union
// CHECK: note: in instantiation of function template specialization 'count_steps<int>' requested here
// CHECK: accel-migrate: not migrated: {{.*}}template_errors.cpp
// CLASS: error: member reference base type 'int' is not a structure or union
// CLASS: accel-migrate: not migrated
// VAR: error: cannot initialize a variable of type 'int' with an lvalue of type 'const char[4]'
// VAR: accel-migrate: not migrated
// OK: accelerator.backward(loss);
#include <torch/torch.h>

template <typename T> int count_steps(T t) { return t.steps(); }
template <typename T> struct Counter {
  int get(T t) { return t.steps(); }
};
template <typename T> T initial = "abc";

template <typename Model> void train(Model& model, torch::optim::SGD& optimizer) {
  for (int i = 0; i < 2; ++i) {
    optimizer.zero_grad();
    auto loss = model->forward(torch::ones({1, 2})).sum();
    loss.backward();
    optimizer.step();
  }
}

int main() {
  torch::nn::Linear model(2, 1);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  train(model, optimizer);
#if defined(THROUGH_CLASS)
  Counter<int>().get(1);
#elif defined(THROUGH_VAR)
  int x = initial<int>;
  (void)x;
#elif !defined(NO_FAULT)
  count_steps(1);
#endif
}
