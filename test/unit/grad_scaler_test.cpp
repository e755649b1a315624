// GradScaler on CPU: the portable path (and whatever Auto picks here) must follow the
// fused kernels' rule: unscale exactly, detect inf/nan, back off, grow after N clean steps.
#include <accelerate/core/detail/torch_compat.h>
#include <accelerate/precision/grad_scaler.h>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <sstream>

using accelerate::AmpKernels;
using accelerate::GradScaler;
using accelerate::GradScalerOptions;

namespace {

torch::Tensor param_with_grad(std::vector<float> values, std::vector<float> grad) {
  auto p = torch::tensor(values).requires_grad_();
  p.mutable_grad() = torch::tensor(grad);
  return p;
}

GradScalerOptions portable() { return GradScalerOptions().kernels(AmpKernels::Portable); }

}  // namespace

TEST(GradScaler, DefaultsMatchTheReference) {
  GradScaler scaler;
  const auto s = scaler.state_dict();
  EXPECT_EQ(s.scale, 65536.0);
  EXPECT_EQ(s.growth_factor, 2.0);
  EXPECT_EQ(s.backoff_factor, 0.5);
  EXPECT_EQ(s.growth_interval, 2000);
  EXPECT_EQ(s.growth_tracker, 0);
  EXPECT_FALSE(scaler.found_inf());
}

TEST(GradScaler, RejectsBadOptions) {
  EXPECT_THROW(GradScaler(GradScalerOptions().init_scale(0)), accelerate::Error);
  EXPECT_THROW(GradScaler(GradScalerOptions().growth_factor(1.0)), accelerate::Error);
  EXPECT_THROW(GradScaler(GradScalerOptions().backoff_factor(1.5)), accelerate::Error);
  EXPECT_THROW(GradScaler(GradScalerOptions().growth_interval(0)), accelerate::Error);
}

// A user error (issue 30 item 3): accelerate::Error with its code, not c10::Error.
TEST(GradScaler, ScalingAnUndefinedLossIsAnInvalidArgumentNamingIt) {
  GradScaler scaler(portable());
  try {
    scaler.scale(torch::Tensor());
    FAIL() << "scale(undefined) must throw";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("the loss is undefined"), std::string::npos) << e.what();
  }
}

TEST(GradScaler, ScaleKeepsShapeAndComputesInFp32) {
  GradScaler scaler(portable());
  const auto loss = torch::tensor(1.5f).to(torch::kBFloat16);
  const auto scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.dim(), 0);
  EXPECT_EQ(scaled.scalar_type(), torch::kFloat32);
  EXPECT_EQ(scaled.item<float>(), 1.5f * 65536.0f);
  // fp16 would overflow: 4 * 65536 > 65504.
  const auto half = scaler.scale(torch::tensor(4.0f).to(torch::kHalf));
  EXPECT_TRUE(std::isfinite(half.item<float>()));
}

TEST(GradScaler, UnscaleIsExactAndFindsNoInfOnCleanGrads) {
  GradScaler scaler(portable());
  auto p = param_with_grad({1, 2, 3}, {65536.f * 0.25f, -65536.f * 3.f, 65536.f * 1e-3f});
  EXPECT_FALSE(scaler.unscale_({p}));
  EXPECT_TRUE(torch::equal(p.grad(), torch::tensor({0.25f, -3.f, 1e-3f})));
  EXPECT_FALSE(scaler.found_inf());
  scaler.rescale_({p});
  EXPECT_TRUE(torch::equal(p.grad(), torch::tensor({65536.f * 0.25f, -65536.f * 3.f, 65536.f * 1e-3f})));
}

TEST(GradScaler, InfOrNanSkipsTheStepAndBacksOff) {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    GradScaler scaler(portable());
    auto clean = param_with_grad({1, 1}, {65536.f, 65536.f});
    auto broken = param_with_grad({2, 2}, {1.f, bad});
    torch::optim::SGD opt({clean, broken}, torch::optim::SGDOptions(0.1));
    EXPECT_FALSE(scaler.step(opt));  // unscales, finds the bad value, does not step
    EXPECT_TRUE(torch::equal(clean.detach(), torch::tensor({1.f, 1.f})));
    EXPECT_TRUE(torch::equal(broken.detach(), torch::tensor({2.f, 2.f})));
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 32768.0);
    EXPECT_EQ(scaler.growth_tracker(), 0);
    EXPECT_FALSE(scaler.found_inf());
  }
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanStepsAndTrackerResetsOnOverflow) {
  GradScaler scaler(portable().growth_interval(3));
  auto p = param_with_grad({0}, {1});
  for (int i = 1; i <= 2; ++i) {
    scaler.unscale_({p});
    scaler.update();
    EXPECT_EQ(scaler.growth_tracker(), i);
    EXPECT_EQ(scaler.get_scale(), 65536.0);
  }
  scaler.unscale_({p});
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 131072.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);

  scaler.unscale_({p});
  scaler.update();  // tracker 1
  p.mutable_grad() = torch::tensor({std::numeric_limits<float>::infinity()});
  scaler.unscale_({p});
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(GradScaler, NeverGrowsToInfinity) {
  GradScaler scaler(portable().init_scale(std::pow(2.0, 127)).growth_interval(1));
  auto p = param_with_grad({0}, {1});
  scaler.unscale_({p});
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), std::pow(2.0, 127));
}

