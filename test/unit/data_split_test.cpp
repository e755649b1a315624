// The sharding rules (SPEC-sharding.md) checked on the pure core, for any number of
// processes inside one process: the spec's examples verbatim, then every combination of
// N, B, P and the three flags against closed forms derived independently of the
// round-by-round algorithm in data_split.h.
#include <accelerate/core/error.h>
#include <accelerate/data/data_split.h>
#include <accelerate/data/sharding.h>  // the old names still compile (checked below)

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using accelerate::BatchSplitter;
using accelerate::DataSplitOptions;
using Batches = std::vector<std::vector<size_t>>;

// Global batches of a sequential sampler over `order` (0..N-1 unless given).
Batches global_batches(const std::vector<size_t>& order, size_t B) {
  Batches out;
  for (size_t i = 0; i < order.size(); i += B)
    out.emplace_back(order.begin() + i, order.begin() + std::min(order.size(), i + B));
  return out;
}

std::vector<size_t> iota(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), size_t{0});
  return v;
}

struct Sharded {
  Batches batches;
  int64_t remainder;
};

Sharded shard(const std::vector<size_t>& order, DataSplitOptions o) {
  BatchSplitter<size_t> sharder(o);
  Batches global = global_batches(order, o.batch_size());
  Sharded run{{}, -1};
  for (int epoch = 0; epoch < 2; ++epoch) {  // a second epoch must repeat the first
    sharder.reset();
    size_t next = 0;
    auto pull = [&]() -> c10::optional<std::vector<size_t>> {
      if (next == global.size()) return c10::nullopt;
      return global[next++];
    };
    Batches got;
    while (auto b = sharder.next(pull)) got.push_back(*b);
    if (epoch == 0) {
      run = Sharded{got, sharder.remainder()};
    } else {
      EXPECT_EQ(got, run.batches) << "second epoch differs";
      EXPECT_EQ(sharder.remainder(), run.remainder);
    }
  }
  return run;
}

DataSplitOptions opts(int64_t P, int64_t rank, size_t B, bool drop_last = false, bool split = false, bool even = true) {
  return DataSplitOptions()
      .num_processes(P)
      .process_index(rank)
      .batch_size(B)
      .drop_last(drop_last)
      .split_batches(split)
      .even_batches(even);
}

TEST(ShardingSpec, Examples) {
  for (bool drop : {false, true}) {
    EXPECT_EQ(shard(iota(24), opts(2, 0, 3, drop)).batches,
              (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}, {18, 19, 20}}));
    EXPECT_EQ(shard(iota(24), opts(2, 1, 3, drop)).batches,
              (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}, {21, 22, 23}}));
  }
  EXPECT_EQ(shard(iota(21), opts(2, 0, 3)).batches, (Batches{{0, 1, 2}, {6, 7, 8}, {12, 13, 14}, {18, 19, 20}}));
  EXPECT_EQ(shard(iota(21), opts(2, 1, 3)).batches, (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}, {0, 1, 2}}));
  EXPECT_EQ(shard(iota(24), opts(2, 0, 4, false, true)).batches,
            (Batches{{0, 1}, {4, 5}, {8, 9}, {12, 13}, {16, 17}, {20, 21}}));
  EXPECT_EQ(shard(iota(24), opts(2, 1, 4, false, true)).batches,
            (Batches{{2, 3}, {6, 7}, {10, 11}, {14, 15}, {18, 19}, {22, 23}}));
  EXPECT_EQ(shard(iota(21), opts(2, 0, 3, false, false, false)).batches.size(), 4u);
  EXPECT_EQ(shard(iota(21), opts(2, 1, 3, false, false, false)).batches,
            (Batches{{3, 4, 5}, {9, 10, 11}, {15, 16, 17}}));
  // Metrics: 22 items, B=3, P=2: the last round holds 18,19,20,21: 4 real items.
  Sharded r0 = shard(iota(22), opts(2, 0, 3)), r1 = shard(iota(22), opts(2, 1, 3));
  EXPECT_EQ(r0.batches.back(), (std::vector<size_t>{18, 19, 20}));
  EXPECT_EQ(r1.batches.back(), (std::vector<size_t>{21}));  // its real item only (short last batches)
  EXPECT_EQ(r0.remainder, 4);
  EXPECT_EQ(r1.remainder, 4);
}

