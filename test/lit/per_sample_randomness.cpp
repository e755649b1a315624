// accelerate-per-sample-randomness: dropout modules and calls, and random draws that run
// once per batch (in a loop over a data loader or over hand-cut batches, in a module's
// forward()), get one note per file at the first place: on N processes each process draws
// for its share of the batch. Nothing is rewritten, no comment is written and the note is
// no --check finding, so migrated code still checks clean. Each form is compiled in alone
// (-D), then all of them together.
//
// Without any form: the negatives only (noise drawn once for synthetic data, weights drawn
// in a constructor, a plain loop, a loader loop without draws, a dropout module that is
// only registered, a dropout call switched off by a literal false), no note.
// RUN: %check-rule
// RUN: not grep per-sample-randomness %t.err
//
// RUN: %accel-migrate %s -o %t.member.cpp -- %stub-flags -DMEMBER 2> %t.member.err
// RUN: FileCheck %s --check-prefix=MEMBER < %t.member.err
// RUN: not grep 'accel-migrate[(]accelerate-per-sample-randomness[)]' %t.member.cpp
// RUN: %accel-migrate %s -o %t.functional.cpp -- %stub-flags -DFUNCTIONAL 2> %t.functional.err
// RUN: FileCheck %s --check-prefix=FUNCTIONAL < %t.functional.err
// RUN: %accel-migrate %s -o %t.forward.cpp -- %stub-flags -DFORWARD 2> %t.forward.err
// RUN: FileCheck %s --check-prefix=FORWARD < %t.forward.err
// RUN: %accel-migrate %s -o %t.sequential.cpp -- %stub-flags -DSEQUENTIAL 2> %t.sequential.err
// RUN: FileCheck %s --check-prefix=SEQUENTIAL < %t.sequential.err
// RUN: %accel-migrate %s -o %t.loop.cpp -- %stub-flags -DLOOP 2> %t.loop.err
// RUN: FileCheck %s --check-prefix=LOOP < %t.loop.err
// RUN: %accel-migrate %s -o %t.explicit.cpp -- %stub-flags -DEXPLICIT 2> %t.explicit.err
// RUN: FileCheck %s --check-prefix=EXPLICIT < %t.explicit.err
// RUN: %accel-migrate %s -o %t.handcut.cpp -- %stub-flags -DHANDCUT 2> %t.handcut.err
// RUN: FileCheck %s --check-prefix=HANDCUT < %t.handcut.err
// RUN: %accel-migrate %s -o %t.dataset.cpp -- %stub-flags -DDATASET 2> %t.dataset.err
// RUN: FileCheck %s --check-prefix=DATASET < %t.dataset.err
// RUN: %accel-migrate %s -o %t.all.cpp -- %stub-flags -DMEMBER -DFUNCTIONAL -DFORWARD -DSEQUENTIAL -DLOOP -DEXPLICIT -DHANDCUT -DDATASET 2> %t.all.err
// RUN: FileCheck %s --check-prefix=ALL < %t.all.err
// A NOLINT'd place is left out: the note goes to the next one.
// RUN: %accel-migrate %s -o %t.nolint.cpp -- %stub-flags -DNOLINTED -DFORWARD 2> %t.nolint.err
// RUN: FileCheck %s --check-prefix=NOLINTED < %t.nolint.err
//
// --check: the note is printed (with the rule id, as a note) but is no finding; the
// migrated program checks clean (exit 0), and --export-fixes writes no fix for it.
// RUN: %accel-migrate --check %s -- %stub-flags -DLOOP > %t.check.out 2> %t.check.err; test $? -eq 1
// RUN: FileCheck %s --check-prefix=CHECKMODE < %t.check.out
// RUN: %accel-migrate --check --export-fixes %t.yaml %t.loop.cpp -- %stub-flags -DLOOP > %t.clean.out 2> %t.clean.err
// RUN: FileCheck %s --check-prefix=CLEAN < %t.clean.out
// RUN: FileCheck %s --check-prefix=CLEANSUMMARY < %t.clean.err
// RUN: not grep per-sample-randomness %t.yaml
#include <torch/torch.h>

#include <vector>

struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(4, 2))) {
    // Drawn once, when the model is made: not per sample.
    w = torch::randn({4, 2});
    // CHECK: w = torch::randn({4, 2});
  }
  torch::Tensor forward(torch::Tensor x) {
#ifdef FUNCTIONAL
    x = torch::nn::functional::dropout(x, torch::nn::functional::DropoutFuncOptions().p(0.2).training(is_training()));
    // FUNCTIONAL: per_sample_randomness.cpp:[[@LINE-1]]:9: note: per-sample randomness (dropout / noise drawn per batch row): a call to torch::nn::functional::dropout here: on 1 process the migrated program computes what the original computes; on N processes each process draws for its share of the batch, so the runs agree statistically, not bit for bit (docs/data-loader.md, 'Random order') [accelerate-per-sample-randomness]
    // FUNCTIONAL: 0 warnings, 1 note
#endif
#ifdef NOLINTED
    x = torch::nn::functional::dropout(x); // NOLINT(accelerate-per-sample-randomness)
#endif
#ifdef FORWARD
    x = x + torch::randn_like(x);
    // FORWARD: per_sample_randomness.cpp:[[@LINE-1]]:13: note: per-sample randomness (dropout / noise drawn per batch row): torch::randn_like in a module's forward() here: on 1 process {{.*}} [accelerate-per-sample-randomness]
    // NOLINTED: per_sample_randomness.cpp:[[@LINE-2]]:13: note: per-sample randomness (dropout / noise drawn per batch row): torch::randn_like in a module's forward() here: on 1 process {{.*}} [accelerate-per-sample-randomness]
#endif
    return fc(x);
  }
  torch::nn::Linear fc;
  torch::Tensor w;
};
TORCH_MODULE(Net);

