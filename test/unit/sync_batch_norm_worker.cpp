// Worker of the SyncBatchNorm tests (test/unit/CMakeLists.txt starts it through
// `accelerate launch --cpu --num_processes 1|2`). Each process trains its share of a global
// batch with accelerate::nn::SyncBatchNorm{1,2,3}d under a prepared model (synchronised
// gradient buckets, overlapped with backward), and computes in-process the reference: the
// same training on the whole global batch with LibTorch's own BatchNorm, which is what the
// original program computes on one process. It compares the forward output, the input
// gradient, every parameter gradient, the parameters after three SGD steps and the running
// statistics, prints the largest relative difference and exits 1 when one exceeds
//   - 0 on one process (forward() is then LibTorch's own: bit for bit), or
//   - kTolerance on several (only the summation order differs).
#include <accelerate/accelerate.h>
#include <accelerate/helpers/sync_batch_norm.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Measured over 10 runs of 2 processes: see docs/runtime-api.md (SyncBatchNorm).
constexpr double kTolerance = 2e-5;
constexpr int64_t kGlobalBatch = 8;
constexpr int64_t kChannels = 3;
int g_failures = 0;
double g_worst = 0;
std::vector<std::shared_ptr<torch::nn::Module>> g_models;

// A channel-mixing linear map before the batch norm, so that the batch norm's input
// gradient reaches parameters (a per-channel scale or shift would not: batch norm is
// invariant to them, their gradients are 0 up to rounding), and the batch norm under test.
template <typename BN>
struct NetImpl : torch::nn::Module {
  NetImpl() {
    mix = register_parameter("mix", torch::randn({kChannels, kChannels}) + torch::eye(kChannels) * 2);
    bn = register_module("bn", BN(torch::nn::BatchNormOptions(kChannels).momentum(0.3)));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn(x.movedim(1, -1).matmul(mix.t()).movedim(-1, 1)); }
  torch::Tensor mix;
  BN bn{nullptr};
};

double rel_diff(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  const double scale = std::max(w.abs().max().item<double>(), 1e-12);
  return (g - w).abs().max().item<double>() / scale;
}

void compare(const std::string& what, const torch::Tensor& got, const torch::Tensor& want, double tolerance) {
  if (got.sizes() != want.sizes()) {
    std::cerr << "FAIL " << what << ": shape " << got.sizes() << " vs " << want.sizes() << "\n";
    ++g_failures;
    return;
  }
  const double d = rel_diff(got, want);
  g_worst = std::max(g_worst, d);
  if (d > tolerance) {
    std::cerr << "FAIL " << what << ": max relative difference " << d << " > " << tolerance << "\n";
    ++g_failures;
  }
}

// The loss of a batch: a mean over its samples, as a program computes it on each process.
torch::Tensor loss_of(const torch::Tensor& out, const torch::Tensor& target) { return (out.sin() * target).mean(); }

torch::Tensor batch(int64_t step, const std::vector<int64_t>& shape) {
  torch::manual_seed(1000 + step);
  return torch::randn(shape) * 2 + 0.7;  // a mean away from 0 checks the centring
}

template <typename Dst, typename Src>
void copy_into(Dst& dst, Src& src) {
  torch::NoGradGuard no_grad;
  auto d = dst->named_parameters();
  for (const auto& p : src->named_parameters()) d[p.key()].copy_(p.value());
}

