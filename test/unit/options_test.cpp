// Accelerator::options() reports the options in force (options.h): each optional the
// environment can set is resolved at construction, code over environment over default.
#include <accelerate/accelerate.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

namespace {

TEST(Options, DefaultsAndCode) {
  if (std::getenv("ACCELERATE_MIXED_PRECISION") != nullptr) GTEST_SKIP() << "expects no ACCELERATE_* variables";
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true).gradient_accumulation_steps(3));
  const auto& o = acc.options();
  EXPECT_EQ(o.mixed_precision().value(), "no");
  EXPECT_EQ(o.gradient_accumulation_steps().value(), 3);
  EXPECT_EQ(acc.gradient_accumulation_steps(), 3);
  EXPECT_TRUE(o.cpu().value());
  EXPECT_FALSE(o.split_batches().value());
  EXPECT_EQ(o.backend().value(), "gloo");
  EXPECT_EQ(o.timeout().value(), std::chrono::minutes(30));
  EXPECT_TRUE(o.shared_memory().value());
  EXPECT_FALSE(o.fsdp_plugin().has_value());  // FSDP off
}

TEST(Options, InvalidValuesAreConfigErrors) {
  for (const auto& options : {accelerate::AcceleratorOptions().gradient_accumulation_steps(0),
                              accelerate::AcceleratorOptions().timeout(std::chrono::milliseconds(0))}) {
    try {
      accelerate::Accelerator acc(options);
      ADD_FAILURE() << "accepted";
    } catch (const accelerate::Error& e) {
      EXPECT_EQ(e.code(), accelerate::ErrorCode::Config) << e.what();
    }
  }
}

// Run by ctest (runtime_options_env) with ACCELERATE_MIXED_PRECISION=bf16,
// ACCELERATE_GRADIENT_ACCUMULATION_STEPS=4 and ACCELERATE_TIMEOUT_SECONDS=60.
TEST(Options, EnvironmentThenCode) {
  if (std::getenv("ACCELERATE_MIXED_PRECISION") == nullptr) GTEST_SKIP() << "ACCELERATE_MIXED_PRECISION is not set";
  accelerate::Accelerator from_env(accelerate::AcceleratorOptions().cpu(true));
  EXPECT_EQ(from_env.options().mixed_precision().value(), "bf16");
  EXPECT_EQ(from_env.mixed_precision(), "bf16");
  EXPECT_EQ(from_env.options().gradient_accumulation_steps().value(), 4);
  EXPECT_EQ(from_env.options().timeout().value(), std::chrono::seconds(60));
  // A value given in code wins over the environment.
  accelerate::Accelerator from_code(
      accelerate::AcceleratorOptions().mixed_precision("no").gradient_accumulation_steps(2));
  EXPECT_EQ(from_code.options().mixed_precision().value(), "no");
  EXPECT_EQ(from_code.mixed_precision(), "no");
  EXPECT_EQ(from_code.options().gradient_accumulation_steps().value(), 2);
}

}  // namespace
