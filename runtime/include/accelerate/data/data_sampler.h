#pragma once
// Samplers of a prepared data loader.
//
// SplitSampler wraps any index sampler: every process runs the wrapped sampler over the
// whole epoch (indices only, cheap) and keeps its own share (data_split.h), so the dataset
// is asked only for this process's examples, by the loader's workers as usual.
//
// GeneratorRandomSampler replaces torch::data::samplers::RandomSampler in prepared loaders
// and draws what LibTorch's draws (torch::randperm from the default generator at every
// reset(), that is at every epoch's begin()), so a migrated program on one process sees the
// original's order and leaves the generator where the original leaves it. Sharding needs
// one global order per epoch: on N processes every process draws (keeping its generator in
// step with a one-process run) and all use process 0's permutation.
//
// SeededRandomSampler is for programs written for Accelerate: its permutation depends only
// on (seed, epoch, size), identical on every process whatever the generators did, and
// set_epoch(e) draws epoch e's order again.

#include <accelerate/core/error.h>
#include <accelerate/data/data_split.h>

#include <torch/data/samplers/base.h>
#include <torch/serialize/archive.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace accelerate {

// State a prepared loader shares with the sampler (or stream) that lives inside LibTorch's
// loader: requests in, end-of-epoch facts out.
struct SplitControl {
  size_t skip = 0;                // local batches to skip at the start of the next epoch
  c10::optional<uint64_t> epoch;  // set_epoch() for seeded samplers, applied at next reset
  c10::optional<uint64_t> seed;   // a seeded sampler's seed restored by load_state, likewise
  int64_t remainder = -1;         // after the epoch's global stream ended: see data_split.h
  bool exhausted = false;
  // A generator-drawn sampler's order: the epoch's order after reset (for save_state), and
  // the resumed epoch's order load_state left for the next reset (used instead of a draw).
  std::vector<int64_t> order;
  std::vector<int64_t> resume_order;

  // What each batch handed to LibTorch's loader holds, in the order they were handed out
  // (the sampler runs ahead of the batches the loop receives: LibTorch prefetches, and
  // yields batches in request order): the prepared loader takes one per batch it yields.
  void push_share(const BatchShare& share) {
    std::lock_guard<std::mutex> lock(shares_mutex_);
    shares_.push_back(share);
  }
  c10::optional<BatchShare> pop_share() {
    std::lock_guard<std::mutex> lock(shares_mutex_);
    if (shares_.empty()) return c10::nullopt;
    BatchShare share = shares_.front();
    shares_.pop_front();
    return share;
  }
  void clear_shares() {
    std::lock_guard<std::mutex> lock(shares_mutex_);
    shares_.clear();
  }

 private:
  std::mutex shares_mutex_;  // a stream dataset is read by the loader's worker threads
  std::deque<BatchShare> shares_;
};

class GeneratorRandomSampler : public torch::data::samplers::Sampler<> {
 public:
  // Makes `order` (int64, on the CPU) process 0's on every process; empty on one process.
  using Agree = std::function<void(torch::Tensor& order)>;

  // Draws nothing: the caller's RandomSampler already drew its first permutation when it
  // was made (make_split_data_loader draws one for the overloads that make it).
  GeneratorRandomSampler(size_t size, Agree agree);

  // The next reset() uses this order instead of drawing one (an epoch resumed mid-way).
  void resume_with(std::vector<int64_t> order);
  const torch::Tensor& order() const { return order_; }
  size_t size() const { return size_; }

  void reset(c10::optional<size_t> new_size = c10::nullopt) override;
  c10::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  size_t size_;
  Agree agree_;
  torch::Tensor order_;
  size_t position_ = 0;
  std::vector<int64_t> pending_;
};

class SeededRandomSampler : public torch::data::samplers::Sampler<> {
 public:
  SeededRandomSampler(size_t size, uint64_t seed);

