// A migrated training program in the shape accel-migrate leaves (a prepared model, optimizer
// and loader; accelerator.backward; the program's own optimizer.step()), with one way to
// break it per mode, for `accelerate verify`'s test (test_verify.py, docs/verify.md):
//   good        1001 samples (a short last batch of 41), global batch 64, 2 epochs;
//   unprepared  the loader is LibTorch's own: every process trains on all the data;
//   late        the model is prepared after the training loop (issue 47, item 0): each
//               process trains its own copy on its share, gradients never synchronised;
//   no_sync     the gradient synchronisation is skipped on step 5 only;
//   sum         a Reduction::Sum loss passed to backward as if it were a mean;
//   rank_data   each process shifts its inputs by 0.01 x its index (the data a process sees
//               differs; on 1 process nothing changes);
//   dropout     a dropout layer: each process draws the masks of its share;
//   racy        on N > 1 processes, process 1 adds noise drawn from std::random_device to its
//               inputs (a different run every time, as a race would be): its own order
//               controls would be as wide as the gap, so verify must not take them;
//   padded      on N > 1 processes the data set is padded with its own first 23 samples to
//               1024, a multiple of the global batch, and the padding trains as real samples
//               (the even_batches padding of a loader that counts what it repeats as data):
//               the last step of each epoch averages 64 samples where 1 process has 41;
//   full_batch  no loader: 30 steps on the whole data set, each process its share of the rows
//               (accelerate::process_share, as accel-migrate writes a full-batch loop); no
//               later backward pass or epoch end sees the last step, only the Accelerator's
//               end, after the optimizer (declared after it) is destroyed;
//   resume      good, but the model starts from verify-probe-state.pt in the working directory
//               when that file exists, and the main process saves the trained model there at
//               the end (a program that resumes from its own checkpoint): right only when
//               every run of verify starts from the same directory.
// Prints "final: loss=<mean loss of the last epoch>" from the main process.
#include <accelerate/accelerate.h>

#include "rows.h"

#include <fstream>
#include <iostream>
#include <random>
#include <string>

namespace {

namespace data = torch::data;

using verify_test::Rows;

const char* const kState = "verify-probe-state.pt";

struct Setup {
  std::string mode;
  torch::nn::Sequential model;
  Rows rows;
};

Setup make(const std::string& mode, int64_t processes) {
  torch::manual_seed(5);
  torch::Tensor x = torch::randn({1001, 6});
  torch::Tensor y = x.narrow(1, 0, 2).sin() + 0.1 * torch::randn({1001, 2});
  if (mode == "padded" && processes > 1) {
    x = torch::cat({x, x.narrow(0, 0, 23)});
    y = torch::cat({y, y.narrow(0, 0, 23)});
  }
  torch::nn::Sequential model(torch::nn::Linear(6, 32), torch::nn::Tanh());
  if (mode == "dropout") model->push_back(torch::nn::Dropout(0.3));
  model->push_back(torch::nn::Linear(32, 2));
  return {mode, model, Rows(x, y)};
}

torch::Tensor loss_of(const Setup& s, const torch::Tensor& out, const torch::Tensor& target) {
  namespace F = torch::nn::functional;
  if (s.mode == "sum") return F::mse_loss(out, target, F::MSELossFuncOptions().reduction(torch::kSum));
  return F::mse_loss(out, target);
}

// One epoch over `loader`; the mean of its batch losses.
template <typename Loader>
double epoch(accelerate::Accelerator& acc, Setup& s, torch::optim::SGD& opt, Loader& loader, int64_t& steps) {
  double total = 0;
  int64_t batches = 0;
  for (auto& b : loader) {
    ++steps;
    opt.zero_grad();
    torch::Tensor input = s.mode == "rank_data" ? b.data + 0.01 * acc.process_index() : b.data;
    if (s.mode == "racy" && acc.process_index() == 1) {
      std::random_device device;  // never the same twice, whatever the seeds
      input = input + 0.01 * static_cast<double>(device() % 1000) / 1000.0;
    }
    torch::Tensor loss = loss_of(s, s.model->forward(input), b.target);
    if (s.mode == "no_sync" && steps == 5) {
      auto guard = acc.no_sync(s.model);
      acc.backward(loss);
    } else {
      acc.backward(loss);
    }
    opt.step();
    total += loss.item<double>();
    ++batches;
  }
  return total / static_cast<double>(batches);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "good";
  accelerate::Accelerator acc;
  Setup s = make(mode, acc.num_processes());
  if (mode == "resume" && std::ifstream(kState).good()) torch::load(s.model, kState);
  torch::optim::SGD opt(s.model->parameters(), mode == "sum" ? 0.002 : 0.1);
  if (mode == "late") {
    acc.prepare(opt);
  } else {
    acc.prepare(s.model, opt);
  }
  auto stacked = s.rows.map(data::transforms::Stack<>());
  double last = 0;
  int64_t steps = 0;
  if (mode == "full_batch") {
    for (int step = 0; step < 30; ++step) {
      opt.zero_grad();
      const torch::Tensor out = s.model->forward(accelerate::process_share(acc, s.rows.x));
      torch::Tensor loss = loss_of(s, out, accelerate::process_share(acc, s.rows.y));
      acc.backward(loss);
      opt.step();
      last = loss.item<double>();
    }
  } else if (mode == "unprepared") {
    auto loader = data::make_data_loader<data::samplers::SequentialSampler>(stacked, 64);
    for (int e = 0; e < 2; ++e) last = epoch(acc, s, opt, *loader, steps);
  } else {
    auto loader = acc.prepare_data_loader<data::samplers::SequentialSampler>(stacked, 64);
    for (int e = 0; e < 2; ++e) last = epoch(acc, s, opt, *loader, steps);
  }
  if (mode == "late") acc.prepare(s.model);
  if (mode == "resume" && acc.is_main_process()) torch::save(s.model, kState);
  if (acc.is_main_process()) std::cout << "final: loss=" << last << std::endl;
  return 0;
}
