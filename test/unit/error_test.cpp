// The runtime's one exception family (accelerate/error.h): representative failures throw an
// accelerate::Error with the expected code and a message that says what to do.
#include <accelerate/accelerate.h>
#include <accelerate/launch/detail/launch_env.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using accelerate::ErrorCode;

// Runs `call`, expects an accelerate::Error with `code` whose message contains every hint.
void expect_error(const std::function<void()>& call, ErrorCode code, const std::vector<std::string>& hints) {
  try {
    call();
    ADD_FAILURE() << "no accelerate::Error (expected " << accelerate::to_string(code) << ")";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), code) << accelerate::to_string(e.code()) << ": " << e.what();
    for (const auto& hint : hints) EXPECT_NE(std::string(e.what()).find(hint), std::string::npos) << e.what();
  }
}

TEST(Error, SubclassesCarryTheirCode) {
  EXPECT_EQ(accelerate::DistributedError("x").code(), ErrorCode::Distributed);
  EXPECT_EQ(accelerate::CheckpointError("x").code(), ErrorCode::Checkpoint);
  EXPECT_EQ(accelerate::LaunchEnvError("x").code(), ErrorCode::Environment);
  EXPECT_EQ(accelerate::FsdpConfigError("x").code(), ErrorCode::Config);
  EXPECT_STREQ(accelerate::to_string(ErrorCode::SharedMemory), "SharedMemory");
  // Still a std::runtime_error for code that catches those.
  EXPECT_THROW(throw accelerate::CheckpointError("x"), std::runtime_error);
}

TEST(Error, BadMixedPrecisionIsConfig) {
  expect_error([] { accelerate::Accelerator acc(accelerate::AcceleratorOptions().mixed_precision("fp32")); },
               ErrorCode::Config, {"mixed_precision='fp32'", "no, fp16, bf16"});
}

TEST(Error, BadFsdpStrategy) {
  // Given in code (or a config file): Config, naming the accepted values.
  expect_error([] { accelerate::parse_sharding_strategy("HALF_SHARD", "fsdp_sharding_strategy"); }, ErrorCode::Config,
               {"fsdp_sharding_strategy='HALF_SHARD'", "FULL_SHARD"});
  // From the launch environment: Environment, naming the variable.
  expect_error(
      [] {
        accelerate::parse_launch_env({{"FSDP_SHARDING_STRATEGY", "HALF_SHARD"}});
      },
      ErrorCode::Environment, {"FSDP_SHARDING_STRATEGY='HALF_SHARD'", "FULL_SHARD"});
}

TEST(Error, MissingCheckpointDirectory) {
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  expect_error([&] { acc.load_state("/nonexistent/accelerate-error-test"); }, ErrorCode::Checkpoint,
               {"/nonexistent/accelerate-error-test", "does not exist"});
}

TEST(Error, BroadcastFromAMissingProcess) {
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  expect_error([&] { acc.broadcast(torch::zeros({2}), 3); }, ErrorCode::InvalidArgument,
               {"broadcast from process 3", "process_index()"});
}

// No destructor of the runtime throws; done() is where MainProcessFirst reports a failure.
TEST(Error, MainProcessFirstDoesNotThrowFromItsDestructor) {
  static_assert(std::is_nothrow_destructible_v<accelerate::MainProcessFirst>);
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  {
    auto first = acc.main_process_first();
    first.done();
    first.done();  // once only
  }
  EXPECT_THROW(
      {
        auto first = acc.local_main_process_first();
        throw accelerate::Error(accelerate::ErrorCode::Internal, "left by an exception");
      },
      accelerate::Error);
}

TEST(Error, SplitRangeOutOfRange) {
  expect_error([] { accelerate::split_range(0, 10, 2, 2); }, ErrorCode::InvalidArgument, {"index in [0, count)"});
}

}  // namespace

// gather_object's byte form (accelerate/core/detail/object_bytes.h): a round trip keeps every
// item; bytes that do not hold the announced items (a truncated transfer, another type on
// another process) are refused with a Distributed error instead of reading past the end.
TEST(Error, GatherObjectBytesAreChecked) {
  namespace d = accelerate::detail;
  const std::vector<std::string> words{"", std::string("a\0b", 3), "longer text"};
  std::vector<std::string> back;
  d::objects_from_bytes(d::objects_to_bytes(words), back);
  EXPECT_EQ(back, words);
  const std::string ints = d::objects_to_bytes(std::vector<int32_t>{1, 2});
  std::vector<int32_t> back_ints;
  d::objects_from_bytes(ints, back_ints);
  EXPECT_EQ(back_ints, (std::vector<int32_t>{1, 2}));
  std::vector<int32_t> cut;
  expect_error([&] { d::objects_from_bytes(ints.substr(0, ints.size() - 1), cut); }, ErrorCode::Distributed,
               {"truncated"});
  expect_error([&] { d::objects_from_bytes(ints.substr(0, 5), cut); }, ErrorCode::Distributed, {"truncated"});
  std::vector<int64_t> wider;
  expect_error([&] { d::objects_from_bytes(ints, wider); }, ErrorCode::Distributed, {"same type"});
}