// Registered, never called (pytorch/examples' mnist with the call of conv2_drop taken out),
// and a dropout call with training switched off: neither draws.
struct QuietImpl : torch::nn::Module {
  QuietImpl() { register_module("drop", drop); }
  torch::Tensor forward(torch::Tensor x) { return torch::dropout(x, 0.5, /*train=*/false); }
  torch::nn::Dropout2d drop;
};
TORCH_MODULE(Quiet);

#ifdef DATASET
// A data set whose get() draws each sample: the loader calls it for this process's samples
// only, so on N processes the samples themselves differ.
struct Noisy : torch::data::datasets::Dataset<Noisy> {
  torch::data::Example<> get(size_t index) override {
    auto x = torch::rand({1});
    // DATASET: per_sample_randomness.cpp:[[@LINE-1]]:14: note: per-sample randomness (dropout / noise drawn per batch row): torch::rand in a data set's get() here: on 1 process {{.*}} [accelerate-per-sample-randomness]
    // DATASET: 0 warnings, 1 note
    return {x, x};
  }
  c10::optional<size_t> size() const override { return 8; }
};
#endif

#ifdef MEMBER
struct HeadImpl : torch::nn::Module {
  torch::nn::Dropout drop{nullptr};
  // MEMBER: per_sample_randomness.cpp:[[@LINE-1]]:22: note: per-sample randomness (dropout / noise drawn per batch row): a torch::nn::Dropout module here (also line [[@LINE+2]]): on 1 process {{.*}} [accelerate-per-sample-randomness]
  // MEMBER: 0 warnings, 1 note
  HeadImpl() { drop = register_module("drop", torch::nn::Dropout(0.5)); }
  torch::Tensor forward(torch::Tensor x) { return drop(x); }
};
TORCH_MODULE(Head);
#endif

int main() {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  // Synthetic data, drawn once before training: the same on every process.
  torch::Tensor inputs = torch::randn({64, 4}), targets = torch::randn({64, 2});
  std::vector<torch::Tensor> extra;
  for (int i = 0; i < 3; ++i)
    extra.push_back(torch::randn({4}));
#ifdef SEQUENTIAL
  torch::nn::Sequential head(torch::nn::Linear(2, 2), torch::nn::Dropout2d(0.1));
  // SEQUENTIAL: per_sample_randomness.cpp:[[@LINE-1]]:55: note: per-sample randomness (dropout / noise drawn per batch row): a torch::nn::Dropout2d module here: on 1 process {{.*}} [accelerate-per-sample-randomness]
#endif
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("data"), 64);
  for (auto& batch : *loader) {
    optimizer.zero_grad();
#ifdef LOOP
    auto noisy = batch.data + torch::randn_like(batch.data);
    // LOOP: per_sample_randomness.cpp:[[@LINE-1]]:31: note: per-sample randomness (dropout / noise drawn per batch row): torch::randn_like in a loop over a data loader here: on 1 process {{.*}} [accelerate-per-sample-randomness]
    // LOOP: 0 warnings, 1 note
#else
    auto noisy = batch.data;
    // CHECK: auto noisy = batch.data;
#endif
    auto loss = torch::nll_loss(model->forward(noisy), batch.target);
    loss.backward();
    optimizer.step();
  }
#ifdef EXPLICIT
  for (auto it = loader->begin(); it != loader->end(); ++it) {
    auto mask = torch::bernoulli(it->data);
    // EXPLICIT: per_sample_randomness.cpp:[[@LINE-1]]:17: note: per-sample randomness (dropout / noise drawn per batch row): torch::bernoulli in a loop over a data loader here: on 1 process {{.*}} [accelerate-per-sample-randomness]
    std::printf("%f\n", mask.sum().item<float>());
  }
#endif
#ifdef HANDCUT
  for (int64_t i = 0; i < 64; i += 16) {
    auto x = inputs.slice(0, i, i + 16);
    auto y = targets.slice(0, i, i + 16);
    auto noise = torch::randn_like(x);
    // HANDCUT: per_sample_randomness.cpp:[[@LINE-1]]:18: note: per-sample randomness (dropout / noise drawn per batch row): torch::randn_like in a loop over hand-cut batches here: on 1 process {{.*}} [accelerate-per-sample-randomness]
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->forward(x + noise), y);
    loss.backward();
    optimizer.step();
  }
#endif
  return 0;
}
// ALL: per_sample_randomness.cpp:{{[0-9]+}}:9: note: per-sample randomness (dropout / noise drawn per batch row): a call to torch::nn::functional::dropout here (also lines {{[0-9]+, [0-9]+, [0-9]+, [0-9]+, [0-9]+}} and 3 more): on 1 process {{.*}} [accelerate-per-sample-randomness]
// ALL-NOT: per-sample-randomness
// ALL: 0 warnings, 1 note
//
// CHECKMODE: per_sample_randomness.cpp:{{[0-9]+}}:31: note: per-sample randomness {{.*}} [accelerate-per-sample-randomness]
// CHECKMODE-NEXT: auto noisy = batch.data + torch::randn_like(batch.data);
// CHECKMODE-NEXT: {{^ *(\| *)?\^}}
// CLEAN: note: per-sample randomness {{.*}} [accelerate-per-sample-randomness]
// CLEAN-NOT: warning:
// CLEANSUMMARY: 0 findings in 0 of 1 files
