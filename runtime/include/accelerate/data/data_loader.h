#pragma once
// Prepared data loaders: accelerator.prepare_data_loader(...) takes what
// torch::data::make_data_loader takes and returns a loader used the same way
// (`for (auto& batch : *loader)`), that gives this process its share of every epoch
// (docs/data-loader.md, data_split.h) with every batch already on accelerator.device().

#include <accelerate/accelerator/accelerator.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/core/error.h>
#include <accelerate/data/data_device.h>
#include <accelerate/data/data_sampler.h>
#include <accelerate/data/data_split.h>
#include <accelerate/data/data_stream.h>
#include <accelerate/data/detail/loader_position.h>
#include <accelerate/data/loader_state.h>
#include <accelerate/launch/detail/launch_settings.h>

#include <torch/data.h>

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace accelerate {

// What a prepared loader needs from its process. Accelerator::prepare_data_loader fills it
// in; tests and tools may build one by hand to see any rank's share in one process.
struct LoaderContext {
  int64_t process_index = 0;
  int64_t num_processes = 1;
  bool split_batches = false;
  bool even_batches = true;
  uint64_t batch_order_control = 0;  // DataSplitOptions::batch_order_control
  torch::Device device = torch::kCPU;
  LoaderState* state = nullptr;  // published while iterating (gather_for_metrics reads it)
  // Makes a RandomSampler's permutation process 0's on every process (a broadcast); empty
  // on one process, where the permutation drawn is already the original's.
  GeneratorRandomSampler::Agree agree_order;
  // Called when an epoch's iteration ends (the step trace records the epoch's last step,
  // which no later backward pass would see); empty when nothing listens.
  std::function<void()> on_epoch_end;
};

template <typename Inner>
class PreparedDataLoader {
 public:
  using InnerIterator = decltype(std::declval<Inner&>().begin());
  using Batch = std::decay_t<decltype(*std::declval<InnerIterator&>())>;

  PreparedDataLoader(std::unique_ptr<Inner> inner, LoaderContext context, DataSplitOptions split_options,
                     std::shared_ptr<SplitControl> control, c10::optional<size_t> epoch_items,
                     torch::data::DataLoaderOptions options, std::optional<uint64_t> sampler_seed = std::nullopt)
      : inner_(std::move(inner)),
        context_(std::move(context)),
        split_options_(std::move(split_options)),
        control_(std::move(control)),
        epoch_items_(epoch_items),
        options_(std::move(options)),
        position_(std::make_shared<LoaderPosition>()) {
    position_->seed = sampler_seed;
    position_->num_processes = context_.num_processes;
  }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Batch& operator*() { return *state_->current; }
    Batch* operator->() { return &*state_->current; }
    Iterator& operator++() {
      owner_->advance(*state_);
      return *this;
    }
    bool operator==(const Iterator& other) const {
      if (done() || other.done()) return done() == other.done();
      return state_ == other.state_;
    }
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    friend class PreparedDataLoader;
    struct State {
      c10::optional<InnerIterator> it, end;
      c10::optional<Batch> current, next;
      c10::optional<BatchShare> current_share, next_share;  // what each holds (data_split.h)
    };
    bool done() const { return !state_ || !state_->current; }
    PreparedDataLoader* owner_ = nullptr;
    std::shared_ptr<State> state_;
  };

  // Starts an epoch (as LibTorch's begin(): one iterator at a time).
  Iterator begin() {
    start_epoch();
    Iterator it;
    it.owner_ = this;
    it.state_ = std::make_shared<typename Iterator::State>();
    auto& s = *it.state_;
    s.it.emplace(inner_->begin());  // resets the sampler: the epoch's order is drawn
    s.end.emplace(inner_->end());
    position_->order = control_->order;
    s.next = fetch(s);
    advance(s);
    return it;
  }
  Iterator end() { return Iterator(); }

  // Batches this process gets per epoch; nullopt when the data has no known size.
  c10::optional<size_t> size() const {
    if (!epoch_items_) return c10::nullopt;
    return split_num_batches(split_options_, *epoch_items_);
  }
  // The next epoch starts `num_batches` batches in (for resuming); later epochs are whole.
  // The skipped batches are not loaded (streams are read, not kept).
  void skip_first_batches(size_t num_batches) { control_->skip = num_batches; }
  // The next epoch draws the random order of epoch `epoch` (as the reference's set_epoch).
  void set_epoch(uint64_t epoch) { position_->next_epoch = epoch; }
  // Where the loader stands (epoch, batches received), for save_state / load_state.
  const std::shared_ptr<LoaderPosition>& position() const { return position_; }

  const torch::data::DataLoaderOptions& options() const { return options_; }
  const DataSplitOptions& split_options() const { return split_options_; }
  const LoaderContext& context() const { return context_; }
  Inner& inner() { return *inner_; }
  void join() { inner_->join(); }

 private:
  c10::optional<Batch> fetch(typename Iterator::State& s) {
    if (*s.it == *s.end) return c10::nullopt;
    Batch batch = std::move(**s.it);
    ++*s.it;
    s.next_share = control_->pop_share();  // batches arrive in the order they were split
    detail::move_to_device(batch, context_.device);
    return batch;
  }

  void advance(typename Iterator::State& s) {
    s.current = std::move(s.next);
    s.current_share = std::move(s.next_share);
    s.next.reset();
    s.next_share.reset();
    if (s.current) s.next = fetch(s);
    if (s.current) {
      ++position_->batches;
    } else {
      position_->in_epoch = false;
    }
    publish(s);
    if (!s.current && context_.on_epoch_end) context_.on_epoch_end();
  }

  // The epoch's order, skip and seed go to the sampler (or stream) before it is reset; a
  // position left by load_state takes precedence over skip_first_batches and set_epoch.
  void start_epoch() {
    LoaderPosition& p = *position_;
    if (p.resume) {
      p.next_epoch = p.resume->epoch;
      control_->skip = static_cast<size_t>(p.resume->skip);
      if (p.resume->seed && p.seed) {
        control_->seed = *p.resume->seed;
        p.seed = *p.resume->seed;
      }
      control_->resume_order = std::move(p.resume->order);
      p.resume.reset();
    }
    control_->epoch = p.next_epoch;
    p.epoch = p.next_epoch++;
    p.batches = control_->skip;
    p.in_epoch = true;
  }

  // end_of_dataloader needs the one-batch lookahead: the sampler has returned its end
  // once the inner loader is exhausted, so the remainder is known by then.
  void publish(const typename Iterator::State& s) {
    if (!context_.state) return;
    LoaderState& st = *context_.state;
    st.active = s.current.has_value();
    st.end_of_dataloader = s.current.has_value() && !s.next.has_value();
    st.remainder = st.end_of_dataloader ? control_->remainder : -1;
    const bool known = s.current.has_value() && s.current_share.has_value();
    st.batch_real = known ? static_cast<int64_t>(s.current_share->real) : -1;
    st.batch_padded = known ? static_cast<int64_t>(s.current_share->padded) : 0;
    st.step_real = known ? static_cast<int64_t>(s.current_share->step_real) : -1;
    if (known) {
      st.samples += st.batch_real;
      st.padded_samples += st.batch_padded;
    }
  }

  std::unique_ptr<Inner> inner_;
  LoaderContext context_;
  DataSplitOptions split_options_;
  std::shared_ptr<SplitControl> control_;
  c10::optional<size_t> epoch_items_;
  torch::data::DataLoaderOptions options_;
  std::shared_ptr<LoaderPosition> position_;
};

