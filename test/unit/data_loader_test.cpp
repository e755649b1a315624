// The prepared loader end to end inside one process: every rank's loader is built from a
// LoaderContext by hand, so the whole pipeline (sampler wrapping, LibTorch's loader and
// its workers, device transfer, published loader state) is checked for 1..3 processes
// without a process group. test/unit/data_multiprocess_test.cpp runs it for real.
#include <accelerate/data/data_loader.h>

#include "data_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace {

using accelerate::BatchSplitter;
using accelerate::DataSplitOptions;
using accelerate::LoaderContext;
using Batches = std::vector<std::vector<size_t>>;
namespace data = torch::data;

// Item i is the tensor [i]; counts every get() so that tests can see what was loaded.
struct IndexDataset : data::datasets::Dataset<IndexDataset> {
  explicit IndexDataset(size_t n, std::shared_ptr<std::vector<std::atomic<int>>> loads = nullptr)
      : n(n), loads(std::move(loads)) {}
  data::Example<> get(size_t i) override {
    if (loads) ++(*loads)[i];
    return {torch::tensor({static_cast<int64_t>(i)}), torch::tensor({static_cast<int64_t>(i)})};
  }
  c10::optional<size_t> size() const override { return n; }
  size_t n;
  std::shared_ptr<std::vector<std::atomic<int>>> loads;
};

// Reads items n0, n0+1, ... in order: a stream with no random access.
struct CountingStream : data::datasets::BatchDataset<CountingStream, std::vector<data::Example<>>, size_t> {
  explicit CountingStream(size_t n) : n(n), next(std::make_shared<size_t>(0)) {}
  std::vector<data::Example<>> get_batch(size_t count) override {
    std::vector<data::Example<>> out;
    for (size_t k = 0; k < count; ++k, ++*next)
      out.push_back({torch::tensor({static_cast<int64_t>(*next)}), torch::tensor({0})});
    return out;
  }
  c10::optional<size_t> size() const override { return n; }
  size_t n;
  std::shared_ptr<size_t> next;
};

struct CountingStateful : data::datasets::StatefulDataset<CountingStateful> {
  explicit CountingStateful(size_t n) : n(n) {}
  c10::optional<std::vector<data::Example<>>> get_batch(size_t count) override {
    if (next >= n) return c10::nullopt;
    std::vector<data::Example<>> out;
    for (; count > 0 && next < n; --count, ++next)
      out.push_back({torch::tensor({static_cast<int64_t>(next)}), torch::tensor({0})});
    return out;
  }
  c10::optional<size_t> size() const override { return c10::nullopt; }
  void reset() override { next = 0; }
  void save(torch::serialize::OutputArchive&) const override {}
  void load(torch::serialize::InputArchive&) override {}
  size_t n, next = 0;
};

std::vector<size_t> ids(const torch::Tensor& t) {
  auto flat = t.reshape({-1}).to(torch::kInt64);
  std::vector<size_t> out;
  for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat[i].item<int64_t>());
  return out;
}
std::vector<size_t> ids(const data::Example<>& e) { return ids(e.data); }
std::vector<size_t> ids(const std::vector<data::Example<>>& batch) {
  std::vector<size_t> out;
  for (auto& e : batch) out.push_back(static_cast<size_t>(e.data.item<int64_t>()));
  return out;
}

LoaderContext ctx(int64_t P, int64_t rank, bool split = false, bool even = true,
                  accelerate::LoaderState* state = nullptr) {
  LoaderContext c;
  c.num_processes = P;
  c.process_index = rank;
  c.split_batches = split;
  c.even_batches = even;
  c.state = state;
  return c;
}

template <typename Loader>
Batches collect(Loader& loader) {
  Batches out;
  for (auto& batch : loader) out.push_back(ids(batch));
  return out;
}

