// Prepared loaders in real processes: this executable starts 1, 2 and 3 copies of itself
// as workers (`--data-worker`, launcher variables from test/support's harness), each with
// a real Accelerator over Gloo. Workers print what their loaders gave them; the driver
// checks the exact per-process batch lists, that random orders agree across processes,
// and that gather_for_metrics returns every item exactly once.
#include <accelerate/accelerate.h>

#include "spawn.h"

#include "data_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace data = torch::data;
using Batches = std::vector<std::vector<size_t>>;

namespace {

struct IndexDataset : data::datasets::Dataset<IndexDataset> {
  explicit IndexDataset(size_t n) : n(n) {}
  data::Example<> get(size_t i) override {
    return {torch::tensor({static_cast<int64_t>(i)}), torch::tensor({static_cast<int64_t>(i)})};
  }
  c10::optional<size_t> size() const override { return n; }
  size_t n;
};

struct Stream : data::datasets::BatchDataset<Stream, std::vector<data::Example<>>, size_t> {
  explicit Stream(size_t n) : n(n), next(std::make_shared<size_t>(0)) {}
  std::vector<data::Example<>> get_batch(size_t count) override {
    std::vector<data::Example<>> out;
    for (size_t k = 0; k < count; ++k, ++*next)
      out.push_back({torch::tensor({static_cast<int64_t>(*next % n)}), torch::tensor({0})});
    return out;
  }
  c10::optional<size_t> size() const override { return n; }
  size_t n;
  std::shared_ptr<size_t> next;
};

std::string format(const Batches& batches) {
  std::ostringstream os;
  for (size_t k = 0; k < batches.size(); ++k) {
    if (k) os << ';';
    for (size_t i = 0; i < batches[k].size(); ++i) os << (i ? "," : "") << batches[k][i];
  }
  return os.str();
}

Batches parse(const std::string& text) {
  Batches out;
  std::stringstream batches(text);
  std::string batch;
  while (std::getline(batches, batch, ';')) {
    out.emplace_back();
    std::stringstream items(batch);
    std::string item;
    while (std::getline(items, item, ',')) out.back().push_back(std::stoul(item));
  }
  return out;
}

std::vector<size_t> values(const torch::Tensor& t) {
  auto flat = t.reshape({-1}).to(torch::kCPU, torch::kInt64);
  std::vector<size_t> out;
  for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat[i].item<int64_t>());
  return out;
}

template <typename Loader>
Batches collect(Loader& loader) {
  Batches out;
  for (auto& batch : loader) out.push_back(values(batch.data));
  return out;
}

