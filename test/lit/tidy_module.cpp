// clang-tidy with the accelerate-tidy module reports what `accel-migrate --check`
// reports: the same warnings, notes, source lines and fix-its (clang-tidy may print a
// fix-it that keeps one blank as a line holding only that blank: blank lines are left out
// of the comparison). --list-checks names one check per rule id. Already migrated code
// and files that do not compile get no findings.
// REQUIRES: tidy-module
// RUN: rm -rf %t && mkdir -p %t
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-*' %s -- %stub-flags > %t/tidy.out 2> %t/tidy.err
// RUN: not %accel-migrate --check %s -- %stub-flags > %t/check.out 2> /dev/null
// Blank lines, and (clang 19) snippet lines holding only the line-number gutter, say nothing.
// RUN: grep -v -E '^[[:space:]]*[|]?[[:space:]]*$' %t/tidy.out > %t/tidy.lines
// RUN: grep -v -E '^[[:space:]]*[|]?[[:space:]]*$' %t/check.out > %t/check.lines
// A note of its own (not attached to a warning) is a remark in clang-tidy, printed with its
// source line where --check prints none (it follows a diagnostic at the same place): the
// same lines, once the remark is named a note and its source line and caret are left out,
// in the order each tool sorts diagnostics at one location.
// RUN: awk '/: remark: /{sub(/: remark: /, ": note: "); print; skip = 2; next} skip > 0 {skip--; next} {print}' %t/tidy.lines | sort > %t/tidy.sorted
// RUN: sort %t/check.lines > %t/check.sorted
// RUN: diff %t/check.sorted %t/tidy.sorted
// RUN: FileCheck %s < %t/tidy.out
// RUN: FileCheck %s --check-prefix=COUNT < %t/tidy.err
//
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-*' --list-checks | FileCheck %s --check-prefix=LIST
// Every rule is a check but the project rules (they need the whole program).
// RUN: %accel-migrate --list-rules | grep -v '(project mode)' | grep -o 'accelerate-[a-z-]*' | sort -u > %t/rules
// RUN: %accel-migrate --list-rules | FileCheck %s --check-prefix=PROJECT
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-*' --list-checks | grep -o 'accelerate-[a-z-]*' | sort -u > %t/checks
// RUN: diff %t/rules %t/checks
//
// RUN: %accel-migrate %s -o %t/migrated.cpp -- %stub-flags 2> /dev/null
// RUN: %clang-tidy --load=%tidy-module --checks='-*,accelerate-*' %t/migrated.cpp -- %stub-flags > %t/migrated.out 2> %t/migrated.err
// RUN: count 0 < %t/migrated.out
// RUN: not grep -E "error|accelerate-" %t/migrated.err
// RUN: echo 'int main() { return undefined_name; }' > %t/broken.cpp
// RUN: not %clang-tidy --load=%tidy-module --checks='-*,accelerate-*' %t/broken.cpp -- %stub-flags > %t/broken.out 2>&1
// RUN: FileCheck %s --check-prefix=BROKEN < %t/broken.out
#include <torch/torch.h>
#include <cstdio>

struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(784, 10))) {}
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

void step(torch::Tensor loss) { loss.backward(); }

int main() {
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  Net model;
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), 0.01);
  auto loader = torch::data::make_data_loader(
      torch::data::datasets::MNIST("data").map(torch::data::transforms::Stack<>()), 64);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (auto& batch : *loader) {
      auto data = batch.data.to(device), target = batch.target.to(device);
      optimizer.zero_grad();
      auto output = model->forward(data);
      auto loss = torch::nll_loss(output, target);
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      optimizer.step();
      std::printf("loss %.4f\n", loss.item<float>());
    }
    torch::save(model, "model.pt");
  }
  return 0;
}
// CHECK: tidy_module.cpp:{{[0-9]+}}:1: warning: include <accelerate/accelerate.h> [accelerate-include]
// CHECK: tidy_module.cpp:{{[0-9]+}}:33: warning: loss.backward() -> accelerator.backward(loss) [accelerate-backward]
// CHECK: tidy_module.cpp:{{[0-9]+}}:12: warning: declare the Accelerator at the start of main [accelerate-accelerator]
// CHECK: tidy_module.cpp:{{[0-9]+}}:17: warning: device selection -> accelerator.device() [accelerate-device]
// CHECK: warning: remove placement that prepare makes redundant [accelerate-placement]
// CHECK: warning: accelerator.prepare(models, optimizers, schedulers) [accelerate-prepare]
// CHECK: warning: make_data_loader -> accelerator.prepare_data_loader [accelerate-data-loader]
// CHECK: warning: remove placement that prepare makes redundant [accelerate-placement]
// CHECK: warning: remove placement that prepare makes redundant [accelerate-placement]
// CHECK: warning: loss.backward() -> accelerator.backward(loss) [accelerate-backward]
// CHECK-NEXT: {{^( *[0-9]+ [|])?}}      loss.backward();
// CHECK-NEXT: {{^( *[|])?}}      ^   ~~~~~~~~~~
// CHECK-NEXT: {{^( *[|])?}}      accelerator.backward(
// CHECK-NEXT: note: accelerator.backward(loss) applies loss scaling
// CHECK: warning: clip_grad_norm_/clip_grad_value_ -> the accelerator's [accelerate-clip-grad]
// CHECK: warning: metrics summed over sharded batches cover every process [accelerate-gather-metrics]
// CHECK: warning: saving, file writes and logging on the main process only [accelerate-main-process]
// CHECK: warning: saving, file writes and logging on the main process only [accelerate-main-process]
// CHECK-NOT: warning:
// COUNT: 14 warnings generated.
// (one check per rule id: the diff of --list-rules and --list-checks above)
// LIST: {{^}}    accelerate-backward{{$}}
// BROKEN: error: use of undeclared identifier 'undefined_name' [clang-diagnostic-error]
// BROKEN-NOT: [accelerate-
// PROJECT: accelerate-project-main{{.*}}(project mode)
// PROJECT: accelerate-project-link{{.*}}(project mode)
