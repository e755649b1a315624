// MixedPrecision on CPU: ambient autocast after prepare, autocast off in backward and in
// explicit regions, optimizers unaffected, and the fp16 loss-scaling protocol (run on CPU
// through force_loss_scaling): true gradients after backward, skipped steps that leave the
// optimizer state untouched, scale backoff/growth.
#include <accelerate/precision/precision.h>

#include "probe_net.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

using accelerate::AutocastGuard;
using accelerate::AutocastState;
using accelerate::MixedPrecision;
using accelerate::MixedPrecisionOptions;
using accelerate::PrecisionType;
namespace ac = accelerate::autocast;

namespace {

using precision_test::ProbeNet;

bool all_fp32(torch::nn::Module& m) {
  for (auto& p : m.parameters())
    if (p.scalar_type() != torch::kFloat32) return false;
  return true;
}

// Each test starts and ends with autocast off on this thread.
class Precision : public ::testing::Test {
 protected:
  void SetUp() override { AutocastState().apply(); }
  void TearDown() override { EXPECT_FALSE(AutocastState::current().any_enabled()); }
};

}  // namespace

TEST_F(Precision, ParsesModesAndRejectsOthersClearly) {
  EXPECT_EQ(accelerate::parse_precision("no"), PrecisionType::No);
  EXPECT_EQ(accelerate::parse_precision(" BF16 "), PrecisionType::BF16);
  EXPECT_EQ(accelerate::parse_precision("fp16"), PrecisionType::FP16);
  try {
    accelerate::parse_precision("fp32", "ACCELERATE_MIXED_PRECISION");
    FAIL() << "fp32 accepted";
  } catch (const accelerate::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ACCELERATE_MIXED_PRECISION='fp32'"), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), accelerate::ErrorCode::Config) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected one of no, fp16, bf16"), std::string::npos) << e.what();
  }
  try {
    accelerate::parse_precision("fp8");
    FAIL() << "fp8 accepted";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("'fp8' is not supported"), std::string::npos) << e.what();
  }
}

// One parser and one printer (precision_type.h) for the runtime and the launcher: every
// value prints and parses back, and the lists in error messages are exactly those values.
TEST(PrecisionType, ParsesWhatItPrintsAndListsExactlyTheAcceptedValues) {
  std::vector<std::string> printed;
  for (auto t : {PrecisionType::No, PrecisionType::FP16, PrecisionType::BF16, PrecisionType::FP8}) {
    printed.push_back(accelerate::to_string(t));
    EXPECT_EQ(accelerate::precision_from_string(printed.back()), t) << printed.back();
  }
  EXPECT_EQ(printed, (std::vector<std::string>{"no", "fp16", "bf16", "fp8"}));
  EXPECT_EQ(accelerate::precision_from_string(" FP16 "), PrecisionType::FP16);
  for (const char* bad : {"", "fp32", "yes", "bf 16x", "16"})
    EXPECT_FALSE(accelerate::precision_from_string(bad).has_value()) << bad;
  EXPECT_EQ(accelerate::precision_choices(true), "no, fp16, bf16, fp8");
  EXPECT_EQ(accelerate::precision_choices(false, ","), "no,fp16,bf16");
  // Each listed value is accepted by the reader that lists it.
  for (const std::string& v : {"no", "fp16", "bf16"}) EXPECT_NO_THROW(accelerate::parse_precision(v)) << v;
}

