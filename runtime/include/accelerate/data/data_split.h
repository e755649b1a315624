#pragma once
// How a prepared data loader splits an epoch between processes (docs/data-loader.md).
// Named "split" (data_split.h, DataSplitOptions, BatchSplitter) because "shard" names the
// model side only (FSDP's sharded_model): one word per idea. "split" is already the data
// side's word: split_batches, split_range and split_between_processes are the same idea.
// (Before, this header was sharding.h; that name still forwards here.)
// Pure: a function of the global stream of batches every process draws identically, no
// process group involved, so the exact semantics can be tested for any number of
// processes inside one process. The rules are Hugging Face Accelerate's batch-sampler
// sharding, so users moving between Python and C++ get the same batches on the same ranks.

#include <c10/util/Optional.h>
#include <torch/arg.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace accelerate {

struct DataSplitOptions {
  TORCH_ARG(int64_t, num_processes) = 1;
  TORCH_ARG(int64_t, process_index) = 0;
  // The loader's batch size: per process, or the global batch when split_batches is set.
  TORCH_ARG(size_t, batch_size) = 1;
  TORCH_ARG(bool, drop_last) = false;
  TORCH_ARG(bool, split_batches) = false;
  TORCH_ARG(bool, even_batches) = true;
  // A control run of `accelerate verify` (issues 47/48): not 0, each batch this process gets
  // is permuted, by a generator seeded from this value and the batch's number (never
  // LibTorch's). A mean over a batch does not depend on its order except for rounding, so
  // such runs measure how much the order of the sums over a batch moves this program's
  // numbers: the rounding a 1- vs N-process comparison may show (the premise, measured:
  // results/2026-11-28-order-control-probe.txt).
  TORCH_ARG(uint64_t, batch_order_control) = 0;
};

// Throws accelerate::Error (Config) with a message naming the offending setting.
void validate_data_split(const DataSplitOptions& options);

// The order control's permutation of `n` items for batch `number` (batch_order_control
// above; process_share uses it too): Fisher-Yates with a 64-bit generator of its own
// (splitmix64), the same permutation on every platform and standard library, and no draw
// from LibTorch's generators, whose state the program's own randomness depends on.
inline std::vector<size_t> order_control_permutation(uint64_t seed, uint64_t number, size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL ^ (number + 1);
  auto draw = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[draw() % i]);
  return order;
}

// Batches this process gets in one epoch of `num_items` items.
size_t split_num_batches(const DataSplitOptions& options, size_t num_items);

// Real (non-duplicated) samples in the last global round of an epoch of `num_items` items
// when even_batches padding duplicated samples in it, else -1. The gathered last round
// (rank-order concatenation of every process's last batch) starts with exactly these.
int64_t split_remainder(const DataSplitOptions& options, size_t num_items);

// What one batch of this process holds, known without communication (every process runs
// the same splitter over the same global stream): the gradient weighting of a short last
// step (docs/data-loader.md "Short last batches") and the work report read it.
struct BatchShare {
  size_t real = 0;       // samples of this epoch this batch holds
  size_t padded = 0;     // repeated samples (even_batches): only in a batch with no real sample
  size_t step_real = 0;  // real samples in the global step (all processes' batches of this round)
};

// Turns the global stream of batches (pulled on demand) into this process's batches.
// T is an index (samplers) or an item (stream datasets, whose items cannot be re-read).
// Padding (even_batches) completes a short last round so that every process still takes
// part in the same collectives, but a batch that holds real samples gets only those (a
// shorter batch): a mean over it is then a mean over real samples, which the weight
// N * real / step_real turns into the one-process mean. Only a process left without a real
// sample gets a whole padded batch (weight 0).
template <typename T>
class BatchSplitter {
 public:
  using Batch = std::vector<T>;

  explicit BatchSplitter(DataSplitOptions options) : o_(std::move(options)) {
    validate_data_split(o_);
    reset();
  }

  // Start of an epoch.
  void reset() {
    ready_.clear();
    shares_.clear();
    initial_.clear();
    to_yield_.clear();
    last_.clear();
    has_to_yield_ = false;
    seen_ = 0;
    items_ = 0;
    round_items_ = 0;
    share_ = BatchShare();
    input_done_ = false;
    padded_ = false;
  }

  // This process's next batch, pulling global batches from `pull` (a callable returning
  // c10::optional<Batch>, nullopt at the end of the epoch) as needed. nullopt: epoch over.
  template <typename Pull>
  c10::optional<Batch> next(Pull&& pull) {
    while (ready_.empty() && !input_done_) {
      c10::optional<Batch> batch = pull();
      if (!batch || batch->empty() || (o_.drop_last() && batch->size() < o_.batch_size())) {
        input_done_ = true;
        finish();
      } else {
        consume(std::move(*batch));
      }
    }
    if (ready_.empty()) return c10::nullopt;
    Batch out = std::move(ready_.front());
    ready_.pop_front();
    share_ = shares_.front();
    shares_.pop_front();
    if (o_.batch_order_control() != 0) permute(out, yielded_);
    ++yielded_;
    return out;
  }

  // What the batch next() returned last holds.
  const BatchShare& last_share() const { return share_; }