// ---- worker side -----------------------------------------------------------------------
// Prints "<key> rank=<r> batches=<a,b;c,d>" lines for the driver.
int worker(const std::vector<std::string>& args) {
  const bool split = args.at(0) == "1", even = args.at(1) == "1";
  accelerate::Accelerator acc(accelerate::AcceleratorOptions().cpu(true).split_batches(split).even_batches(even));
  const int64_t rank = acc.process_index();
  auto line = [&](const std::string& key, const std::string& value) {
    std::cout << key << " rank=" << rank << " batches=" << value << std::endl;
  };
  const size_t N = 10, B = split ? 6 : 2;
  for (bool drop : {false, true})
    for (size_t workers : {0, 2}) {
      auto loader = acc.prepare_data_loader<data::samplers::SequentialSampler>(
          IndexDataset(N).map(data::transforms::Stack<>()),
          data::DataLoaderOptions(B).drop_last(drop).workers(workers));
      const Batches got = collect(*loader);
      if (got.size() != *loader->size()) return 3;
      line("sequential drop_last=" + std::to_string(drop) + " workers=" + std::to_string(workers), format(got));
    }
  // Metrics summed locally over real samples, then reduced: 22 items cover each item once.
  {
    auto eval = acc.prepare_data_loader<data::samplers::SequentialSampler>(
        IndexDataset(22).map(data::transforms::Stack<>()), split ? 6 : 3);
    std::vector<size_t> real;
    int64_t count = 0;
    double sum = 0;
    for (auto& batch : *eval) {
      auto r = values(accelerate::real_samples(acc, batch.data));
      real.insert(real.end(), r.begin(), r.end());
      count += accelerate::real_samples(acc, batch.target).size(0);
      sum += accelerate::real_samples(acc, batch.data).sum().item<double>();
    }
    line("real_samples", format({real}));
    line("reduced",
         format({{static_cast<size_t>(accelerate::sum_across_processes(acc, count)),
                  static_cast<size_t>(accelerate::sum_across_processes(acc, sum)),
                  static_cast<size_t>(accelerate::mean_across_processes(acc, sum) * acc.num_processes() + 0.5)}}));
  }
  // Hand-cut global batches of 0..5 rows split between the processes.
  for (int64_t n = 0; n <= 5; ++n)
    line("share" + std::to_string(n), format({values(accelerate::process_share(acc, torch::arange(n)))}));
  // batch_mean of each share's own mean: the whole batch's mean (n - 1) / 2 on every process,
  // weighted by the shares' rows; a copied row counts for nothing. Written in millionths
  // (exact: halves of integers).
  for (int64_t n = 1; n <= 5; ++n) {
    auto share = accelerate::process_share(acc, torch::arange(n).to(torch::kDouble));
    const double mean = accelerate::batch_mean(acc, share.mean().item<double>(), share);
    line("share-mean" + std::to_string(n), format({{static_cast<size_t>(std::lround(1e6 * mean))}}));
  }
  if (split || !even) return 0;

  // Resuming: the next epoch starts 1 batch in, through the Accelerator's spelling.
  auto resumed = acc.prepare_data_loader<data::samplers::SequentialSampler>(
      IndexDataset(N).map(data::transforms::Stack<>()), data::DataLoaderOptions(B));
  acc.skip_first_batches(resumed, 1);
  line("skip1", format(collect(*resumed)));
  line("after-skip", format(collect(*resumed)));

  // Random sampler: the default of make_data_loader, LibTorch's order from process 0's
  // generator. Processes other than 0 draw something first (as dropout on a share of the
  // batch would): their generators disagree, the order must not.
  acc.set_seed(7);
  if (acc.process_index() > 0) torch::rand({3});
  auto random = acc.prepare_data_loader(IndexDataset(24).map(data::transforms::Stack<>()), 2);
  line("random", format(collect(*random)));
  line("random-epoch2", format(collect(*random)));
  line("seed", std::to_string(acc.shared_seed()));

  // A stream read through LibTorch's StreamSampler.
  auto stream = acc.prepare_data_loader(Stream(11), data::samplers::StreamSampler(11), data::DataLoaderOptions(2));
  Batches got;
  for (auto& batch : *stream) {
    got.emplace_back();
    for (auto& e : batch) got.back().push_back(e.data.item<int64_t>());
  }
  line("stream", format(got));

  // Metrics: 22 items, batch 3: gather_for_metrics drops the padded duplicates.
  auto eval =
      acc.prepare_data_loader<data::samplers::SequentialSampler>(IndexDataset(22).map(data::transforms::Stack<>()), 3);
  std::vector<size_t> gathered, metrics;
  for (auto& batch : *eval) {
    auto g = values(acc.gather(batch.data));
    auto m = values(acc.gather_for_metrics(batch.data));
    gathered.insert(gathered.end(), g.begin(), g.end());
    metrics.insert(metrics.end(), m.begin(), m.end());
  }
  line("gather", format({gathered}));
  line("gather_for_metrics", format({metrics}));
  return 0;
}

// ---- driver side -----------------------------------------------------------------------
std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("data_loader_tests");
}

