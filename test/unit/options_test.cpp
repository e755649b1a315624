// Accelerator::options() reports the options in force (options.h): each optional the
// environment can set is resolved at construction, code over environment over default.
#include <accelerate/accelerate.h>
#include <accelerate/fsdp/model_file.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

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
  EXPECT_FALSE(o.fsdp_plugin().has_value());      // FSDP off
  EXPECT_EQ(o.gradient_clipping().value(), 0.0);  // no clipping
}

TEST(Options, InvalidValuesAreConfigErrors) {
  for (const auto& options : {accelerate::AcceleratorOptions().gradient_accumulation_steps(0),
                              accelerate::AcceleratorOptions().timeout(std::chrono::milliseconds(0)),
                              accelerate::AcceleratorOptions().gradient_clipping(-1.0)}) {
    try {
      accelerate::Accelerator acc(options);
      ADD_FAILURE() << "accepted";
    } catch (const accelerate::Error& e) {
      EXPECT_EQ(e.code(), accelerate::ErrorCode::Config) << e.what();
    }
  }
}

// Run by ctest (runtime_options_env) with ACCELERATE_MIXED_PRECISION=bf16,
// ACCELERATE_GRADIENT_ACCUMULATION_STEPS=4, ACCELERATE_TIMEOUT_SECONDS=60 and
// ACCELERATE_GRADIENT_CLIPPING=0.5.
TEST(Options, EnvironmentThenCode) {
  if (std::getenv("ACCELERATE_MIXED_PRECISION") == nullptr) GTEST_SKIP() << "ACCELERATE_MIXED_PRECISION is not set";
  accelerate::Accelerator from_env(accelerate::AcceleratorOptions().cpu(true));
  EXPECT_EQ(from_env.options().mixed_precision().value(), "bf16");
  EXPECT_EQ(from_env.mixed_precision(), "bf16");
  EXPECT_EQ(from_env.options().gradient_accumulation_steps().value(), 4);
  EXPECT_EQ(from_env.options().timeout().value(), std::chrono::seconds(60));
  EXPECT_EQ(from_env.options().gradient_clipping().value(), 0.5);
  // A value given in code wins over the environment.
  accelerate::Accelerator from_code(
      accelerate::AcceleratorOptions().mixed_precision("no").gradient_accumulation_steps(2));
  EXPECT_EQ(from_code.options().mixed_precision().value(), "no");
  EXPECT_EQ(from_code.mixed_precision(), "no");
  EXPECT_EQ(from_code.options().gradient_accumulation_steps().value(), 2);
}

// One step of a small linear model from fixed data; returns its weights after
// optimizer_step(). `program_clip` clips in the program instead (the reference's idiom).
torch::Tensor weights_after_step(const accelerate::AcceleratorOptions& options, double program_clip) {
  torch::manual_seed(7);
  accelerate::Accelerator acc(accelerate::AcceleratorOptions(options).cpu(true));
  torch::nn::Linear model(4, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  acc.prepare(model, opt);
  torch::Tensor x = torch::arange(32, torch::kFloat).reshape({8, 4});
  torch::Tensor loss = (model(x) - 100.0).pow(2).mean();  // a gradient norm far above 1
  acc.backward(loss);
  if (program_clip > 0) acc.clip_grad_norm_(model->parameters(), program_clip);
  EXPECT_TRUE(acc.optimizer_step(opt));
  return torch::cat({model->weight.detach().flatten(), model->bias.detach().flatten()});
}

// gradient_clipping (DeepSpeed's, mapped by the launcher): optimizer_step() clips the
// optimizer's parameters to the norm, exactly as the program's own clip_grad_norm_ would.
TEST(Options, GradientClippingClipsAtTheStep) {
  if (std::getenv("ACCELERATE_GRADIENT_CLIPPING") != nullptr) GTEST_SKIP() << "expects no ACCELERATE_* variables";
  const torch::Tensor plain = weights_after_step(accelerate::AcceleratorOptions(), 0);
  const torch::Tensor by_option = weights_after_step(accelerate::AcceleratorOptions().gradient_clipping(1.0), 0);
  const torch::Tensor by_program = weights_after_step(accelerate::AcceleratorOptions(), 1.0);
  EXPECT_TRUE(torch::equal(by_option, by_program)) << by_option << by_program;
  EXPECT_FALSE(torch::allclose(by_option, plain));  // the clipping did something
}

}  // namespace

namespace {

// A model with what a sharded save keeps beside the flat parameters: buffers (BatchNorm's
// running statistics) and a frozen parameter.
struct NormNetImpl : torch::nn::Module {
  NormNetImpl()
      : fc(register_module("fc", torch::nn::Linear(3, 4))),
        bn(register_module("bn", torch::nn::BatchNorm1d(4))),
        frozen(register_parameter("frozen", torch::ones({2}), /*requires_grad=*/false)) {}
  torch::Tensor forward(const torch::Tensor& x) { return bn(fc(x)) * frozen[0]; }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::Tensor frozen;
};
TORCH_MODULE(NormNet);

// accelerate merge-weights' library calls (model_file.h) on a SHARDED_STATE_DICT save of one
// process: the merged file loads into a plain model, buffers and frozen parameter included,
// with every value the trained model has.
TEST(ModelFile, ShardedSaveMergesWithBuffersAndFrozenParameters) {
  if (std::getenv("ACCELERATE_USE_FSDP") != nullptr) GTEST_SKIP() << "expects no ACCELERATE_* variables";
  torch::manual_seed(3);
  const auto dir = std::filesystem::temp_directory_path() / ("accel-model-file-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true).fsdp_plugin(
      accelerate::FullyShardedDataParallelPlugin().state_dict_type(accelerate::StateDictType::SHARDED_STATE_DICT)));
  NormNet model;
  model->frozen.fill_(2.5);
  model->forward(torch::randn({8, 3}));  // moves the running statistics
  acc.save_model(model, (dir / "saved").string());
  const auto tensors = accelerate::read_model_file((dir / "saved" / "fsdp_metadata.pt").string());
  accelerate::write_model_file(tensors, (dir / "merged.pt").string());
  NormNet plain;
  torch::load(plain, (dir / "merged.pt").string());
  const auto want = model->named_parameters(), got = plain->named_parameters();
  for (const auto& p : want) EXPECT_TRUE(torch::equal(got[p.key()], p.value())) << p.key();
  const auto want_b = model->named_buffers(), got_b = plain->named_buffers();
  EXPECT_EQ(want_b.size(), got_b.size());
  for (const auto& b : want_b) EXPECT_TRUE(torch::equal(got_b[b.key()], b.value())) << b.key();
  int buffers = 0;
  for (const auto& t : tensors) buffers += t.is_buffer ? 1 : 0;
  EXPECT_EQ(buffers, static_cast<int>(want_b.size()));  // marked as buffers, not parameters
  std::filesystem::remove_all(dir);
}

}  // namespace