// Batches per process per epoch (nullopt for unsized data).
template <typename Inner>
c10::optional<size_t> num_batches(const PreparedDataLoader<Inner>& loader) {
  return loader.size();
}
template <typename Inner>
PreparedDataLoader<Inner>& skip_first_batches(PreparedDataLoader<Inner>& loader, size_t num_batches) {
  loader.skip_first_batches(num_batches);
  return loader;
}
template <typename Inner>
PreparedDataLoader<Inner>& skip_first_batches(const std::unique_ptr<PreparedDataLoader<Inner>>& loader,
                                              size_t num_batches) {
  return skip_first_batches(*loader, num_batches);
}

namespace detail {

inline DataSplitOptions split_for(const LoaderContext& c, const torch::data::DataLoaderOptions& o) {
  return DataSplitOptions()
      .num_processes(c.num_processes)
      .process_index(c.process_index)
      .batch_size(o.batch_size())
      .drop_last(o.drop_last())
      .split_batches(c.split_batches)
      .even_batches(c.even_batches)
      .batch_order_control(c.batch_order_control);
}

// LibTorch must not drop our (possibly B/P sized) batches: drop_last is applied by the splitter.
inline torch::data::DataLoaderOptions inner_options(torch::data::DataLoaderOptions o) {
  o.drop_last(false);
  return o;
}

template <typename T>
struct is_std_vector : std::false_type {};
template <typename T, typename A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};

// The number of indices a sampler yields in one epoch, from a copy (the caller's sampler
// is untouched and no random numbers are drawn): LibTorch's samplers do not expose their size,
// and a sampler built for the first n items of a larger dataset must shard n items, not all.
inline size_t sampler_length(const SeededRandomSampler& sampler) { return sampler.size(); }
inline size_t sampler_length(const GeneratorRandomSampler& sampler) { return sampler.size(); }
template <typename S>
size_t sampler_length(S sampler) {
  size_t n = 0;
  while (auto batch = sampler.next(size_t{1} << 20)) n += batch->size();
  return n;
}