// The order LibTorch's own loader draws for a seeded program (make_data_loader's default
// RandomSampler): what every process's prepared loader must deliver, interleaved.
std::vector<size_t> libtorch_random_order(size_t n, size_t batch, uint64_t seed) {
  torch::manual_seed(seed);
  auto loader = data::make_data_loader(IndexDataset(n).map(data::transforms::Stack<>()), batch);
  std::vector<size_t> order;
  for (auto& b : *loader)
    for (int64_t i = 0; i < b.data.size(0); ++i) order.push_back(static_cast<size_t>(b.data[i].item<int64_t>()));
  return order;
}

// key -> rank -> batches
using Report = std::map<std::string, std::map<int, Batches>>;

Report run(int nprocs, bool split, bool even) {
  auto r = accelerate::testing::spawn_workers(self_exe(), {"--data-worker", split ? "1" : "0", even ? "1" : "0"},
                                              nprocs, {{"OMP_NUM_THREADS", "1"}});
  EXPECT_TRUE(r.all_succeeded()) << r.summary();
  Report report;
  const std::regex re(R"(^(.*) rank=(\d+) batches=(.*)$)");
  for (const auto& w : r.workers) {
    std::istringstream lines(w.output);
    std::string l;
    while (std::getline(lines, l)) {
      std::smatch m;
      if (std::regex_match(l, m, re)) report[m[1]][std::stoi(m[2])] = parse(m[3]);
    }
  }
  return report;
}

TEST(DataLoaderMultiProcess, SequentialExactBatchesEveryCombination) {
  for (int P = 1; P <= 3; ++P)
    for (int flags = 0; flags < 4; ++flags) {
      const bool split = flags & 1, even = flags & 2;
      Report rep = run(P, split, even);
      for (bool drop : {false, true})
        for (int workers : {0, 2}) {
          const std::string key =
              "sequential drop_last=" + std::to_string(drop) + " workers=" + std::to_string(workers);
          ASSERT_EQ(rep[key].size(), static_cast<size_t>(P)) << key;
          for (int r = 0; r < P; ++r)
            EXPECT_EQ(rep[key][r], accelerate_test::sequential_shards(10, split ? 6 : 2, P, r, drop, split, even))
                << key << " P=" << P << " rank=" << r << " split=" << split << " even=" << even;
        }
      // real_samples: over all processes every item exactly once; reductions agree.
      std::vector<size_t> real;
      for (int r = 0; r < P; ++r) {
        ASSERT_EQ(rep["real_samples"][r].size(), 1u);
        real.insert(real.end(), rep["real_samples"][r][0].begin(), rep["real_samples"][r][0].end());
        EXPECT_EQ(rep["reduced"][r], (Batches{{22, 231, 231}})) << "P=" << P << " rank=" << r;
      }
      std::sort(real.begin(), real.end());
      std::vector<size_t> all(22);
      std::iota(all.begin(), all.end(), size_t{0});
      EXPECT_EQ(real, all) << "P=" << P << " split=" << split << " even=" << even;
      // process_share: contiguous shares in rank order; no process is left without a row.
      for (size_t n = 0; n <= 5; ++n) {
        std::vector<size_t> joined;
        for (int r = 0; r < P; ++r) {
          const auto& share = rep["share" + std::to_string(n)][r];
          const std::vector<size_t> got = share.empty() ? std::vector<size_t>{} : share[0];
          if (n > 0 && n < static_cast<size_t>(P) && static_cast<size_t>(r) >= n) {
            EXPECT_EQ(got, std::vector<size_t>{n - 1}) << "n=" << n << " P=" << P << " rank=" << r;
            continue;
          }
          joined.insert(joined.end(), got.begin(), got.end());
        }
        std::vector<size_t> rows(n);
        std::iota(rows.begin(), rows.end(), size_t{0});
        EXPECT_EQ(joined, rows) << "n=" << n << " P=" << P;
        for (int r = 0; n > 0 && r < P; ++r)
          EXPECT_EQ(rep["share-mean" + std::to_string(n)][r], (Batches{{(n - 1) * 500000}}))
              << "batch_mean of the shares' means, n=" << n << " P=" << P << " rank=" << r;
      }
      if (P != 3) continue;
      // Written out: N=10, B=2 (split: global B=6), three processes.
      const std::string key = "sequential drop_last=0 workers=0";
      if (!split && even) {
        EXPECT_EQ(rep[key][0], (Batches{{0, 1}, {6, 7}}));
        EXPECT_EQ(rep[key][1], (Batches{{2, 3}, {8, 9}}));
        EXPECT_EQ(rep[key][2], (Batches{{4, 5}, {0, 1}}));
        EXPECT_EQ(rep["sequential drop_last=1 workers=0"][2], (Batches{{4, 5}}));
      } else if (!split && !even) {
        EXPECT_EQ(rep[key][2], (Batches{{4, 5}}));
      } else if (split && even) {
        EXPECT_EQ(rep[key][0], (Batches{{0, 1}, {6, 7}}));
        EXPECT_EQ(rep[key][1], (Batches{{2, 3}, {8, 9}}));
        EXPECT_EQ(rep[key][2], (Batches{{4, 5}, {0, 1}}));
      } else {
        EXPECT_EQ(rep[key][2], (Batches{{4, 5}}));
      }
    }
}

