// Built against the *installed* package: checks that the headers, the library, LibTorch
// (brought along by Accelerate::accelerate) and the runtime all work from outside.
#include <accelerate/accelerate.h>
// The flat names programs used before the headers moved into their rooms' folders still
// resolve, from the installed tree (each is a one-line forwarder).
#include <accelerate/checkpoint.h>
#include <accelerate/data_loader.h>
#include <accelerate/trace.h>

#include <cstdio>

namespace accelerate {
const char* version();
}

int main() {
  accelerate::Accelerator accelerator;
  auto model = torch::nn::Linear(4, 2);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  accelerator.prepare(model, optimizer);
  auto x = torch::ones({3, 4}, accelerator.device());
  auto loss = model->forward(x).sum();
  accelerator.backward(loss);
  optimizer.step();
  std::printf("consumer: accelerate %s, %lld process(es), device %s, loss %.4f\n",
              accelerate::version(), static_cast<long long>(accelerator.num_processes()),
              accelerator.device().str().c_str(), loss.item<double>());
  return accelerator.num_processes() == 1 ? 0 : 1;
}
