// prepare() of a model made anew: the blitz style (train; torch::save(net, path); net = Net();
// torch::load(net, path)), which accel-migrate follows with a second prepare (issue 47). The
// new module must be prepared, and the old one, now freed, forgotten: a checkpoint that still
// listed it would read freed memory, and a new module that got the old one's address would
// be skipped as "prepared already" (trained without gradient synchronisation).
#include <accelerate/accelerator/accelerator.h>
#include <accelerate/data/data_loader.h>

#include <torch/torch.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

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

// Item i is the tensor [i].
struct Items : torch::data::datasets::Dataset<Items> {
  torch::data::Example<> get(size_t i) override {
    return {torch::tensor({static_cast<int64_t>(i)}), torch::tensor({static_cast<int64_t>(i)})};
  }
  c10::optional<size_t> size() const override { return 8; }
};

// save_state records with each loader the split_batches of the Accelerator that prepared it
// (the loaders keep no copy of their own; resume_point converts a position by it), under the
// checkpoint format's name loader_<i>_split_batches, and each Accelerator of a process has its own.
TEST(Prepare, SaveStateRecordsTheAcceleratorsSplitBatches) {
  for (const bool split : {true, false}) {
    const fs::path dir = fs::temp_directory_path() / ("accel-prepare-split-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true).split_batches(split));
    EXPECT_EQ(acc.options().split_batches(), split);
    auto loader = acc.prepare_data_loader<torch::data::samplers::SequentialSampler>(
        Items().map(torch::data::transforms::Stack<>()), 2);
    EXPECT_EQ(loader->split_options().split_batches(), split);
    auto batch = loader->begin();
    EXPECT_EQ(batch->data.size(0), 2);
    acc.save_state(dir.string());
    torch::serialize::InputArchive archive;
    archive.load_from((dir / "process_0.pt").string());
    c10::IValue recorded;
    archive.read("loader_0_split_batches", recorded);
    EXPECT_EQ(recorded.toBool(), split);
    fs::remove_all(dir);
  }
}

}  // namespace