TEST(PreparedLoader, SequentialMatchesShardingForEveryRank) {
  for (int64_t P = 1; P <= 3; ++P)
    for (int flags = 0; flags < 8; ++flags)
      for (size_t workers : {0, 2}) {
        const bool drop = flags & 1, split = flags & 2, even = flags & 4;
        const size_t N = 23, B = split ? 6 : 3;
        for (int64_t r = 0; r < P; ++r) {
          auto loads = std::make_shared<std::vector<std::atomic<int>>>(N);
          auto loader = accelerate::make_split_data_loader<data::samplers::SequentialSampler>(
              ctx(P, r, split, even), IndexDataset(N, loads).map(data::transforms::Stack<>()),
              data::DataLoaderOptions().batch_size(B).drop_last(drop).workers(workers));
          const Batches got = collect(*loader);
          const std::string where = "P=" + std::to_string(P) + " rank=" + std::to_string(r) +
                                    " flags=" + std::to_string(flags) + " workers=" + std::to_string(workers);
          ASSERT_EQ(got, accelerate_test::sequential_shards(N, B, P, r, drop, split, even)) << where;
          ASSERT_TRUE(loader->size().has_value());
          EXPECT_EQ(*loader->size(), got.size()) << where;
          // Only this rank's share was loaded (padding re-loads some of the first items).
          std::map<size_t, int> expected_loads;
          for (auto& b : got)
            for (size_t i : b) ++expected_loads[i];
          for (size_t i = 0; i < N; ++i)
            EXPECT_EQ((*loads)[i].load(), expected_loads.count(i) ? expected_loads[i] : 0) << where << " item " << i;
          EXPECT_EQ(collect(*loader), got) << where << " (second epoch)";
        }
      }
}

// A user-defined sampler: even indices, then odd ones, in batches of the requested size.
class EvensThenOdds : public data::samplers::Sampler<> {
 public:
  explicit EvensThenOdds(size_t n) : n_(n) { reset(); }
  void reset(c10::optional<size_t> = c10::nullopt) override {
    order_.clear();
    for (size_t i = 0; i < n_; i += 2) order_.push_back(i);
    for (size_t i = 1; i < n_; i += 2) order_.push_back(i);
    pos_ = 0;
  }
  c10::optional<std::vector<size_t>> next(size_t batch_size) override {
    if (pos_ >= order_.size()) return c10::nullopt;
    const size_t end = std::min(order_.size(), pos_ + batch_size);
    std::vector<size_t> b(order_.begin() + pos_, order_.begin() + end);
    pos_ = end;
    return b;
  }
  void save(torch::serialize::OutputArchive&) const override {}
  void load(torch::serialize::InputArchive&) override {}

 private:
  size_t n_, pos_ = 0;
  std::vector<size_t> order_;
};

