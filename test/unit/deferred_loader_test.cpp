// Loaders made before main (accelerate/deferred_loader.h): defer_data_loader draws from the
// default generator exactly where make_data_loader draws, so a program whose global loader
// accel-migrate deferred computes what the original computes, and it refuses to be used
// before an Accelerator exists.
#include <accelerate/accelerate.h>

#include <gtest/gtest.h>

#include <vector>

namespace {

namespace data = torch::data;
using Batches = std::vector<std::vector<int64_t>>;

struct Indices : data::datasets::Dataset<Indices> {
  explicit Indices(int64_t n) : n(n) {}
  data::Example<> get(size_t i) override {
    return {torch::tensor({static_cast<int64_t>(i)}), torch::tensor({static_cast<int64_t>(i)})};
  }
  c10::optional<size_t> size() const override { return static_cast<size_t>(n); }
  int64_t n;
};

template <typename Loader>
Batches epochs(Loader& loader, int count) {
  Batches out;
  for (int e = 0; e < count; ++e)
    for (auto& batch : loader) {
      auto ids = batch.data.flatten().contiguous();
      out.emplace_back(ids.template data_ptr<int64_t>(), ids.template data_ptr<int64_t>() + ids.numel());
    }
  return out;
}

// What a program with `auto loader = make_data_loader(...)` and a model declared after it
// draws: the sampler's first order, the model's weights, then one order per epoch.
TEST(DeferredLoader, DrawsWhereMakeDataLoaderDraws) {
  const int64_t N = 23, B = 4;
  auto dataset = [&] { return Indices(N).map(data::transforms::Stack<>()); };
  torch::manual_seed(11);
  auto original = data::make_data_loader(dataset(), data::DataLoaderOptions(B));
  const torch::Tensor weights = torch::rand({5});
  const Batches want = epochs(*original, 2);
  const torch::Tensor after = torch::rand({5});

  torch::manual_seed(11);
  auto deferred = accelerate::defer_data_loader(dataset(), data::DataLoaderOptions(B));
  EXPECT_TRUE(torch::equal(torch::rand({5}), weights)) << "the sampler drew its first order at once";
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  EXPECT_EQ(epochs(*deferred, 2), want);
  EXPECT_TRUE(torch::equal(torch::rand({5}), after));
  EXPECT_EQ(deferred->size().value(), static_cast<size_t>((N + B - 1) / B));
}

TEST(DeferredLoader, SamplerGivenAndSequential) {
  torch::manual_seed(3);
  auto given = accelerate::defer_data_loader(Indices(6).map(data::transforms::Stack<>()),
                                             data::samplers::SequentialSampler(6), data::DataLoaderOptions(4));
  auto sequential =
      accelerate::defer_data_loader<data::samplers::SequentialSampler>(Indices(5).map(data::transforms::Stack<>()), 2);
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  EXPECT_EQ(epochs(*given, 1), (Batches{{0, 1, 2, 3}, {4, 5}}));
  EXPECT_EQ(epochs(*sequential, 1), (Batches{{0, 1}, {2, 3}, {4}}));
}

TEST(DeferredLoader, UsedBeforeTheAcceleratorThrows) {
  ASSERT_FALSE(accelerate::Accelerator::exists());
  auto loader = accelerate::defer_data_loader(Indices(4).map(data::transforms::Stack<>()), 2);
  try {
    loader.get();
    ADD_FAILURE() << "no accelerate::Error";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::InvalidState);
    EXPECT_NE(std::string(e.what()).find("before main made the Accelerator"), std::string::npos) << e.what();
  }
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true));
  EXPECT_EQ(epochs(*loader, 1).size(), 2u) << "usable once the Accelerator exists";
}

}  // namespace
