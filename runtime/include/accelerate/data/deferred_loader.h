#pragma once
// Data loaders made before main. A namespace-scope `auto loader = make_data_loader(...)` is
// initialised during static initialisation, when no Accelerator can exist yet (main
// constructs it), so it cannot be prepared there. accelerate::defer_data_loader(...) takes
// make_data_loader's arguments and does there exactly what make_data_loader would have done
// with the default generator (a RandomSampler built from the dataset's size draws its first
// order then, as LibTorch's does), and prepares the loader at its first use, after main has
// made the Accelerator: the random numbers the program draws, and so its results, are the
// original program's. Used through `*loader` and `loader->`, as the unique_ptr it replaces.

#include <accelerate/core/error.h>
#include <accelerate/data/data_loader.h>

#include <torch/data.h>

#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace accelerate {

// Holds prepare_data_loader's arguments (as values) until the loader is first used.
template <typename... Args>
class DeferredDataLoader {
 public:
  using Pointer = decltype(std::declval<Accelerator&>().prepare_data_loader(std::declval<Args>()...));
  using Loader = typename Pointer::element_type;

  explicit DeferredDataLoader(Args... args) : args_(std::in_place, std::move(args)...) {}

  // The prepared loader; made on the first call, which must come after the Accelerator's
  // construction (Accelerator::current() throws otherwise). Not thread-safe: the first
  // use is expected on the thread that runs main. const as unique_ptr's: a const global
  // loader is still iterated.
  Loader* get() const {
    if (!loader_) {
      if (!Accelerator::exists())
        throw Error(ErrorCode::InvalidState,
                    "a data loader made before main was used before main made the Accelerator: "
                    "use it after `accelerate::Accelerator accelerator;`");
      loader_ =
          std::apply([](Args&... a) { return Accelerator::current().prepare_data_loader(std::move(a)...); }, *args_);
      args_.reset();
    }
    return loader_.get();
  }
  Loader& operator*() const { return *get(); }
  Loader* operator->() const { return get(); }

 private:
  mutable std::optional<std::tuple<Args...>> args_;
  mutable Pointer loader_;
};

// The overloads of torch::data::make_data_loader.

// <Sampler>(dataset, options): the sampler is built now from the dataset's size, as
// make_data_loader builds it (a RandomSampler draws its first order here).
template <typename Sampler = torch::data::samplers::RandomSampler, typename Dataset,
          typename = std::enable_if_t<!Dataset::is_stateful>>
DeferredDataLoader<Dataset, Sampler, torch::data::DataLoaderOptions> defer_data_loader(
    Dataset dataset, torch::data::DataLoaderOptions options = torch::data::DataLoaderOptions()) {
  Sampler sampler(*detail::sized(dataset, "to construct its sampler"));
  return DeferredDataLoader<Dataset, Sampler, torch::data::DataLoaderOptions>(std::move(dataset), std::move(sampler),
                                                                              std::move(options));
}

// (dataset, sampler, options): stateless dataset, any sampler.
template <typename Dataset, typename Sampler, typename = std::enable_if_t<!Dataset::is_stateful>>
DeferredDataLoader<Dataset, Sampler, torch::data::DataLoaderOptions> defer_data_loader(
    Dataset dataset, Sampler sampler, torch::data::DataLoaderOptions options) {
  return DeferredDataLoader<Dataset, Sampler, torch::data::DataLoaderOptions>(std::move(dataset), std::move(sampler),
                                                                              std::move(options));
}

// (dataset, options): stateful dataset.
template <typename Dataset, typename = std::enable_if_t<Dataset::is_stateful>, typename = void>
DeferredDataLoader<Dataset, torch::data::DataLoaderOptions> defer_data_loader(
    Dataset dataset, torch::data::DataLoaderOptions options = torch::data::DataLoaderOptions()) {
  return DeferredDataLoader<Dataset, torch::data::DataLoaderOptions>(std::move(dataset), std::move(options));
}

}  // namespace accelerate
