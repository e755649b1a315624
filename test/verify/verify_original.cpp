// The ORIGINAL of verify_probe.cpp's good mode, as `accel-migrate --trace-only` leaves an
// original: plain LibTorch (a LibTorch loader, loss.backward(), optimizer.step()) with the
// step trace's two calls written in, linked against Accelerate::trace alone (no libaccelerate:
// test/verify/CMakeLists.txt). `accelerate verify --original` runs it with the probe's
// arguments and must find the probe's 1-process run bit-identical to it, step by step.
// One deliberate difference, for the failing case: the mode "original_lr" trains with a
// learning rate of 0.1001 (the probe, which knows no such mode, trains as "good" with 0.1),
// as a migration that changed a hyper-parameter would: DIVERGED at step 1.
#include <accelerate/core/trace.h>
#include <torch/torch.h>

#include "rows.h"

#include <iostream>
#include <string>

namespace {

namespace data = torch::data;

using verify_test::Rows;

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "good";
  torch::manual_seed(5);
  torch::Tensor x = torch::randn({1001, 6});
  torch::Tensor y = x.narrow(1, 0, 2).sin() + 0.1 * torch::randn({1001, 2});
  // Built as the probe builds it: the layers' initial weights are drawn in this order.
  torch::nn::Sequential model(torch::nn::Linear(6, 32), torch::nn::Tanh());
  model->push_back(torch::nn::Linear(32, 2));
  torch::optim::SGD opt(model->parameters(), mode == "original_lr" ? 0.1001 : 0.1);
  auto loader =
      data::make_data_loader<data::samplers::SequentialSampler>(Rows(x, y).map(data::transforms::Stack<>()), 64);
  double last = 0;
  for (int e = 0; e < 2; ++e) {
    double total = 0;
    int64_t batches = 0;
    for (auto& b : *loader) {
      opt.zero_grad();
      torch::Tensor loss = torch::nn::functional::mse_loss(model->forward(b.data), b.target);
      accelerate::trace::loss(loss).backward();
      accelerate::trace::after_step(opt.step(), opt);
      total += loss.item<double>();
      ++batches;
    }
    last = total / static_cast<double>(batches);
  }
  std::cout << "final: loss=" << last << std::endl;
  return 0;
}