template <typename Dataset>
c10::optional<size_t> sized(const Dataset& dataset, const char* why) {
  const c10::optional<size_t> size = dataset.size();
  if (!size.has_value()) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("accelerate: prepare_data_loader needs a dataset with a size ") + why +
                    " (dataset.size() returned nullopt)");
  }
  return size;
}

template <typename Item>
std::unique_ptr<PreparedDataLoader<torch::data::StatefulDataLoader<SplitStream<Item>>>> stream_loader(
    const LoaderContext& ctx, typename SplitStream<Item>::Source source, torch::data::DataLoaderOptions options) {
  auto control = std::make_shared<SplitControl>();
  const DataSplitOptions split_options = split_for(ctx, options);
  validate_data_split(split_options);
  const c10::optional<size_t> items = source.size;
  auto inner = std::make_unique<torch::data::StatefulDataLoader<SplitStream<Item>>>(
      SplitStream<Item>(std::move(source), split_options, control), inner_options(options));
  return std::make_unique<PreparedDataLoader<torch::data::StatefulDataLoader<SplitStream<Item>>>>(
      std::move(inner), ctx, split_options, control, items, std::move(options));
}

}  // namespace detail

// ---- the overloads of torch::data::make_data_loader, with the process's context ---------

// (dataset, sampler, options): stateless dataset, any sampler.
template <typename Dataset, typename Sampler>
auto make_split_data_loader(const LoaderContext& ctx, Dataset dataset, Sampler sampler,
                            torch::data::DataLoaderOptions options) {
  static_assert(!Dataset::is_stateful,
                "accelerate: a stateful dataset takes no sampler: prepare_data_loader(dataset, options)");
  static_assert(
      !std::is_base_of<torch::data::samplers::DistributedSampler<typename Sampler::BatchRequestType>, Sampler>::value,
      "accelerate: prepare_data_loader shards the data itself: pass the plain sampler "
      "(SequentialSampler, RandomSampler, ...) instead of a Distributed*Sampler");
  using Request = typename Sampler::BatchRequestType;
  if constexpr (std::is_convertible<Request, size_t>::value) {
    // A stream sampler asks for counts: read the stream in order and keep our share.
    using Batch = typename Dataset::BatchType;
    static_assert(detail::is_std_vector<Batch>::value,
                  "accelerate: a stream dataset must return std::vector<Item> batches to be "
                  "sharded (apply Stack<> to the batches in your loop instead of a map)");
    using Item = typename Batch::value_type;
    auto ds = std::make_shared<Dataset>(std::move(dataset));
    auto smp = std::make_shared<Sampler>(std::move(sampler));
    typename SplitStream<Item>::Source source;
    source.pull = [ds, smp](size_t batch_size) -> c10::optional<Batch> {
      auto request = smp->next(batch_size);
      if (!request) return c10::nullopt;
      return ds->get_batch(std::move(*request));
    };
    source.reset = [smp]() { smp->reset(); };
    source.save = [smp](torch::serialize::OutputArchive& a) { smp->save(a); };
    source.load = [smp](torch::serialize::InputArchive& a) { smp->load(a); };
    source.size = ds->size();
    return detail::stream_loader<Item>(ctx, std::move(source), std::move(options));
  } else if constexpr (std::is_same<Sampler, torch::data::samplers::RandomSampler>::value) {
    // LibTorch's order, the same on every process: see data_sampler.h. The replacement
    // covers the indices the user's sampler covers (RandomSampler(n) over the first n items
    // of a larger dataset); the user's sampler already drew its first permutation.
    const size_t n = detail::sampler_length(sampler);
    return make_split_data_loader(ctx, std::move(dataset), GeneratorRandomSampler(n, ctx.agree_order),
                                  std::move(options));
  } else {
    auto control = std::make_shared<SplitControl>();
    const DataSplitOptions split_options = detail::split_for(ctx, options);
    validate_data_split(split_options);
    c10::optional<size_t> items;
    if constexpr (std::is_same<Sampler, torch::data::samplers::SequentialSampler>::value ||
                  std::is_same<Sampler, SeededRandomSampler>::value ||
                  std::is_same<Sampler, GeneratorRandomSampler>::value) {
      items = detail::sampler_length(sampler);  // may be fewer than dataset.size()
    }
    std::optional<uint64_t> seed;
    if constexpr (std::is_same<Sampler, SeededRandomSampler>::value) seed = sampler.seed();
    using Loader = torch::data::StatelessDataLoader<Dataset, SplitSampler<Sampler>>;
    auto inner =
        std::make_unique<Loader>(std::move(dataset), SplitSampler<Sampler>(std::move(sampler), split_options, control),
                                 detail::inner_options(options));
    return std::make_unique<PreparedDataLoader<Loader>>(std::move(inner), ctx, split_options, control, items,
                                                        std::move(options), seed);
  }
}