TEST(DataLoaderMultiProcess, RandomStreamAndMetrics) {
  std::vector<size_t> single_order;
  for (int P = 1; P <= 3; ++P) {
    Report rep = run(P, false, true);
    ASSERT_EQ(rep["seed"].size(), static_cast<size_t>(P));
    // One global order per epoch, the same for any number of processes: batch 2 per
    // process, interleaved by rounds, is the seeded permutation of 24 items.
    std::vector<size_t> order;
    for (size_t k = 0; k < rep["random"][0].size(); ++k)
      for (int r = 0; r < P; ++r) order.insert(order.end(), rep["random"][r][k].begin(), rep["random"][r][k].end());
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<size_t> all(24);
    std::iota(all.begin(), all.end(), size_t{0});
    EXPECT_EQ(sorted, all) << "P=" << P << ": union of the shards is the dataset";
    EXPECT_EQ(order, libtorch_random_order(24, 2, 7)) << "P=" << P;
    if (P == 1) single_order = order;
    EXPECT_EQ(order, single_order);
    EXPECT_NE(rep["random-epoch2"][0], rep["random"][0]) << "a new order each epoch";

    // Stream: 11 items, batch 2, read in order by every process, shared round-robin.
    for (int r = 0; r < P; ++r)
      EXPECT_EQ(rep["stream"][r], accelerate_test::sequential_shards(11, 2, P, r, false, false, true));

    for (int r = 0; r < P; ++r) {
      const Batches whole = accelerate_test::sequential_shards(10, 2, P, r, false, false, true);
      EXPECT_EQ(rep["skip1"][r], Batches(whole.begin() + 1, whole.end())) << "P=" << P;
      EXPECT_EQ(rep["after-skip"][r], whole) << "P=" << P;
    }

    // 22 items, batch 3: gather_for_metrics returns each item exactly once.
    for (int r = 0; r < P; ++r) {
      ASSERT_EQ(rep["gather_for_metrics"][r].size(), 1u);
      std::vector<size_t> m = rep["gather_for_metrics"][r][0];
      std::vector<size_t> expected(22);
      std::iota(expected.begin(), expected.end(), size_t{0});
      EXPECT_EQ(m, expected) << "P=" << P << " rank=" << r;
    }
    if (P == 2) {
      // Process 1's last batch is its real sample only (short last batches): nothing repeated.
      const std::vector<size_t> g = rep["gather"][0][0];
      ASSERT_EQ(g.size(), 22u);
      EXPECT_EQ(std::vector<size_t>(g.end() - 4, g.end()), (std::vector<size_t>{18, 19, 20, 21}));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--data-worker") {
    try {
      return worker(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception& e) {
      std::cerr << "data worker failed: " << e.what() << std::endl;
      return 2;
    }
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