TEST(PreparedLoader, UserDefinedSampler) {
  // 9 items, B=2, 2 processes: global batches [0,2] [4,6] [8,1] [3,5] [7]; the short last
  // batch keeps its real index only, and process 1's batch of the last round is made from
  // the first round's indices (0,2,4,6: [7] was topped up with 0 before the cut).
  const Batches p0 = collect(*accelerate::make_split_data_loader(
      ctx(2, 0), IndexDataset(9).map(data::transforms::Stack<>()), EvensThenOdds(9), 2));
  const Batches p1 = collect(*accelerate::make_split_data_loader(
      ctx(2, 1), IndexDataset(9).map(data::transforms::Stack<>()), EvensThenOdds(9), 2));
  EXPECT_EQ(p0, (Batches{{0, 2}, {8, 1}, {7}}));
  EXPECT_EQ(p1, (Batches{{4, 6}, {3, 5}, {2, 4}}));
  auto loader = accelerate::make_split_data_loader(ctx(2, 0), IndexDataset(9).map(data::transforms::Stack<>()),
                                                   EvensThenOdds(9), 2);
  EXPECT_FALSE(loader->size().has_value()) << "a user sampler's epoch length is unknown";
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// The name before "shard" meant FSDP only still builds the same loaders, with or without
// an explicit sampler type.
TEST(PreparedLoader, TheOldMakeShardedDataLoaderForwards) {
  const Batches with_sampler = collect(*accelerate::make_sharded_data_loader<data::samplers::SequentialSampler>(
      ctx(2, 1), IndexDataset(9).map(data::transforms::Stack<>()), 2));
  const Batches now = collect(*accelerate::make_split_data_loader<data::samplers::SequentialSampler>(
      ctx(2, 1), IndexDataset(9).map(data::transforms::Stack<>()), 2));
  EXPECT_EQ(with_sampler, now);
  EXPECT_EQ(collect(*accelerate::make_sharded_data_loader(ctx(2, 0), IndexDataset(9).map(data::transforms::Stack<>()),
                                                          EvensThenOdds(9), 2)),
            (Batches{{0, 2}, {8, 1}, {7}}));
}
#pragma GCC diagnostic pop

TEST(PreparedLoader, LoaderStateMarksLastBatchAndRemainder) {
  // 22 items, B=3, 2 processes: the last round holds 18,19,20,21: 4 real samples.
  for (int64_t r = 0; r < 2; ++r) {
    accelerate::LoaderState state;
    auto loader = accelerate::make_split_data_loader<data::samplers::SequentialSampler>(
        ctx(2, r, false, true, &state), IndexDataset(22).map(data::transforms::Stack<>()), 3);
    size_t seen = 0;
    for (auto& batch : *loader) {
      (void)batch;
      ++seen;
      EXPECT_TRUE(state.active);
      EXPECT_EQ(state.end_of_dataloader, seen == 4) << "batch " << seen;
      EXPECT_EQ(state.remainder, seen == 4 ? 4 : -1);
    }
    EXPECT_EQ(seen, 4u);
    EXPECT_FALSE(state.active);
    EXPECT_FALSE(state.end_of_dataloader);
  }
  // What each batch holds reaches the loop with its batch, also when LibTorch's workers load
  // batches ahead (the counts travel in request order): rank 1's last batch is its one real
  // sample, [21]; 12 + 10 samples, nothing repeated. 7 items: rank 1's last batch is padding.
  for (size_t workers : {0, 2})
    for (int64_t r = 0; r < 2; ++r)
      for (size_t n : {22, 7}) {
        accelerate::LoaderState state;
        auto loader = accelerate::make_split_data_loader<data::samplers::SequentialSampler>(
            ctx(2, r, false, true, &state), IndexDataset(n).map(data::transforms::Stack<>()),
            data::DataLoaderOptions(3).workers(workers));
        std::vector<int64_t> real, step, padded;
        for (auto& batch : *loader) {
          EXPECT_EQ(state.batch_real + state.batch_padded, batch.data.size(0));
          real.push_back(state.batch_real);
          step.push_back(state.step_real);
          padded.push_back(state.batch_padded);
        }
        const std::string where =
            "n=" + std::to_string(n) + " rank=" + std::to_string(r) + " workers=" + std::to_string(workers);
        if (n == 22) {
          EXPECT_EQ(real, (r == 0 ? std::vector<int64_t>{3, 3, 3, 3} : std::vector<int64_t>{3, 3, 3, 1})) << where;
          EXPECT_EQ(step, (std::vector<int64_t>{6, 6, 6, 4})) << where;
          EXPECT_EQ(state.samples, r == 0 ? 12 : 10) << where;
          EXPECT_EQ(state.padded_samples, 0) << where;
        } else {
          EXPECT_EQ(real, (r == 0 ? std::vector<int64_t>{3, 1} : std::vector<int64_t>{3, 0})) << where;
          EXPECT_EQ(step, (std::vector<int64_t>{6, 1})) << where;
          EXPECT_EQ(padded, (r == 0 ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{0, 3})) << where;
        }
      }
  // Nothing padded: no remainder on the last batch.
  accelerate::LoaderState state;
  auto loader = accelerate::make_split_data_loader<data::samplers::SequentialSampler>(
      ctx(2, 0, false, true, &state), IndexDataset(24).map(data::transforms::Stack<>()), 3);
  int last = 0;
  for (auto& batch : *loader) {
    (void)batch;
    if (state.end_of_dataloader) last = static_cast<int>(state.remainder);
  }
  EXPECT_EQ(last, -1);
}

// The generator's state as a few numbers drawn from it, its state put back afterwards (the
// program goes on as if nothing was drawn). Not Generator::clone(): LibTorch 1.13 leaks the
// copy (LeakSanitizer, scripts/sanitize.sh asan).
std::vector<double> generator_probe() {
  auto gen = at::detail::getDefaultCPUGenerator();
  const torch::Tensor state = gen.get_state();
  const torch::Tensor t = torch::rand({4}, gen, torch::kDouble);
  gen.set_state(state);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + 4);
}