  // Valid once next() returned nullopt: see split_remainder().
  int64_t remainder() const {
    if (!padded_) return -1;
    const size_t round =
        o_.split_batches() ? o_.batch_size() : o_.batch_size() * static_cast<size_t>(o_.num_processes());
    return static_cast<int64_t>(items_ % round);
  }
  size_t global_batches_seen() const { return seen_; }
  size_t items_seen() const { return items_; }
  const DataSplitOptions& options() const { return o_; }

 private:
  // order_control_permutation; the batch's items are all real or all padding (push()), so
  // the permutation never mixes the two.
  void permute(Batch& batch, uint64_t number) const {
    const auto order = order_control_permutation(o_.batch_order_control(), number, batch.size());
    Batch out;
    out.reserve(batch.size());
    for (size_t i : order) out.push_back(std::move(batch[i]));
    batch = std::move(out);
  }

  size_t P() const { return static_cast<size_t>(o_.num_processes()); }
  size_t rank() const { return static_cast<size_t>(o_.process_index()); }
  size_t B() const { return o_.batch_size(); }

  Batch slice(const Batch& batch) const {
    const size_t len = B() / P();
    const size_t from = std::min(batch.size(), len * rank());
    const size_t to = std::min(batch.size(), len * (rank() + 1));
    return Batch(batch.begin() + from, batch.begin() + to);
  }

  // A batch for this process: its first `real` items are of the epoch, the rest padding.
  // A batch with real items keeps only those (see the class comment).
  void push(Batch batch, size_t real, size_t step_real) {
    real = std::min(real, batch.size());
    if (real > 0 && real < batch.size()) batch.resize(real);
    shares_.push_back(BatchShare{real, batch.size() - real, step_real});
    ready_.push_back(std::move(batch));
  }

  // Real items of this process's slice of a global batch whose first `real` items are real.
  size_t slice_real(size_t real) const {
    const size_t len = B() / P();
    const size_t from = std::min(real, len * rank());
    return std::min(real, len * (rank() + 1)) - from;
  }

  // Repeats `data` until it holds at least n items (for epochs shorter than one round).
  static Batch cycled(Batch data, size_t n) {
    while (data.size() < n) data.insert(data.end(), data.begin(), data.end());
    return data;
  }

  void consume(Batch batch) {
    const size_t idx = seen_++;
    items_ += batch.size();
    if (P() == 1) {  // as the reference: one process gets the plain loader's batches
      const size_t n = batch.size();
      push(std::move(batch), n, n);
      return;
    }
    if (o_.split_batches()) {
      if (idx == 0) initial_ = batch;
      if (batch.size() == B()) push(slice(batch), B() / P(), B());
    } else {
      if (idx % P() == 0) round_items_ = 0;
      round_items_ += batch.size();
      // The first round is kept to complete an uneven final round from it.
      if (!o_.drop_last() && idx < P()) initial_.insert(initial_.end(), batch.begin(), batch.end());
      if (idx % P() == rank()) {
        to_yield_ = batch;
        has_to_yield_ = true;
      }
      // A round is handed out only once it is complete and full.
      if (idx % P() == P() - 1 && batch.size() == B()) {
        if (has_to_yield_) push(std::move(to_yield_), B(), P() * B());
        to_yield_.clear();
        has_to_yield_ = false;
      }
    }
    last_ = std::move(batch);
  }

  void finish() {
    if (P() == 1 || o_.drop_last() || initial_.empty()) return;
    if (o_.split_batches()) {
      if (last_.size() >= B()) return;
      if (!o_.even_batches()) {
        if (last_.size() > (B() / P()) * rank()) push(slice(last_), B(), last_.size());
        return;
      }
      Batch padded = last_;
      const Batch cycle = cycled(initial_, B());
      padded.insert(padded.end(), cycle.begin(), cycle.end());
      push(slice(padded), slice_real(last_.size()), last_.size());
      padded_ = true;
      return;
    }
    if (!o_.even_batches()) {
      if (has_to_yield_ && !to_yield_.empty()) push(std::move(to_yield_), B(), round_items_);
      return;
    }
    if (has_to_yield_ && to_yield_.size() == B()) push(std::move(to_yield_), B(), round_items_);
    const Batch cycle = cycled(initial_, P() * B());
    Batch batch = last_;
    size_t idx = seen_ - 1;
    if (batch.size() == B()) {  // already handed out by its process
      batch.clear();
      ++idx;
    }
    size_t from = 0;
    while (idx % P() != 0 || !batch.empty()) {
      const size_t real = batch.size();
      const size_t to = from + B() - batch.size();
      batch.insert(batch.end(), cycle.begin() + from, cycle.begin() + to);
      if (idx % P() == rank()) push(batch, real, round_items_);
      padded_ = true;
      from = to;
      batch.clear();
      ++idx;
    }
  }

  DataSplitOptions o_;
  std::deque<Batch> ready_;
  std::deque<BatchShare> shares_;  // what each batch of ready_ holds
  BatchShare share_;               // ... the one next() returned last
  Batch initial_, to_yield_, last_;
  bool has_to_yield_ = false;
  size_t seen_ = 0;
  size_t items_ = 0;
  size_t round_items_ = 0;  // items of the current round so far (without split_batches)
  bool input_done_ = false;
  bool padded_ = false;
  uint64_t yielded_ = 0;  // batches next() returned, over all epochs (a control's permutations differ by epoch)
};

}  // namespace accelerate