// <Sampler>(dataset, options): the sampler is built from the dataset's size (RandomSampler
// by default, as LibTorch).
template <typename Sampler = torch::data::samplers::RandomSampler, typename Dataset,
          typename = std::enable_if_t<!Dataset::is_stateful>>
auto make_split_data_loader(const LoaderContext& ctx, Dataset dataset,
                            torch::data::DataLoaderOptions options = torch::data::DataLoaderOptions()) {
  static_assert(std::is_constructible<Sampler, size_t>::value,
                "accelerate: this sampler cannot be built from the dataset's size: pass an "
                "instance, prepare_data_loader(dataset, sampler, options)");
  const size_t n = *detail::sized(dataset, "to construct its sampler");
  if constexpr (std::is_same<Sampler, torch::data::samplers::RandomSampler>::value) {
    // LibTorch makes RandomSampler(n) here, which draws a permutation: so does this.
    return make_split_data_loader(ctx, std::move(dataset), Sampler(static_cast<int64_t>(n)), std::move(options));
  } else {
    return make_split_data_loader(ctx, std::move(dataset), Sampler(n), std::move(options));
  }
}

// (dataset, options): stateful dataset (ChunkDataset, your StatefulDataset).
template <typename Dataset, typename = std::enable_if_t<Dataset::is_stateful>, typename = void>
auto make_split_data_loader(const LoaderContext& ctx, Dataset dataset,
                            torch::data::DataLoaderOptions options = torch::data::DataLoaderOptions()) {
  using Batch = typename Dataset::BatchType::value_type;
  static_assert(detail::is_std_vector<Batch>::value,
                "accelerate: a stateful dataset must return std::vector<Item> batches to be "
                "sharded");
  using Item = typename Batch::value_type;
  auto ds = std::make_shared<Dataset>(std::move(dataset));
  typename SplitStream<Item>::Source source;
  source.pull = [ds](size_t batch_size) -> c10::optional<Batch> { return ds->get_batch(batch_size); };
  source.reset = [ds]() { ds->reset(); };
  source.save = [ds](torch::serialize::OutputArchive& a) { ds->save(a); };
  source.load = [ds](torch::serialize::InputArchive& a) { ds->load(a); };
  source.size = ds->size();
  return detail::stream_loader<Item>(ctx, std::move(source), std::move(options));
}

// ---- Accelerator members (declared in accelerator.h) -------------------------------------

inline LoaderContext loader_context(Accelerator& acc) {
  LoaderContext c;
  c.process_index = acc.process_index();
  c.num_processes = acc.num_processes();
  c.split_batches = detail::AcceleratorAccess::launch_settings(acc).split_batches;
  c.even_batches = acc.options().even_batches();
  c.batch_order_control = acc.options().batch_order_control().value_or(0);
  c.device = acc.device();
  c.state = &detail::AcceleratorAccess::loader_state(acc);
  if (c.num_processes > 1) {
    // A collective at every epoch's begin(): every process begins its epochs in step.
    Accelerator* a = &acc;
    c.agree_order = [a](torch::Tensor& order) { order = a->broadcast(order, 0); };
  }
  c.on_epoch_end = [a = &acc] { detail::AcceleratorAccess::loader_epoch_end(*a); };
  return c;
}

template <typename Sampler, typename... Args>
auto Accelerator::prepare_data_loader(Args&&... args) {
  auto loader = [&] {
    if constexpr (std::is_void<Sampler>::value) {
      return make_split_data_loader(loader_context(*this), std::forward<Args>(args)...);
    } else {
      return make_split_data_loader<Sampler>(loader_context(*this), std::forward<Args>(args)...);
    }
  }();
  detail::AcceleratorAccess::track_data_loader(*this, loader->position());  // its position goes into save_state
  return loader;
}

template <typename Loader>
auto& Accelerator::skip_first_batches(Loader& loader, size_t num_batches) {
  return accelerate::skip_first_batches(loader, num_batches);
}

// ---- deprecated names: "shard" now names FSDP's model side only (data_split.h) -----------

template <typename Sampler = void, typename... Args>
[[deprecated("use accelerate::make_split_data_loader")]] auto make_sharded_data_loader(const LoaderContext& ctx,
                                                                                       Args&&... args) {
  if constexpr (std::is_void<Sampler>::value) {
    return make_split_data_loader(ctx, std::forward<Args>(args)...);
  } else {
    return make_split_data_loader<Sampler>(ctx, std::forward<Args>(args)...);
  }
}

}  // namespace accelerate