Batches flat_epochs(Batches a, const Batches& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A migrated program on one process is the original: the prepared loader delivers the
// batches LibTorch's loader delivers with RandomSampler, epoch after epoch, and leaves the
// default generator where LibTorch's leaves it (the rest of the program draws the same).
TEST(PreparedLoader, RandomSamplerIsLibTorchsOrderOnOneProcess) {
  const size_t N = 37, B = 4;
  auto dataset = [&] { return IndexDataset(N).map(data::transforms::Stack<>()); };
  torch::manual_seed(5);
  auto original = data::make_data_loader(dataset(), data::samplers::RandomSampler(N), data::DataLoaderOptions(B));
  const Batches want = flat_epochs(collect(*original), collect(*original));
  const auto want_probe = generator_probe();
  std::vector<size_t> sorted;
  for (const auto& b : Batches(want.begin(), want.begin() + (N + B - 1) / B))
    sorted.insert(sorted.end(), b.begin(), b.end());
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted.size(), N);

  torch::manual_seed(5);  // the sampler given as an instance
  auto given = accelerate::make_split_data_loader(ctx(1, 0), dataset(), data::samplers::RandomSampler(N),
                                                  data::DataLoaderOptions(B));
  EXPECT_EQ(flat_epochs(collect(*given), collect(*given)), want);
  EXPECT_EQ(generator_probe(), want_probe);

  torch::manual_seed(5);  // make_data_loader(dataset, options): LibTorch's default sampler
  auto defaulted = accelerate::make_split_data_loader(ctx(1, 0), dataset(), data::DataLoaderOptions(B));
  EXPECT_EQ(flat_epochs(collect(*defaulted), collect(*defaulted)), want);
  EXPECT_EQ(generator_probe(), want_probe);

  torch::manual_seed(6);
  auto other = accelerate::make_split_data_loader(ctx(1, 0), dataset(), data::DataLoaderOptions(B));
  EXPECT_NE(flat_epochs(collect(*other), collect(*other)), want) << "the order follows the generator";
}

// On two processes (simulated here, ranks one after the other) the shards of batch B/2
// interleave to the one-process order with batch B, whatever rank 1's generator did: it
// takes rank 0's permutation through agree_order (a broadcast in a real run).
TEST(PreparedLoader, RandomSamplerTakesProcessZerosOrderOnTwo) {
  const size_t N = 40, B = 4;
  auto dataset = [&] { return IndexDataset(N).map(data::transforms::Stack<>()); };
  torch::manual_seed(9);
  auto single = accelerate::make_split_data_loader(ctx(1, 0), dataset(), data::DataLoaderOptions(2 * B));
  const Batches global = flat_epochs(collect(*single), collect(*single));

  std::vector<torch::Tensor> rank0_orders;
  LoaderContext c0 = ctx(2, 0), c1 = ctx(2, 1);
  c0.agree_order = [&](torch::Tensor& order) { rank0_orders.push_back(order.clone()); };
  size_t next = 0;
  c1.agree_order = [&](torch::Tensor& order) { order = rank0_orders.at(next++).clone(); };
  torch::manual_seed(9);
  auto r0 = accelerate::make_split_data_loader(c0, dataset(), data::DataLoaderOptions(B));
  const Batches got0 = flat_epochs(collect(*r0), collect(*r0));
  torch::manual_seed(10);  // rank 1's generator disagrees
  auto r1 =
      accelerate::make_split_data_loader(c1, dataset(), data::samplers::RandomSampler(N), data::DataLoaderOptions(B));
  const Batches got1 = flat_epochs(collect(*r1), collect(*r1));
  ASSERT_EQ(got0.size(), got1.size());
  ASSERT_EQ(got0.size(), global.size());  // batch B on each of 2 = batch 2B on one
  std::vector<size_t> want, have;
  for (const auto& b : global) want.insert(want.end(), b.begin(), b.end());
  for (size_t k = 0; k < got0.size(); ++k) {
    have.insert(have.end(), got0[k].begin(), got0[k].end());
    have.insert(have.end(), got1[k].begin(), got1[k].end());
  }
  EXPECT_EQ(have, want);
}

// SeededRandomSampler (for code written for Accelerate): its order depends on the seed and
// the epoch only, and set_epoch draws an epoch's order again.
TEST(PreparedLoader, SeededRandomSamplerSetEpochRedrawsAnEpoch) {
  const size_t N = 40;
  auto loader =
      accelerate::make_split_data_loader(ctx(1, 0), IndexDataset(N).map(data::transforms::Stack<>()),
                                         accelerate::SeededRandomSampler(N, 1234), data::DataLoaderOptions(N));
  const Batches e0 = collect(*loader), e1 = collect(*loader);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0.front(), accelerate::SeededRandomSampler::permutation(N, 1234, 0));
  loader->set_epoch(0);
  EXPECT_EQ(collect(*loader), e0);
  EXPECT_EQ(collect(*loader), e1);
}