TEST_F(Precision, Fp16OnCpuFailsClearly) {
  try {
    MixedPrecision mp("fp16", torch::kCPU);
    FAIL() << "fp16 on CPU accepted";
  } catch (const accelerate::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("fp16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUDA"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
  }
  EXPECT_THROW(AutocastGuard(torch::kCPU, torch::kFloat64), accelerate::Error);
}

TEST_F(Precision, NoKeepsEverythingFp32) {
  ProbeNet net(4, 8, 2);
  MixedPrecision mp("no", torch::kCPU);
  mp.on_prepare_model(*net);
  EXPECT_FALSE(ac::is_enabled(torch::kCPU));
  auto out = net->forward(torch::randn({3, 4}));
  EXPECT_EQ(net->hidden_dtype, torch::kFloat32);
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
  EXPECT_FALSE(mp.uses_loss_scaling());
  {
    auto g = mp.autocast();
    EXPECT_FALSE(ac::is_enabled(torch::kCPU));
  }
}

TEST_F(Precision, Bf16PrepareTurnsAutocastOnForThisThreadOnly) {
  ProbeNet net(4, 8, 2);
  {
    MixedPrecision mp("bf16", torch::kCPU);
    EXPECT_FALSE(mp.uses_loss_scaling());
    mp.on_prepare_model(*net);
    EXPECT_TRUE(ac::is_enabled(torch::kCPU));
    EXPECT_EQ(ac::get_dtype(torch::kCPU), torch::kBFloat16);
    EXPECT_FALSE(AutocastState::current().cache_enabled);

    auto x = torch::randn({3, 4});
    auto loss = torch::mse_loss(net->forward(x), torch::zeros({3, 2}));
    EXPECT_EQ(net->hidden_dtype, torch::kBFloat16);
    EXPECT_EQ(loss.scalar_type(), torch::kFloat32);  // mse_loss is on autocast's fp32 list
    EXPECT_TRUE(all_fp32(*net));
    mp.backward(loss);
    for (auto& p : net->parameters()) EXPECT_EQ(p.grad().scalar_type(), torch::kFloat32);

    // Evaluation forwards are autocast as well (as the reference's wrapped forward is).
    {
      torch::NoGradGuard no_grad;
      net->eval();
      net->forward(x);
      EXPECT_EQ(net->hidden_dtype, torch::kBFloat16);
    }

    // Another thread (e.g. a data loader worker) is not affected.
    bool other_thread_enabled = true;
    std::thread([&] { other_thread_enabled = ac::is_enabled(torch::kCPU); }).join();
    EXPECT_FALSE(other_thread_enabled);
  }
  // Destroyed on the preparing thread: the previous state is back.
  EXPECT_FALSE(ac::is_enabled(torch::kCPU));
  EXPECT_TRUE(AutocastState::current().cache_enabled);
}

TEST_F(Precision, RegionsCanTurnAutocastOffAndOn) {
  ProbeNet net(4, 8, 2);
  auto x = torch::randn({2, 4});
  MixedPrecision mp("bf16", torch::kCPU);
  {
    auto on = mp.autocast();  // code outside prepared models
    net->forward(x);
    EXPECT_EQ(net->hidden_dtype, torch::kBFloat16);
    {
      AutocastGuard off(false);
      net->forward(x);
      EXPECT_EQ(net->hidden_dtype, torch::kFloat32);
    }
    net->forward(x);
    EXPECT_EQ(net->hidden_dtype, torch::kBFloat16);
  }
  net->forward(x);
  EXPECT_EQ(net->hidden_dtype, torch::kFloat32);

  mp.on_prepare_model(*net);
  {
    auto off = mp.autocast(false);
    net->forward(x);
    EXPECT_EQ(net->hidden_dtype, torch::kFloat32);
  }
  net->forward(x);
  EXPECT_EQ(net->hidden_dtype, torch::kBFloat16);
  mp.deactivate_autocast();

  // Standalone guard, and a moved guard restores exactly once.
  {
    AutocastGuard a(torch::kCPU, torch::kBFloat16);
    AutocastGuard b(std::move(a));
    EXPECT_TRUE(ac::is_enabled(torch::kCPU));
  }
  EXPECT_FALSE(ac::is_enabled(torch::kCPU));
}

TEST_F(Precision, BackwardRunsWithAutocastOff) {
  ProbeNet net(4, 8, 2);
  MixedPrecision mp("bf16", torch::kCPU);
  mp.on_prepare_model(*net);
  auto h = net->fc1(torch::randn({2, 4}));
  bool enabled_in_backward = true;
  h.register_hook([&](torch::Tensor g) {
    enabled_in_backward = ac::is_enabled(torch::kCPU);
    return g;
  });
  mp.backward(h.sum());
  EXPECT_FALSE(enabled_in_backward);
  EXPECT_TRUE(ac::is_enabled(torch::kCPU));  // back on after backward
  mp.deactivate_autocast();
}

TEST_F(Precision, WeightsUpdatedInPlaceAreSeenByTheNextForward) {
  ProbeNet net(4, 8, 2);
  MixedPrecision mp("bf16", torch::kCPU);
  mp.on_prepare_model(*net);
  auto x = torch::randn({2, 4});
  auto before = net->forward(x).to(torch::kFloat32);
  {
    torch::NoGradGuard no_grad;
    net->fc2->weight.add_(1.0);
  }
  auto after = net->forward(x).to(torch::kFloat32);
  EXPECT_FALSE(torch::allclose(before, after));
  mp.deactivate_autocast();
}

// optimizer.step() runs on the training thread with autocast on: its in-place ops are not
// on autocast's lists, so the result must be bit-identical to a step without autocast.
TEST_F(Precision, OptimizerStepsAreUnaffectedByAmbientAutocast) {
  using namespace torch::optim;
  auto run = [](bool autocast, int which) {
    torch::manual_seed(7);
    auto w = torch::randn({16, 16}).requires_grad_();
    auto b = torch::randn({16}).requires_grad_();
    std::vector<torch::Tensor> params{w, b};
    std::unique_ptr<Optimizer> opt;
    switch (which) {
      case 0:
        opt = std::make_unique<SGD>(params, SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
        break;
      case 1:
        opt = std::make_unique<Adam>(params, AdamOptions(0.01).amsgrad(true).weight_decay(0.01));
        break;
      case 2:
        opt = std::make_unique<AdamW>(params, AdamWOptions(0.01));
        break;
      case 3:
        opt = std::make_unique<RMSprop>(params, RMSpropOptions(0.01).momentum(0.5).centered(true));
        break;
      default:
        opt = std::make_unique<Adagrad>(params, AdagradOptions(0.1));
        break;
    }
    std::unique_ptr<AutocastGuard> guard;
    if (autocast) guard = std::make_unique<AutocastGuard>(torch::kCPU, torch::kBFloat16);
    for (int step = 0; step < 3; ++step) {
      w.mutable_grad() = torch::randn({16, 16});
      b.mutable_grad() = torch::randn({16});
      opt->step();
    }
    EXPECT_EQ(w.scalar_type(), torch::kFloat32);
    return torch::cat({w.detach().flatten(), b.detach()});
  };
  for (int which = 0; which < 5; ++which)
    EXPECT_TRUE(torch::equal(run(false, which), run(true, which))) << "optimizer " << which;
}

namespace {

// Linear regression on fixed data; returns the parameters after `steps` SGD steps.
struct Regression {
  torch::Tensor x, y;
  Regression() {
    torch::manual_seed(3);
    x = torch::randn({64, 4});
    y = x.matmul(torch::tensor({{1.f}, {-2.f}, {0.5f}, {3.f}}));
  }
};

torch::Tensor flat_params(torch::nn::Module& m) {
  std::vector<torch::Tensor> ps;
  for (auto& p : m.parameters()) ps.push_back(p.detach().flatten());
  return torch::cat(ps);
}

}  // namespace

// The loss-scaling protocol with a power-of-two scale is exact: training with it equals
// training without it, also across gradient accumulation.
TEST_F(Precision, LossScalingGivesTheTrueGradientsAfterEveryBackward) {
  Regression data;
  auto train = [&](bool scaling, bool accumulate) {
    torch::manual_seed(11);
    ProbeNet net(4, 8, 1);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    MixedPrecision mp("no", torch::kCPU, MixedPrecisionOptions().force_loss_scaling(scaling));
    mp.on_prepare_model(*net);
    for (int step = 0; step < 6; ++step) {
      opt.zero_grad();
      if (accumulate) {
        mp.backward(torch::mse_loss(net->forward(data.x.slice(0, 0, 32)), data.y.slice(0, 0, 32)), {}, {}, false,
                    false);
        mp.backward(torch::mse_loss(net->forward(data.x.slice(0, 32)), data.y.slice(0, 32)), {}, {}, false, true);
      } else {
        mp.backward(torch::mse_loss(net->forward(data.x), data.y));
      }
      EXPECT_FALSE(mp.optimizer_step_was_skipped());
      opt.step();
    }
    if (scaling) EXPECT_EQ(mp.scaler()->growth_tracker(), 6);
    return flat_params(*net);
  };
  EXPECT_TRUE(torch::equal(train(false, false), train(true, false)));
  EXPECT_TRUE(torch::equal(train(false, true), train(true, true)));
}

// An overflowing step is skipped as if optimizer.step() had not been called: Adam's moments
// and step count, momentum and weight decay all stay untouched.
TEST_F(Precision, OverflowSkipsTheStepWithoutTouchingOptimizerState) {
  Regression data;
  auto train = [&](bool inject_overflow, double* scale_after) {
    torch::manual_seed(5);
    ProbeNet net(4, 8, 1);
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(0.01).weight_decay(0.1));
    MixedPrecision mp("no", torch::kCPU, MixedPrecisionOptions().force_loss_scaling(true));
    mp.on_prepare_model(*net);
    mp.on_prepare_optimizer(opt);
    auto step = [&](double factor) {
      opt.zero_grad();
      mp.backward(torch::mse_loss(net->forward(data.x), data.y) * factor);
      opt.step();
    };
    step(1.0);
    if (inject_overflow) {
      // A finite loss whose scaled value (x 65536) overflows fp32, as fp16 gradients do.
      step(1e36);
      EXPECT_TRUE(mp.optimizer_step_was_skipped());
      for (auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
    }
    step(1.0);
    EXPECT_FALSE(mp.optimizer_step_was_skipped());
    *scale_after = mp.scaler()->get_scale();
    return flat_params(*net);
  };
  double clean_scale = 0, skipped_scale = 0;
  const auto reference = train(false, &clean_scale);
  const auto with_skip = train(true, &skipped_scale);
  EXPECT_TRUE(torch::equal(reference, with_skip));
  EXPECT_EQ(clean_scale, 65536.0);
  EXPECT_EQ(skipped_scale, 32768.0);
}

TEST_F(Precision, ScaleGrowsAfterCleanSyncStepsOnly) {
  ProbeNet net(4, 8, 1);
  MixedPrecision mp(
      "no", torch::kCPU,
      MixedPrecisionOptions().force_loss_scaling(true).scaler(accelerate::GradScalerOptions().growth_interval(2)));
  mp.on_prepare_model(*net);
  auto x = torch::randn({4, 4});
  auto loss = [&] { return net->forward(x).pow(2).mean(); };
  mp.backward(loss(), {}, {}, false, /*sync_step=*/false);  // accumulation: no update
  EXPECT_EQ(mp.scaler()->growth_tracker(), 0);
  mp.backward(loss());
  EXPECT_EQ(mp.scaler()->growth_tracker(), 1);
  mp.backward(loss());
  EXPECT_EQ(mp.scaler()->get_scale(), 131072.0);
  EXPECT_EQ(mp.scaler()->growth_tracker(), 0);
}

TEST_F(Precision, LossScalingWithoutPreparedParametersFailsClearly) {
  MixedPrecision mp("no", torch::kCPU, MixedPrecisionOptions().force_loss_scaling(true));
  auto w = torch::ones({2}, torch::requires_grad());
  EXPECT_THROW(mp.backward(w.sum()), std::runtime_error);
}

// bf16 training converges to (nearly) the fp32 result; prints the numbers for the docs.
TEST_F(Precision, Bf16TrainingConvergesLikeFp32) {
  torch::manual_seed(1);
  auto x = torch::randn({512, 32});
  auto teacher = torch::nn::Sequential(torch::nn::Linear(32, 64), torch::nn::Tanh(), torch::nn::Linear(64, 1));
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    y = teacher->forward(x);
  }
  auto train = [&](const std::string& mode, double* seconds) {
    torch::manual_seed(2);
    ProbeNet net(32, 128, 1);
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(3e-3));
    MixedPrecision mp(mode, torch::kCPU);
    mp.on_prepare_model(*net);
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < 300; ++step) {
      opt.zero_grad();
      mp.backward(torch::mse_loss(net->forward(x), y));
      opt.step();
    }
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(all_fp32(*net));
    AutocastGuard off(false);
    torch::NoGradGuard no_grad;
    return torch::mse_loss(net->forward(x), y).item<double>();
  };
  double t32 = 0, t16 = 0;
  const double initial = torch::mse_loss(torch::zeros_like(y), y).item<double>();
  const double fp32 = train("no", &t32);
  const double bf16 = train("bf16", &t16);
  std::printf("[precision] final MSE fp32=%.6f bf16=%.6f (target variance %.4f); 300 steps: fp32 %.3f s, bf16 %.3f s\n",
              fp32, bf16, initial, t32, t16);
  EXPECT_LT(fp32, 0.02 * initial);
  EXPECT_LT(bf16, 0.02 * initial);
  EXPECT_NEAR(bf16, fp32, 0.01 * initial);
}