TEST(GradScaler, StepUnscalesEachOptimizerOnce) {
  GradScaler scaler(portable());
  auto p = param_with_grad({1}, {65536.f * 2.f});
  torch::optim::SGD opt({p}, torch::optim::SGDOptions(0.5));
  scaler.unscale_(opt);           // user unscales for clipping...
  EXPECT_TRUE(scaler.step(opt));  // ...and step does not unscale again
  EXPECT_EQ(p.detach().item<float>(), 1.f - 0.5f * 2.f);
  scaler.update();
  p.mutable_grad() = torch::tensor({65536.f * 2.f});
  EXPECT_TRUE(scaler.step(opt));  // after update() the optimizer is unscaled again
  EXPECT_EQ(p.detach().item<float>(), 0.f - 0.5f * 2.f);
}

TEST(GradScaler, SparseGradientsAreCoalescedAndUnscaled) {
  GradScaler scaler(portable());
  auto p = torch::zeros({4}).requires_grad_();
  auto idx = torch::tensor({{1, 1, 3}}, torch::kLong);
  p.mutable_grad() = torch::sparse_coo_tensor(idx, torch::tensor({65536.f, 65536.f, 131072.f}), {4});
  EXPECT_FALSE(scaler.unscale_({p}));
  EXPECT_TRUE(torch::equal(p.grad().to_dense(), torch::tensor({0.f, 2.f, 0.f, 2.f})));
}

TEST(GradScaler, AutoMatchesPortableOnCpu) {
  GradScaler a(GradScalerOptions().growth_interval(2)), b(portable().growth_interval(2));
  const float inf = std::numeric_limits<float>::infinity();
  for (float g : {1.f, 3.f, inf, 5.f, 7.f, 9.f}) {
    auto pa = param_with_grad({0, 0}, {g, 1.f}), pb = param_with_grad({0, 0}, {g, 1.f});
    EXPECT_EQ(a.unscale_({pa}), b.unscale_({pb}));
    a.update();
    b.update();
    EXPECT_EQ(a.get_scale(), b.get_scale());
    EXPECT_EQ(a.growth_tracker(), b.growth_tracker());
  }
}

TEST(GradScaler, FusedKernelsAreUsedOnlyWhereRegistered) {
  // LibTorch 1.13 registers the fused AMP kernels for CUDA only; 2.4+ for CPU too.
  if (accelerate::detail::compat::cpu_has_fused_amp_kernels()) {
    EXPECT_TRUE(GradScaler().uses_fused_kernels(torch::kCPU));
    EXPECT_TRUE(GradScaler(GradScalerOptions().kernels(AmpKernels::Fused)).uses_fused_kernels(torch::kCPU));
  } else {
    EXPECT_FALSE(GradScaler().uses_fused_kernels(torch::kCPU));
    EXPECT_THROW(GradScaler(GradScalerOptions().kernels(AmpKernels::Fused)).uses_fused_kernels(torch::kCPU),
                 std::runtime_error);
  }
  EXPECT_FALSE(GradScaler(portable()).uses_fused_kernels(torch::kCPU));
  if (torch::cuda::is_available()) EXPECT_TRUE(GradScaler().uses_fused_kernels(torch::kCUDA));
}

TEST(GradScaler, StateRoundTripsThroughStateDictAndArchive) {
  GradScaler scaler(portable().growth_interval(10));
  auto p = param_with_grad({0}, {1});
  for (int i = 0; i < 3; ++i) {
    scaler.unscale_({p});
    scaler.update();
  }
  p.mutable_grad() = torch::tensor({std::nanf("")});
  scaler.unscale_({p});
  scaler.update();
  for (int i = 0; i < 2; ++i) {
    p.mutable_grad() = torch::tensor({1.f});
    scaler.unscale_({p});
    scaler.update();
  }
  const auto saved = scaler.state_dict();
  EXPECT_EQ(saved.scale, 32768.0);
  EXPECT_EQ(saved.growth_tracker, 2);

  GradScaler restored(portable());
  restored.load_state_dict(saved);
  EXPECT_EQ(restored.get_scale(), 32768.0);
  EXPECT_EQ(restored.growth_tracker(), 2);
  EXPECT_EQ(restored.options().growth_interval(), 10);

  torch::serialize::OutputArchive out;
  scaler.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream in_bytes(bytes.str());
  torch::serialize::InputArchive in;
  in.load_from(in_bytes);
  GradScaler loaded(portable());
  loaded.load(in);
  EXPECT_EQ(loaded.get_scale(), 32768.0);
  EXPECT_EQ(loaded.growth_tracker(), 2);
  EXPECT_EQ(loaded.options().growth_interval(), 10);

  auto bad = saved;
  bad.growth_tracker = 10;
  EXPECT_THROW(loaded.load_state_dict(bad), accelerate::Error);
}