TEST(PreparedLoader, SkipFirstBatchesDoesNotLoadThem) {
  auto loads = std::make_shared<std::vector<std::atomic<int>>>(30);
  auto loader = accelerate::make_split_data_loader<data::samplers::SequentialSampler>(
      ctx(2, 1), IndexDataset(30, loads).map(data::transforms::Stack<>()), 3);
  const Batches whole = collect(*loader);
  for (auto& l : *loads) l = 0;
  accelerate::skip_first_batches(loader, 2);
  const Batches rest = collect(*loader);
  EXPECT_EQ(rest, Batches(whole.begin() + 2, whole.end()));
  EXPECT_EQ((*loads)[9].load(), 0);   // in skipped batch [9,10,11]
  EXPECT_EQ((*loads)[15].load(), 1);  // in [15,16,17]
  EXPECT_EQ(collect(*loader), whole) << "only the next epoch is shortened";
}

// The position save_state records: epoch and batches received (skipped ones included), and
// a position left by load_state resumes a fresh loader at the next batch of the same order.
TEST(PreparedLoader, PositionRecordsAndResumesMidEpoch) {
  auto make = [] {
    return accelerate::make_split_data_loader(ctx(2, 1), IndexDataset(40).map(data::transforms::Stack<>()), 4);
  };
  torch::manual_seed(3);
  auto loader = make();
  const auto& pos = *loader->position();
  EXPECT_FALSE(pos.seed.has_value()) << "RandomSampler's order comes from the generator, not a seed";
  const Batches epoch0 = collect(*loader);
  EXPECT_FALSE(pos.in_epoch);
  EXPECT_EQ(pos.resume_epoch(), 1u);  // epoch 0 finished: resume at the start of epoch 1
  Batches seen;
  for (auto& batch : *loader) {
    seen.push_back(ids(batch));
    if (seen.size() == 2) break;
  }
  EXPECT_TRUE(pos.in_epoch);
  EXPECT_EQ(pos.resume_epoch(), 1u);
  EXPECT_EQ(pos.resume_batches(), 2u);
  ASSERT_EQ(pos.order.size(), 40u) << "the epoch's order, for save_state";
  // What save_state keeps: the position, the order and the generator's state.
  const std::vector<int64_t> saved_order = pos.order;
  const torch::Tensor saved_generator = at::detail::getDefaultCPUGenerator().get_state();

  torch::manual_seed(3);  // the uninterrupted run
  auto whole = make();
  collect(*whole);
  const Batches epoch1 = collect(*whole);
  const Batches epoch2 = collect(*whole);
  ASSERT_EQ(epoch1.size(), 5u);
  EXPECT_EQ(seen, Batches(epoch1.begin(), epoch1.begin() + 2));

  torch::manual_seed(77);  // a new process: everything comes from the checkpoint
  auto resumed = make();
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  generator.set_state(saved_generator);
  resumed->position()->resume = accelerate::LoaderPosition::Resume{1, 2, std::nullopt, saved_order};
  EXPECT_EQ(collect(*resumed), Batches(epoch1.begin() + 2, epoch1.end()));
  EXPECT_EQ(resumed->position()->resume_epoch(), 2u);
  EXPECT_EQ(collect(*resumed), epoch2) << "epoch 2 is whole and in the uninterrupted order";

  auto wrong = make();  // an order of another size is refused, naming the checkpoint
  wrong->position()->resume = accelerate::LoaderPosition::Resume{1, 2, std::nullopt, std::vector<int64_t>(7, 0)};
  EXPECT_THROW(collect(*wrong), accelerate::CheckpointError);

  accelerate::skip_first_batches(loader, 3);  // counts as received
  for (auto& batch : *loader) {
    (void)batch;
    break;
  }
  EXPECT_EQ(pos.resume_batches(), 4u);
}