// Derived edge cases, written out so that a reader can check them by hand.
TEST(ShardingSpec, EdgeCases) {
  // Fewer items than processes: every process gets a full batch cycled from the one item.
  EXPECT_EQ(shard(iota(1), opts(2, 1, 3)).batches, (Batches{{0, 0, 0}}));
  EXPECT_EQ(shard(iota(1), opts(2, 0, 3)).remainder, 1);
  // A batch that holds real items is cut before its padding; only a process without a real
  // item gets padding (so that it still takes part in the step).
  EXPECT_EQ(shard(iota(7), opts(3, 0, 2)).batches, (Batches{{0, 1}, {6}}));
  EXPECT_EQ(shard(iota(7), opts(3, 1, 2)).batches, (Batches{{2, 3}, {1, 2}}));
  EXPECT_EQ(shard(iota(7), opts(3, 2, 2)).batches, (Batches{{4, 5}, {3, 4}}));
  // Fewer items than one round, cycling past the end of the data.
  EXPECT_EQ(shard(iota(7), opts(3, 1, 4)).batches, (Batches{{4, 5, 6}}));
  EXPECT_EQ(shard(iota(7), opts(3, 2, 4)).batches, (Batches{{1, 2, 3, 4}}));
  // drop_last with fewer batches than processes: nothing at all.
  EXPECT_TRUE(shard(iota(5), opts(3, 0, 2, true)).batches.empty());
  // split with padding from the start of the epoch; N < B.
  EXPECT_EQ(shard(iota(10), opts(2, 1, 4, false, true)).batches, (Batches{{2, 3}, {6, 7}, {0, 1}}));
  EXPECT_EQ(shard(iota(3), opts(2, 1, 4, false, true)).batches, (Batches{{2}}));
  EXPECT_EQ(shard(iota(3), opts(2, 1, 4, false, true)).remainder, 3);
  // split without padding: a process whose slice starts past the short batch gets none.
  EXPECT_EQ(shard(iota(10), opts(2, 1, 4, false, true, false)).batches, (Batches{{2, 3}, {6, 7}}));
  EXPECT_EQ(shard(iota(11), opts(2, 1, 4, false, true, false)).batches, (Batches{{2, 3}, {6, 7}, {10}}));
  // No data: no batches on any process.
  for (int64_t r = 0; r < 3; ++r) EXPECT_TRUE(shard(iota(0), opts(3, r, 2)).batches.empty());
  // One process is the plain loader: the short batch stays short.
  EXPECT_EQ(shard(iota(5), opts(1, 0, 2)).batches, (Batches{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(shard(iota(5), opts(1, 0, 2)).remainder, -1);
}

// Bad split settings are the user's: accelerate::Error (Config) naming the setting.
TEST(ShardingSpec, ClearErrors) {
  const auto expect_config_error = [](const DataSplitOptions& o, const std::string& names) {
    try {
      BatchSplitter<size_t> s(o);
      ADD_FAILURE() << "expected an error naming " << names;
    } catch (const accelerate::Error& e) {
      EXPECT_EQ(e.code(), accelerate::ErrorCode::Config) << e.what();
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  };
  expect_config_error(opts(3, 0, 4, false, true), "multiple of the number of processes (3)");
  expect_config_error(opts(2, 2, 4), "process_index 2 is outside [0, 2)");
  expect_config_error(opts(2, 0, 0), "batch_size >= 1");
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// Code written against <accelerate/sharding.h> (before "shard" meant FSDP only) compiles and
// gets the same split.
TEST(ShardingSpec, TheOldNamesForwardToTheDataSplit) {
  const accelerate::ShardingOptions o = opts(2, 1, 3);
  EXPECT_EQ(accelerate::sharded_num_batches(o, 22), accelerate::split_num_batches(o, 22));
  EXPECT_EQ(accelerate::sharded_remainder(o, 22), accelerate::split_remainder(o, 22));
  EXPECT_THROW(accelerate::validate_sharding(opts(2, 2, 4)), accelerate::Error);
  const accelerate::BatchSharder<size_t> old(o);
  EXPECT_EQ(old.options().process_index(), 1);
  EXPECT_EQ(shard(iota(22), o).batches.size(), accelerate::split_num_batches(o, 22));
}
#pragma GCC diagnostic pop

// Expected batches of process r from closed forms: the rank-order concatenation of each
// round ("gathered") is the epoch's order followed by padding that cycles over the first
// m items, and a batch that holds real items is cut before its padding; without padding,
// process r gets global batches r, r+P, ... (or slices).
Batches expected(const std::vector<size_t>& order, size_t B, size_t P, size_t r, bool drop, bool split, bool even) {
  const size_t N = order.size();
  Batches global = global_batches(order, B);
  Batches out;
  if (P == 1) {
    for (auto& b : global)
      if (!drop || b.size() == B) out.push_back(b);
    return out;
  }
  const size_t L = B / P;
  if (drop) {
    const size_t full = N / B;
    if (split) {
      for (size_t j = 0; j < full; ++j) out.emplace_back(global[j].begin() + r * L, global[j].begin() + (r + 1) * L);
    } else {
      for (size_t k = 0; k < full / P; ++k) out.push_back(global[k * P + r]);
    }
    return out;
  }
  if (!even) {
    for (size_t j = 0; j < global.size(); ++j) {
      if (split) {
        const auto& b = global[j];
        if (b.size() > r * L) out.emplace_back(b.begin() + r * L, b.begin() + std::min(b.size(), (r + 1) * L));
      } else if (j % P == r) {
        out.push_back(global[j]);
      }
    }
    return out;
  }
  if (N == 0) return out;
  const size_t round = split ? B : P * B;
  const size_t m = std::min(N, round);
  const size_t total = (N + round - 1) / round * round;
  std::vector<size_t> gathered(total);
  for (size_t i = 0; i < total; ++i) gathered[i] = i < N ? order[i] : order[(i - N) % m];
  for (size_t k = 0; k < total / round; ++k) {
    const size_t from = k * round + (split ? r * L : r * B);
    size_t len = split ? L : B;
    // A batch holding real items gets only those; padding only fills batches without one.
    if (from < N && from + len > N) len = N - from;
    out.emplace_back(gathered.begin() + from, gathered.begin() + from + len);
  }
  return out;
}

TEST(ShardingSpec, AllCombinations) {
  std::mt19937 rng(7);
  int cases = 0;
  for (size_t P = 1; P <= 4; ++P)
    for (size_t B = 1; B <= 6; ++B)
      for (size_t N = 0; N <= 31; ++N)
        for (int flags = 0; flags < 8; ++flags) {
          const bool drop = flags & 1, split = flags & 2, even = flags & 4;
          if (split && B % P != 0) continue;
          // Any sampler: a shuffled order must be sharded the same way, position by position.
          std::vector<size_t> order = iota(N);
          if (N % 2) std::shuffle(order.begin(), order.end(), rng);
          size_t total_batches = 0;
          for (size_t r = 0; r < P; ++r) {
            DataSplitOptions o = opts(P, r, B, drop, split, even);
            Sharded run = shard(order, o);
            const std::string where = "N=" + std::to_string(N) + " B=" + std::to_string(B) + " P=" + std::to_string(P) +
                                      " rank=" + std::to_string(r) + " drop_last=" + std::to_string(drop) +
                                      " split=" + std::to_string(split) + " even=" + std::to_string(even);
            ASSERT_EQ(run.batches, expected(order, B, P, r, drop, split, even)) << where;
            EXPECT_EQ(run.batches.size(), accelerate::split_num_batches(o, N)) << where;
            EXPECT_EQ(run.remainder, accelerate::split_remainder(o, N)) << where;
            total_batches += run.batches.size();
            ++cases;
          }
          if (even && !drop && P > 1) EXPECT_EQ(total_batches % P, 0u);
        }
  EXPECT_GT(cases, 3000);
}

// What each batch holds (BatchShare), for the weighting of short last steps: over all
// processes, each step's real samples add up to the step's count that every process was
// told, a batch holds padding only when it holds no real sample, and an epoch's real
// samples are the data set (or what drop_last keeps).
TEST(ShortLastBatches, SharesAddUpToEachStep) {
  int cases = 0;
  for (size_t P = 1; P <= 4; ++P)
    for (size_t B = 1; B <= 6; ++B)
      for (size_t N = 0; N <= 31; ++N)
        for (int flags = 0; flags < 8; ++flags) {
          const bool drop = flags & 1, split = flags & 2, even = flags & 4;
          if ((split && B % P != 0) || (!even && !drop)) continue;  // uneven: processes lack steps
          std::vector<std::vector<accelerate::BatchShare>> shares(P);
          for (size_t r = 0; r < P; ++r) {
            BatchSplitter<size_t> s(opts(P, r, B, drop, split, even));
            const Batches global = global_batches(iota(N), B);
            size_t next = 0;
            auto pull = [&]() -> c10::optional<std::vector<size_t>> {
              if (next == global.size()) return c10::nullopt;
              return global[next++];
            };
            while (auto b = s.next(pull)) {
              const accelerate::BatchShare& share = s.last_share();
              EXPECT_EQ(share.real + share.padded, b->size());
              EXPECT_TRUE(share.padded == 0 || share.real == 0) << "padding beside real samples";
              shares[r].push_back(share);
            }
          }
          const std::string where = "N=" + std::to_string(N) + " B=" + std::to_string(B) + " P=" + std::to_string(P) +
                                    " drop=" + std::to_string(drop) + " split=" + std::to_string(split);
          size_t total = 0;
          for (size_t k = 0; k < shares[0].size(); ++k) {
            size_t step = 0;
            for (size_t r = 0; r < P; ++r) {
              ASSERT_EQ(shares[r].size(), shares[0].size()) << where;
              EXPECT_EQ(shares[r][k].step_real, shares[0][k].step_real) << where << " step " << k;
              step += shares[r][k].real;
            }
            EXPECT_EQ(step, shares[0][k].step_real) << where << " step " << k;
            total += step;
          }
          EXPECT_EQ(total, drop ? N / B * B / (split ? 1 : P * B) * (split ? 1 : P * B) : N) << where;
          ++cases;
        }
  EXPECT_GT(cases, 1000);
}

}  // namespace

namespace {

// One epoch of a splitter over 0..N-1 in global batches of B: the batches and their shares.
struct Epoch {
  Batches batches;
  std::vector<size_t> real;
};
Epoch run_epoch(BatchSplitter<size_t>& splitter, size_t N, size_t B) {
  Batches global = global_batches(iota(N), B);
  splitter.reset();
  size_t next = 0;
  auto pull = [&]() -> c10::optional<std::vector<size_t>> {
    if (next == global.size()) return c10::nullopt;
    return global[next++];
  };
  Epoch e;
  while (auto b = splitter.next(pull)) {
    e.batches.push_back(*b);
    e.real.push_back(splitter.last_share().real);
  }
  return e;
}

std::vector<size_t> sorted(std::vector<size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// verify's control runs (batch_order_control): each batch holds the same items, with the same
// share, in another order; 0 changes nothing; two seeds, and two epochs, give other orders.
TEST(BatchOrderControl, PermutesTheItemsOfEachBatchAndNothingElse) {
  for (int64_t P : {1, 2, 4}) {
    for (int64_t rank = 0; rank < P; ++rank) {
      const size_t N = 103, B = 16;  // a short last batch: padding on P > 1
      BatchSplitter<size_t> plain(opts(P, rank, B, false, true));
      const Epoch ref = run_epoch(plain, N, B);
      BatchSplitter<size_t> off(opts(P, rank, B, false, true).batch_order_control(0));
      EXPECT_EQ(run_epoch(off, N, B).batches, ref.batches);
      std::vector<Batches> orders;
      for (uint64_t seed : {1, 2}) {
        BatchSplitter<size_t> control(opts(P, rank, B, false, true).batch_order_control(seed));
        const Epoch first = run_epoch(control, N, B), second = run_epoch(control, N, B);
        ASSERT_EQ(first.batches.size(), ref.batches.size());
        EXPECT_EQ(first.real, ref.real) << "P=" << P << " rank=" << rank;
        for (size_t i = 0; i < ref.batches.size(); ++i) {
          EXPECT_EQ(sorted(first.batches[i]), sorted(ref.batches[i])) << "batch " << i;
          EXPECT_EQ(sorted(second.batches[i]), sorted(ref.batches[i])) << "batch " << i;
        }
        EXPECT_NE(first.batches, ref.batches) << "seed " << seed << " permuted nothing";
        EXPECT_NE(first.batches, second.batches) << "the second epoch repeated the first's orders";
        orders.push_back(first.batches);
      }
      EXPECT_NE(orders[0], orders[1]) << "two seeds gave the same orders";
    }
  }
}
