#pragma once
// The split for data that can only be read in order: stateless datasets read through a
// torch::data::samplers::StreamSampler, and stateful datasets (ChunkDataset, your own
// StatefulDataset). Every process reads the global stream (there is no index to skip to)
// and keeps only its share, by the same rules as index samplers (data_split.h). Padding
// re-uses the first items of the epoch, so their batch type must be std::vector<Item>.

#include <accelerate/data/data_sampler.h>
#include <accelerate/data/data_split.h>

#include <torch/data/datasets/stateful.h>
#include <torch/serialize/archive.h>

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace accelerate {

template <typename Item>
class SplitStream : public torch::data::datasets::StatefulDataset<SplitStream<Item>, std::vector<Item>, size_t> {
 public:
  using Batch = std::vector<Item>;

  // Where the global stream comes from (built by prepare_data_loader).
  struct Source {
    std::function<c10::optional<Batch>(size_t)> pull;  // next global batch, nullopt at end
    std::function<void()> reset;
    std::function<void(torch::serialize::OutputArchive&)> save;
    std::function<void(torch::serialize::InputArchive&)> load;
    c10::optional<size_t> size;
  };

  SplitStream(Source source, DataSplitOptions options, std::shared_ptr<SplitControl> control)
      : impl_(std::make_shared<Impl>(std::move(source), std::move(options), std::move(control))) {}

  // Loader workers share one dataset: reads are serialised, as the stream is sequential.
  c10::optional<Batch> get_batch(size_t batch_size) override {
    Impl& s = *impl_;
    std::lock_guard<std::mutex> lock(s.mutex);
    auto pull = [&s, batch_size]() { return s.source.pull(batch_size); };
    for (; s.skip > 0; --s.skip) {
      if (!s.splitter.next(pull)) break;
    }
    auto batch = s.splitter.next(pull);
    if (!batch) {
      s.control->remainder = s.splitter.remainder();
      s.control->exhausted = true;
    } else {
      s.control->push_share(s.splitter.last_share());
    }
    return batch;
  }

  c10::optional<size_t> size() const override { return impl_->source.size; }

  void reset() override {
    Impl& s = *impl_;
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.source.reset) s.source.reset();
    s.splitter.reset();
    s.control->clear_shares();
    s.skip = s.control->skip;
    s.control->skip = 0;
    s.control->remainder = -1;
    s.control->exhausted = false;
  }

  void save(torch::serialize::OutputArchive& archive) const override {
    if (impl_->source.save) impl_->source.save(archive);
  }
  void load(torch::serialize::InputArchive& archive) override {
    if (impl_->source.load) impl_->source.load(archive);
  }

 private:
  struct Impl {
    Impl(Source src, DataSplitOptions o, std::shared_ptr<SplitControl> c)
        : source(std::move(src)), splitter(std::move(o)), control(std::move(c)) {}
    std::mutex mutex;
    Source source;
    BatchSplitter<Item> splitter;
    std::shared_ptr<SplitControl> control;
    size_t skip = 0;
  };
  std::shared_ptr<Impl> impl_;
};

template <typename Item>
using ShardedStream [[deprecated("use accelerate::SplitStream: \"shard\" names FSDP's model side only")]] =
    SplitStream<Item>;

}  // namespace accelerate