TEST(PreparedLoader, StreamSamplerAndStatefulDatasets) {
  for (int64_t P = 1; P <= 3; ++P)
    for (int flags = 0; flags < 8; ++flags) {
      const bool drop = flags & 1, split = flags & 2, even = flags & 4;
      const size_t N = 17, B = split ? 6 : 3;
      for (int64_t r = 0; r < P; ++r) {
        const data::DataLoaderOptions o = data::DataLoaderOptions(B).drop_last(drop);
        auto stream = accelerate::make_split_data_loader(ctx(P, r, split, even), CountingStream(N),
                                                         data::samplers::StreamSampler(N), o);
        const Batches expected = accelerate_test::sequential_shards(N, B, P, r, drop, split, even);
        EXPECT_EQ(collect(*stream), expected) << "stream P=" << P << " r=" << r << " f=" << flags;
        EXPECT_EQ(*stream->size(), expected.size());
        auto stateful = accelerate::make_split_data_loader(ctx(P, r, split, even), CountingStateful(N), o);
        EXPECT_EQ(collect(*stateful), expected) << "stateful P=" << P << " r=" << r;
        EXPECT_FALSE(stateful->size().has_value());
        EXPECT_EQ(collect(*stateful), expected) << "stateful second epoch";
      }
    }
}

// A user batch type, moved by its own to_device overload (found by ADL).
namespace user {
struct Pair {
  torch::Tensor a;
  int64_t tag = 0;
};
std::atomic<int> moved{0};
void to_device(Pair& p, const torch::Device& d) {
  accelerate::to_device(p.a, d);
  ++moved;
}
struct PairDataset : data::datasets::BatchDataset<PairDataset, std::vector<Pair>> {
  std::vector<Pair> get_batch(c10::ArrayRef<size_t> idx) override {
    std::vector<Pair> out;
    for (size_t i : idx) out.push_back({torch::tensor({static_cast<int64_t>(i)}), static_cast<int64_t>(i)});
    return out;
  }
  c10::optional<size_t> size() const override { return 10; }
};
}  // namespace user

TEST(PreparedLoader, DeviceTransferCustomisationPoint) {
  user::moved = 0;
  auto loader =
      accelerate::make_split_data_loader<data::samplers::SequentialSampler>(ctx(2, 0), user::PairDataset(), 2);
  size_t items = 0;
  for (auto& batch : *loader)
    for (auto& p : batch) {
      EXPECT_EQ(p.a.device(), torch::Device(torch::kCPU));
      EXPECT_EQ(p.a.item<int64_t>(), p.tag);
      ++items;
    }
  EXPECT_EQ(items, 6u);
  EXPECT_EQ(user::moved.load(), 6);
  // Containers of tensors.
  std::tuple<torch::Tensor, std::vector<torch::Tensor>, std::pair<int, torch::Tensor>> t{
      torch::ones({1}), {torch::ones({1})}, {1, torch::ones({1})}};
  accelerate::detail::move_to_device(t, torch::kCPU);
  EXPECT_EQ(std::get<0>(t).device().type(), torch::kCPU);
  if (torch::cuda::is_available()) {
    accelerate::detail::move_to_device(t, torch::Device(torch::kCUDA, 0));
    EXPECT_TRUE(std::get<0>(t).is_cuda());
    EXPECT_TRUE(std::get<1>(t)[0].is_cuda());
    EXPECT_TRUE(std::get<2>(t).second.is_cuda());
  }
}

TEST(PreparedLoader, ClearErrors) {
  try {
    accelerate::make_split_data_loader<data::samplers::SequentialSampler>(
        ctx(3, 0, true), IndexDataset(10).map(data::transforms::Stack<>()), 4);
    FAIL() << "split_batches with 4 % 3 must throw";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::Config) << e.what();
    EXPECT_NE(std::string(e.what()).find("split_batches"), std::string::npos) << e.what();
  }
  struct Unsized : data::datasets::Dataset<Unsized> {
    data::Example<> get(size_t) override { return {}; }
    c10::optional<size_t> size() const override { return c10::nullopt; }
  };
  try {
    accelerate::make_split_data_loader(ctx(2, 0), Unsized(), 4);
    FAIL() << "an unsized dataset cannot build a RandomSampler";
  } catch (const accelerate::Error& e) {
    EXPECT_EQ(e.code(), accelerate::ErrorCode::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("needs a dataset with a size"), std::string::npos) << e.what();
  }
}

}  // namespace