template <typename Sync, typename Plain>
void check_shape(accelerate::Accelerator& acc, const std::string& name, const std::vector<int64_t>& shape) {
  const int64_t rank = acc.process_index(), world = acc.num_processes();
  const int64_t local = kGlobalBatch / world;
  const double tol = world == 1 ? 0.0 : kTolerance;
  torch::manual_seed(7);
  auto ref = std::make_shared<NetImpl<Plain>>();
  auto mine = std::make_shared<NetImpl<Sync>>();
  copy_into(mine, ref);
  g_models.push_back(mine);  // the Accelerator holds prepared models by reference: keep them alive
  acc.prepare(*mine);
  torch::optim::SGD ref_opt(ref->parameters(), 0.1), my_opt(mine->parameters(), 0.1);
  for (int64_t step = 0; step < 3; ++step) {
    const auto x = batch(step, shape), target = batch(100 + step, shape);
    auto x_ref = x.clone().requires_grad_(true);
    auto x_mine = x.narrow(0, rank * local, local).clone().requires_grad_(true);
    const auto out_ref = ref->forward(x_ref);
    const auto out_mine = mine->forward(x_mine);
    ref_opt.zero_grad();
    my_opt.zero_grad();
    loss_of(out_ref, target).backward();
    acc.backward(loss_of(out_mine, target.narrow(0, rank * local, local)));
    const std::string at = name + " step " + std::to_string(step) + " ";
    compare(at + "output", out_mine, out_ref.narrow(0, rank * local, local), tol);
    // x_mine's gradient is of this process's own loss, whose samples weigh `world` times
    // more than in the global batch's loss (as with any data-parallel input gradient).
    compare(at + "input gradient", x_mine.grad() / world, x_ref.grad().narrow(0, rank * local, local), tol);
    auto ref_params = ref->named_parameters();
    for (const auto& p : mine->named_parameters()) {
      compare(at + p.key() + " gradient", p.value().grad(), ref_params[p.key()].grad(), tol);
    }
    ref_opt.step();
    my_opt.step();
  }
  compare(name + " mix after 3 steps", mine->mix, ref->mix, tol);
  compare(name + " bn.weight after 3 steps", mine->bn->weight, ref->bn->weight, tol);
  compare(name + " running_mean", mine->bn->running_mean, ref->bn->running_mean, tol);
  compare(name + " running_var", mine->bn->running_var, ref->bn->running_var, tol);
  if (!torch::equal(mine->bn->num_batches_tracked, ref->bn->num_batches_tracked)) {
    std::cerr << "FAIL " << name << " num_batches_tracked\n";
    ++g_failures;
  }
}

// The module's state dict is LibTorch's: a checkpoint of either loads into the other, and
// evaluation mode is LibTorch's forward bit for bit.
void check_state_dict_and_eval() {
  torch::manual_seed(3);
  torch::nn::BatchNorm2d plain(4);
  plain->train();
  plain->forward(torch::randn({6, 4, 3, 3}) + 1);  // running stats away from their defaults
  std::stringstream saved;
  torch::save(plain, saved);
  accelerate::nn::SyncBatchNorm2d sync(4);
  torch::load(sync, saved);
  plain->eval();
  sync->eval();
  const auto x = torch::randn({5, 4, 3, 3});
  if (!torch::equal(sync->forward(x), plain->forward(x)) || !torch::equal(sync->running_var, plain->running_var)) {
    std::cerr << "FAIL a BatchNorm2d checkpoint loaded into SyncBatchNorm2d does not evaluate the same\n";
    ++g_failures;
  }
  auto copy = std::dynamic_pointer_cast<accelerate::nn::SyncBatchNorm2dImpl>(sync->clone());
  if (!copy || !torch::equal(copy->running_mean, plain->running_mean)) {
    std::cerr << "FAIL clone() is not a SyncBatchNorm2dImpl with the same buffers\n";
    ++g_failures;
  }
}

}  // namespace

int main() {
  accelerate::Accelerator acc;
  namespace ann = accelerate::nn;
  namespace tnn = torch::nn;
  check_state_dict_and_eval();
  check_shape<ann::SyncBatchNorm1d, tnn::BatchNorm1d>(acc, "1d (N, C)", {kGlobalBatch, kChannels});
  check_shape<ann::SyncBatchNorm1d, tnn::BatchNorm1d>(acc, "1d (N, C, L)", {kGlobalBatch, kChannels, 5});
  check_shape<ann::SyncBatchNorm2d, tnn::BatchNorm2d>(acc, "2d", {kGlobalBatch, kChannels, 4, 5});
  check_shape<ann::SyncBatchNorm3d, tnn::BatchNorm3d>(acc, "3d", {kGlobalBatch, kChannels, 2, 3, 4});
  std::printf("sync_batch_norm process %lld of %lld: max relative difference %.3e (tolerance %g), %d failures\n",
              static_cast<long long>(acc.process_index()), static_cast<long long>(acc.num_processes()), g_worst,
              acc.num_processes() == 1 ? 0.0 : kTolerance, g_failures);
  return g_failures == 0 ? 0 : 1;
}
