// prepare() of a model made anew: the blitz style (train; torch::save(net, path); net = Net();
// torch::load(net, path)), which accel-migrate follows with a second prepare (issue 47). The
// new module must be prepared, and the old one, now freed, forgotten: a checkpoint that still
// listed it would read freed memory, and a new module that got the old one's address would
// be skipped as "prepared already" (trained without gradient synchronisation).
#include <accelerate/accelerator.h>

#include <torch/torch.h>

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace {

int model_files(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().filename().string().rfind("model_", 0) == 0;
  return n;
}

TEST(Prepare, AModelMadeAnewIsPreparedAndTheFreedOneForgotten) {
  const fs::path dir = fs::temp_directory_path() / ("accel-prepare-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  accelerate::Accelerator acc;
  torch::manual_seed(0);
  torch::nn::Linear net(3, 2);
  acc.prepare(net);
  // Several times: the allocator tends to hand a freed module's address to the next one.
  for (int i = 0; i < 4; ++i) {
    net = torch::nn::Linear(3, 2);
    acc.prepare(net);
  }
  acc.save_state(dir.string());
  EXPECT_EQ(model_files(dir), 1) << "only the live model is in the checkpoint";
  torch::nn::Linear loaded(3, 2);
  torch::load(loaded, (dir / "model_0.pt").string());
  EXPECT_TRUE(torch::equal(loaded->weight, net->weight)) << "the checkpoint holds the model made last";
  fs::remove_all(dir);
}

TEST(Prepare, TheSameModelTwiceIsPreparedOnce) {
  const fs::path dir = fs::temp_directory_path() / ("accel-prepare-twice-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  accelerate::Accelerator acc;
  torch::nn::Linear net(3, 2);
  acc.prepare(net);
  acc.prepare(net);
  acc.save_state(dir.string());
  EXPECT_EQ(model_files(dir), 1);
  fs::remove_all(dir);
}

}  // namespace
