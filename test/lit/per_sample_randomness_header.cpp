// accelerate-per-sample-randomness in the program's own headers: a model whose forward()
// draws dropout masks, defined in a header the migrated file includes, changes the file's
// training on N processes all the same; the note names the header's place. LibTorch's own
// headers reached with -I (a path under torch/csrc/) are not the program's.
//
// The model in a quoted header, nothing random in this file: the note names the header's
// place and stands at the #include that reaches it.
// RUN: %accel-migrate %s -o %t.header.cpp -- %stub-flags -I %S 2> %t.header.err
// RUN: FileCheck %s --check-prefix=HEADER < %t.header.err
// HEADER: per_sample_randomness_header.cpp:[[# @LINE + 16]]:10: note: per-sample randomness (dropout / noise drawn per batch row): a call to torch::nn::functional::dropout at dropout_net.h:9 (included here): on 1 process {{.*}} [accelerate-per-sample-randomness]
// HEADER: 0 warnings, 1 note
//
// A place in this file too: the note stands here and names the header's place.
// RUN: %accel-migrate %s -o %t.both.cpp -- %stub-flags -I %S -DLOOP 2> %t.both.err
// RUN: FileCheck %s --check-prefix=BOTH < %t.both.err
//
// LibTorch-like header only (the model header left out): no note.
// RUN: %accel-migrate %s -o %t.lib.cpp -- %stub-flags -I %S -DNO_MODEL_HEADER 2> %t.lib.err
// RUN: FileCheck %s --check-prefix=LIB < %t.lib.err
// LIB-NOT: per-sample-randomness
// LIB: accel-migrate: {{.*}}per_sample_randomness_header.cpp: {{.*}}, 0 warnings ->
#include <torch/torch.h>

#include "Inputs/program/torch/csrc/api/functional_like.h"
#ifndef NO_MODEL_HEADER
#include "Inputs/program/dropout_net.h"
#else
struct DropNetImpl : torch::nn::Module {
  DropNetImpl() : fc(register_module("fc", torch::nn::Linear(4, 2))) {}
  torch::Tensor forward(torch::Tensor x) { return fc(libtorch_like_dropout(x)); }
  torch::nn::Linear fc;
};
TORCH_MODULE(DropNet);
#endif

int main() {
  DropNet model;
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto loader = torch::data::make_data_loader(torch::data::datasets::MNIST("data"), 64);
  for (auto& batch : *loader) {
    optimizer.zero_grad();
#ifdef LOOP
    auto noisy = batch.data + torch::randn_like(batch.data);
    // BOTH: per_sample_randomness_header.cpp:[[@LINE-1]]:31: note: per-sample randomness (dropout / noise drawn per batch row): torch::randn_like in a loop over a data loader here (also line dropout_net.h:9): on 1 process {{.*}} [accelerate-per-sample-randomness]
    // BOTH: 0 warnings, 1 note
#else
    auto noisy = batch.data;
#endif
    auto loss = torch::nll_loss(model->forward(noisy), batch.target);
    loss.backward();
    optimizer.step();
  }
  return 0;
}
