// Short last batches (docs/data-loader.md "Short last batches", issue 47): a prepared loader
// over a data set that is not a multiple of the batch trains on N processes as the plain
// LibTorch loop trains on one. Each process computes that one-process reference itself
// (the whole data set, LibTorch's own loader, no Accelerator) and compares parameters.
//   runtime_worker short_batch <case> [report-dir]
// cases: split (1001 samples, global batch 64, --split_batches), per_process (120 samples,
// 8 per process, the reference's batch 16: the last step's real samples are all on process
// 0), sum (split with a Reduction::Sum loss and backward(loss, LossReduction::Sum)),
// accumulate (split, 2 accumulation steps), fsdp (split, FULL_SHARD), bf16 (split, bf16),
// hand (1001 rows cut by hand in batches of 64, each split by accelerate::process_share),
// plain_step (split, the program's own optimizer.step() and zero_grad(), as accel-migrate
// leaves them, instead of optimizer_step).
// Prints "short_batch <case> rel=<max relative parameter difference>".
#include "worker_expect.h"

#include <accelerate/accelerate.h>

#include <algorithm>
#include <iostream>
#include <string>

namespace short_batch_scenario {  // named: the worker's files may be compiled as one unit

int g_failures = 0;

namespace data = torch::data;

struct Case {
  std::string name;
  int64_t items = 1001;
  int64_t reference_batch = 64;  // the one-process program's batch
  bool split = true;             // --split_batches (else each process takes reference_batch / N)
  bool sum = false;              // a sum-reduced loss
  int64_t accumulate = 1;
  bool fsdp = false;
  bool bf16 = false;
  bool hand = false;        // batches cut by hand from the whole tensors, split by process_share
  bool plain_step = false;  // opt.step() on the prepared optimizer, not acc.optimizer_step(opt)
  double tolerance = 1e-5;  // relative, on every parameter
};

Case case_named(const std::string& name) {
  Case c;
  c.name = name;
  if (name == "per_process") {
    c.items = 120;
    c.reference_batch = 16;
    c.split = false;
  }
  if (name == "sum") c.sum = true;
  if (name == "accumulate") c.accumulate = 2;
  if (name == "fsdp") c.fsdp = true;
  if (name == "hand") c.hand = true;
  if (name == "plain_step") c.plain_step = true;
  // bf16 rounds each process's products of its own share: the processes' sum of rounded
  // partial products differs from one rounded product at bf16's precision (2^-8), so the
  // bound is that, not fp32's. Measured: 1.4e-3 with the weighting, 3.2e-2 without it.
  if (name == "bf16") {
    c.bf16 = true;
    c.tolerance = 5e-3;
  }
  return c;
}

// A regression data set whose every sample differs (so a repeated one is visible).
struct Rows : data::datasets::Dataset<Rows> {
  Rows(torch::Tensor x, torch::Tensor y) : x(std::move(x)), y(std::move(y)) {}
  data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  c10::optional<size_t> size() const override { return static_cast<size_t>(x.size(0)); }
  torch::Tensor x, y;
};

torch::nn::Sequential make_model() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(), torch::nn::Linear(16, 2));
}

torch::Tensor loss_of(const torch::Tensor& out, const torch::Tensor& target, bool sum) {
  namespace F = torch::nn::functional;
  if (sum) return F::mse_loss(out, target, F::MSELossFuncOptions().reduction(torch::kSum));
  return F::mse_loss(out, target);
}

// The one-process program: LibTorch's loader in order, the global batch, plain backward.
// Accumulation as the reference's accumulate(): loss / steps, a step every `steps` batches
// and at the end of each epoch.
// Under bf16 the reference's forward runs under the same autocast (a thread-local switch,
// no communication): the original program run with bf16 on one process.
torch::nn::Sequential reference(accelerate::Accelerator& acc, const Case& c, Rows rows, int epochs, double lr) {
  auto model = make_model();
  torch::optim::SGD opt(model->parameters(), lr);
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(rows.map(data::transforms::Stack<>()),
                                                                          c.reference_batch);
  int64_t calls = 0;
  const int64_t per_epoch = (c.items + c.reference_batch - 1) / c.reference_batch;
  for (int e = 0; e < epochs; ++e) {
    int64_t k = 0;
    for (auto& b : *loader) {
      ++calls;
      ++k;
      torch::Tensor loss;
      {
        auto autocast = acc.autocast(c.bf16);
        loss = loss_of(model->forward(b.data), b.target, c.sum);
      }
      (loss / static_cast<double>(c.accumulate)).backward();
      if (calls % c.accumulate == 0 || k == per_epoch) {
        opt.step();
        opt.zero_grad();
      }
    }
  }
  return model;
}

