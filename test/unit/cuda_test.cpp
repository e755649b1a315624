// What only a CUDA device exercises (single process): bf16 autocast on CUDA through the
// Accelerator, and the CUDA generator's state in save_state/load_state. Compiled
// everywhere, run where LibTorch sees a GPU (bench/gpu/run.sh runs them on one; on CPU they
// are skipped and listed in test/expected/skips-*.txt). fp16 with loss scaling on CUDA is
// PrecisionAccelerator.Fp16OnCudaScalesAndSkipsOverflowingSteps (same binary).
#include <accelerate/accelerate.h>

#include "probe_net.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace {

using Mlp = precision_test::ProbeNet;  // records the hidden layer's dtype

bool no_cuda() { return !torch::cuda::is_available(); }

struct Losses {
  double first = 0, last = 0;  // fp32 evaluation before and after training
};

double eval_fp32(accelerate::Accelerator& acc, Mlp& net, const torch::Tensor& x, const torch::Tensor& y) {
  auto fp32 = acc.autocast(false);
  torch::NoGradGuard no_grad;
  return torch::mse_loss(net->forward(x), y).item<double>();
}

// Trains 150 Adam steps on a fixed regression task on the accelerator's device; `hidden`
// receives the dtype the hidden layer computed in during training.
Losses train(accelerate::Accelerator& acc, torch::ScalarType* hidden) {
  torch::manual_seed(5);
  const auto x = torch::randn({512, 32}).to(acc.device());
  const auto y = torch::tanh(x.narrow(1, 0, 4).sum(1, /*keepdim=*/true));
  Mlp net(32, 128, 1);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(3e-3));
  acc.prepare(net, opt);
  Losses l;
  l.first = eval_fp32(acc, net, x, y);
  for (int step = 0; step < 150; ++step) {
    opt.zero_grad();
    acc.backward(torch::mse_loss(net->forward(x), y));
    acc.optimizer_step(opt);
  }
  *hidden = net->hidden_dtype;
  for (auto& p : net->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat32) << "parameters stay fp32";
  l.last = eval_fp32(acc, net, x, y);
  return l;
}

}  // namespace

// bf16 on CUDA: the prepared model's forward runs in bf16 (no scaler), parameters and the
// optimizer stay fp32, and it learns about as well as fp32 on the same task.
TEST(CudaRuntime, Bf16AutocastsOnTheGpuAndLearnsLikeFp32) {
  if (no_cuda()) GTEST_SKIP() << "needs a CUDA device";
  torch::ScalarType hidden_fp32{}, hidden_bf16{};
  Losses fp32, bf16;
  {
    accelerate::Accelerator acc(accelerate::AcceleratorOptions().mixed_precision("no"));
    ASSERT_TRUE(acc.device().is_cuda());
    fp32 = train(acc, &hidden_fp32);
  }
  {
    accelerate::Accelerator acc(accelerate::AcceleratorOptions().mixed_precision("bf16"));
    ASSERT_TRUE(acc.device().is_cuda());
    EXPECT_EQ(acc.scaler(), nullptr) << "bf16 needs no loss scaling";
    bf16 = train(acc, &hidden_bf16);
  }
  EXPECT_EQ(hidden_fp32, torch::kFloat32);
  EXPECT_EQ(hidden_bf16, torch::kBFloat16);
  // The same test run on CPU (bf16 autocast there too) went 0.730 -> 0.00027 in both modes;
  // 1/50 leaves a wide margin for the GPU's other kernels and rounding.
  EXPECT_LT(fp32.last, fp32.first / 50) << "fp32 " << fp32.first << " -> " << fp32.last;
  EXPECT_LT(bf16.last, bf16.first / 50) << "bf16 " << bf16.first << " -> " << bf16.last;
  std::printf("fp32 %.6f -> %.6f, bf16 %.6f -> %.6f\n", fp32.first, fp32.last, bf16.first, bf16.last);
}

// save_state keeps the CUDA generator: numbers drawn on the GPU after load_state repeat the
// ones drawn after save_state, and differ from what the generator gives without the load.
TEST(CudaRuntime, CheckpointRestoresTheCudaGenerator) {
  if (no_cuda()) GTEST_SKIP() << "needs a CUDA device";
  const fs::path dir = fs::temp_directory_path() / ("accel-cuda-rng-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  accelerate::Accelerator acc;
  ASSERT_TRUE(acc.device().is_cuda());
  Mlp net(32, 128, 1);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
  acc.prepare(net, opt);
  torch::cuda::manual_seed_all(123);
  (void)torch::rand({16}, torch::Device(torch::kCUDA));  // advance it off the seed
  acc.save_state(dir.string());
  const auto after_save = torch::rand({1000}, torch::Device(torch::kCUDA)).cpu();
  const auto further = torch::rand({1000}, torch::Device(torch::kCUDA)).cpu();
  EXPECT_FALSE(torch::equal(after_save, further));
  acc.load_state(dir.string());
  const auto after_load = torch::rand({1000}, torch::Device(torch::kCUDA)).cpu();
  EXPECT_TRUE(torch::equal(after_save, after_load));
  fs::remove_all(dir);
}