  // The next reset() draws this epoch's permutation (epochs otherwise count up from 0).
  void set_epoch(uint64_t epoch) { next_epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }
  // The next reset() draws its permutation with this seed (load_state restores it).
  void set_seed(uint64_t seed) { seed_ = seed; }
  uint64_t seed() const { return seed_; }
  size_t size() const { return size_; }

  void reset(c10::optional<size_t> new_size = c10::nullopt) override;
  c10::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // The permutation of 0..size-1 for (seed, epoch): a portable Fisher-Yates over
  // std::mt19937_64, so it is the same with any compiler, library or LibTorch version.
  static std::vector<size_t> permutation(size_t size, uint64_t seed, uint64_t epoch);

 private:
  size_t size_;
  uint64_t seed_;
  uint64_t epoch_ = 0;
  uint64_t next_epoch_ = 0;
  std::vector<size_t> order_;
  size_t position_ = 0;
};

namespace detail {
template <typename S, typename = void>
struct has_set_epoch : std::false_type {};
template <typename S>
struct has_set_epoch<S, std::void_t<decltype(std::declval<S&>().set_epoch(uint64_t{}))>> : std::true_type {};
template <typename S, typename = void>
struct has_set_seed : std::false_type {};
template <typename S>
struct has_set_seed<S, std::void_t<decltype(std::declval<S&>().set_seed(uint64_t{}))>> : std::true_type {};
}  // namespace detail

template <typename Inner>
class SplitSampler : public torch::data::samplers::Sampler<std::vector<size_t>> {
 public:
  SplitSampler(Inner inner, DataSplitOptions options, std::shared_ptr<SplitControl> control)
      : inner_(std::move(inner)), splitter_(std::move(options)), control_(std::move(control)) {}

  void reset(c10::optional<size_t> new_size = c10::nullopt) override {
    if constexpr (detail::has_set_epoch<Inner>::value) {
      if (control_->epoch) inner_.set_epoch(*control_->epoch);
    }
    control_->epoch.reset();
    if constexpr (detail::has_set_seed<Inner>::value) {
      if (control_->seed) inner_.set_seed(*control_->seed);
    }
    control_->seed.reset();
    if constexpr (std::is_same<Inner, GeneratorRandomSampler>::value) {
      if (!control_->resume_order.empty()) inner_.resume_with(std::move(control_->resume_order));
      control_->resume_order.clear();
    }
    inner_.reset(new_size);
    if constexpr (std::is_same<Inner, GeneratorRandomSampler>::value) {
      const torch::Tensor& o = inner_.order();
      control_->order.assign(o.data_ptr<int64_t>(), o.data_ptr<int64_t>() + o.numel());
    }
    splitter_.reset();
    control_->clear_shares();
    skip_ = control_->skip;
    control_->skip = 0;
    control_->remainder = -1;
    control_->exhausted = false;
  }

  c10::optional<std::vector<size_t>> next(size_t batch_size) override {
    if (batch_size != splitter_.options().batch_size()) {
      throw Error(ErrorCode::InvalidArgument, "accelerate: the prepared loader's batch size changed from " +
                                                  std::to_string(splitter_.options().batch_size()) + " to " +
                                                  std::to_string(batch_size));
    }
    auto pull = [this, batch_size]() -> c10::optional<std::vector<size_t>> {
      auto request = inner_.next(batch_size);
      if (!request) return c10::nullopt;
      return std::vector<size_t>(request->begin(), request->end());
    };
    for (; skip_ > 0; --skip_) {
      if (!splitter_.next(pull)) break;
    }
    auto batch = splitter_.next(pull);
    if (!batch) {
      control_->remainder = splitter_.remainder();
      control_->exhausted = true;
    } else {
      control_->push_share(splitter_.last_share());
    }
    return batch;
  }

  void save(torch::serialize::OutputArchive& archive) const override { inner_.save(archive); }
  void load(torch::serialize::InputArchive& archive) override { inner_.load(archive); }

  Inner& inner() { return inner_; }

 private:
  Inner inner_;
  BatchSplitter<size_t> splitter_;
  std::shared_ptr<SplitControl> control_;
  size_t skip_ = 0;
};

}  // namespace accelerate