accelerate::AcceleratorOptions options_for(const Case& c) {
  auto o = accelerate::AcceleratorOptions().cpu(true).split_batches(c.split).gradient_accumulation_steps(c.accumulate);
  if (c.bf16) o.mixed_precision("bf16");
  if (c.fsdp) {
    o.fsdp_plugin(
        accelerate::FullyShardedDataParallelPlugin().sharding_strategy(accelerate::ShardingStrategy::FULL_SHARD));
  }
  return o;
}

double max_relative(accelerate::Accelerator& acc, torch::nn::Sequential& model, torch::nn::Sequential& ref) {
  auto full = acc.get_state_dict(model);  // gathers FSDP shards (on process 0)
  double worst = 0;
  for (const auto& p : ref->named_parameters()) {
    if (!full.contains(p.key())) continue;
    const torch::Tensor a = full[p.key()].to(torch::kCPU, torch::kDouble);
    const torch::Tensor b = p.value().detach().to(torch::kDouble);
    worst = std::max(worst, ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>());
  }
  return worst;
}

void step(accelerate::Accelerator& acc, torch::nn::Sequential& model, torch::optim::SGD& opt, const torch::Tensor& x,
          const torch::Tensor& y, const Case& c) {
  torch::Tensor loss;
  {
    auto autocast = acc.autocast();
    loss = loss_of(model->forward(x), y, c.sum);
  }
  if (c.sum) {
    acc.backward(loss, accelerate::LossReduction::Sum);
  } else {
    acc.backward(loss);
  }
  if (c.plain_step) {
    opt.step();
    opt.zero_grad();
    return;
  }
  acc.optimizer_step(opt);
  if (acc.sync_gradients()) opt.zero_grad();
}

void train_prepared(accelerate::Accelerator& acc, torch::nn::Sequential& model, torch::optim::SGD& opt, Rows rows,
                    const Case& c, int epochs) {
  const int64_t batch = c.split ? c.reference_batch : c.reference_batch / acc.num_processes();
  auto loader =
      acc.prepare_data_loader<data::samplers::SequentialSampler>(rows.map(data::transforms::Stack<>()), batch);
  for (int e = 0; e < epochs; ++e) {
    for (auto& b : *loader) {
      auto guard = acc.accumulate(model);
      step(acc, model, opt, b.data, b.target, c);
    }
  }
}

// accel-migrate's rewrite of an index loop over whole-data tensors: each process takes its
// share of every hand-cut global batch (shares of 21 and 20 rows in the last one).
void train_by_hand(accelerate::Accelerator& acc, torch::nn::Sequential& model, torch::optim::SGD& opt,
                   const torch::Tensor& x, const torch::Tensor& y, const Case& c, int epochs) {
  for (int e = 0; e < epochs; ++e) {
    for (int64_t i = 0; i < c.items; i += c.reference_batch) {
      const int64_t end = std::min(c.items, i + c.reference_batch);
      step(acc, model, opt, accelerate::process_share(acc, x.slice(0, i, end)),
           accelerate::process_share(acc, y.slice(0, i, end)), c);
    }
  }
}

int short_batch(const std::string& name) {
  const Case c = case_named(name);
  accelerate::Accelerator acc(options_for(c));
  torch::manual_seed(11);
  const torch::Tensor x = torch::randn({c.items, 6});
  const torch::Tensor y = x.narrow(1, 0, 2).sin() + 0.1 * torch::randn({c.items, 2});
  Rows rows(x, y);
  const int epochs = 3;
  const double lr = c.sum ? 0.001 : 0.1;
  auto ref = reference(acc, c, rows, epochs, lr);

  auto model = make_model();
  torch::optim::SGD opt(model->parameters(), lr);
  acc.prepare(model, opt);
  if (c.hand) {
    train_by_hand(acc, model, opt, x, y, c, epochs);
  } else {
    train_prepared(acc, model, opt, rows, c, epochs);
  }
  const double rel = max_relative(acc, model, ref);
  if (acc.is_main_process()) {
    std::cout << "short_batch " << c.name << " rel=" << rel << std::endl;
    EXPECT_THAT(rel <= c.tolerance, c.name << ": parameters differ from the one-process program by " << rel
                                           << " (relative), more than " << c.tolerance);
  }
  return g_failures;
}

}  // namespace short_batch_scenario

// -1: not a scenario of this file.
int run_short_batch_scenario(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "short_batch") return -1;
  return short_batch_scenario::short_batch(argv[2]);
}
