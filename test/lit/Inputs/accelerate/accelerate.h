#pragma once
// Stub of the runtime's API (accelerate/accelerator.h, data_loader.h) for the lit tests:
// migrated output must parse again (idempotence runs).
#include <torch/torch.h>

#include <memory>
#include <utility>

namespace accelerate {
// A prepared loader is the runtime's own type (data_loader.h), not LibTorch's: a rule that
// takes every loop over a LibTorch loader for an unprepared one must see the difference
// here too (a second run over migrated code once split such loops as whole batches, which
// lit could not see while this stub returned LibTorch's loader).
template <typename Inner>
class PreparedDataLoader {
 public:
  decltype(std::declval<Inner&>().begin()) begin();
  decltype(std::declval<Inner&>().end()) end();
};
enum class ReduceOp { Sum, Mean, Max, Min };
enum class LossReduction { Mean, Sum };
struct AcceleratorOptions {
  c10::optional<bool> cpu() const;  // std::optional in the runtime; this parses as C++14
};
class Accelerator {
 public:
  static Accelerator& current();
  static bool exists();
  torch::Device device() const;
  const AcceleratorOptions& options() const;
  bool is_main_process() const;
  bool is_local_main_process() const;
  int process_index() const;
  template <typename T>
  T shared_seed(T local) { return local; }
  template <typename... Ts>
  void prepare(Ts&&... objects) {}
  template <typename Sampler = torch::data::samplers::RandomSampler, typename Dataset,
            typename Options>
  auto prepare_data_loader(Dataset dataset, Options options) {
    using Inner = typename decltype(torch::data::make_data_loader<Sampler>(std::move(dataset), options))::element_type;
    return std::unique_ptr<PreparedDataLoader<Inner>>();
  }
  void backward(const torch::Tensor& loss, const torch::Tensor& gradient = {},
                c10::optional<bool> retain_graph = {}, bool create_graph = false);
  void backward(const torch::Tensor& loss, LossReduction reduction);
  double clip_grad_norm_(const std::vector<torch::Tensor>& parameters, double max_norm,
                         double norm_type = 2.0);
  void clip_grad_value_(const std::vector<torch::Tensor>& parameters, double clip_value);
  torch::Tensor gather_for_metrics(const torch::Tensor& t);
  torch::Tensor gather(const torch::Tensor& t);
  torch::Tensor reduce(const torch::Tensor& t, ReduceOp op = ReduceOp::Sum);
  void set_trigger();
  bool check_trigger();
  void wait_for_everyone();
  template <typename T>
  void save(const T& object, const std::string& path) {}
};
torch::Tensor real_samples(Accelerator& accelerator, const torch::Tensor& per_sample);
template <typename T>
T real_mean(Accelerator& accelerator, const T& value, const torch::Tensor& per_sample) { return value; }
template <typename T>
T batch_mean(Accelerator& accelerator, const T& value, const torch::Tensor& per_sample) { return value; }
template <typename T>
T sum_across_processes(Accelerator& accelerator, const T& value) { return value; }
template <typename T>
T mean_across_processes(Accelerator& accelerator, const T& value) { return value; }
torch::Tensor process_share(Accelerator& accelerator, const torch::Tensor& batch);
// A loader made before main (deferred_loader.h): prepared at its first use.
template <typename Dataset, typename... Rest>
class DeferredDataLoader {
 public:
  using Loader = torch::data::StatelessDataLoader<Dataset, torch::data::samplers::RandomSampler>;
  Loader& operator*() const;
  Loader* operator->() const;
};
template <typename Sampler = torch::data::samplers::RandomSampler, typename Dataset>
DeferredDataLoader<Dataset, Sampler, torch::data::DataLoaderOptions> defer_data_loader(
    Dataset dataset, torch::data::DataLoaderOptions options) {
  return {};
}
// accelerate/sync_batch_norm.h: LibTorch's batch norm with global-batch statistics.
namespace nn {
struct SyncBatchNorm1dImpl : torch::nn::BatchNorm1dImpl {
  using BatchNorm1dImpl::BatchNorm1dImpl;
};
struct SyncBatchNorm2dImpl : torch::nn::BatchNorm2dImpl {
  using BatchNorm2dImpl::BatchNorm2dImpl;
};
struct SyncBatchNorm3dImpl : torch::nn::BatchNorm3dImpl {
  using BatchNorm3dImpl::BatchNorm3dImpl;
};
TORCH_MODULE(SyncBatchNorm1d);
TORCH_MODULE(SyncBatchNorm2d);
TORCH_MODULE(SyncBatchNorm3d);
}  // namespace nn
}  // namespace accelerate
