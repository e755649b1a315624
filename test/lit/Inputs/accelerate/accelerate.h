#pragma once
// Stub of the runtime's API (accelerate/accelerator.h, data_loader.h) for the lit tests:
// migrated output must parse again (idempotence runs).
#include <torch/torch.h>

#include <utility>

namespace accelerate {
class Accelerator {
 public:
  static Accelerator& current();
  static bool exists();
  torch::Device device() const;
  bool is_main_process() const;
  template <typename... Ts>
  void prepare(Ts&&... objects) {}
  template <typename Sampler = torch::data::samplers::RandomSampler, typename Dataset,
            typename Options>
  auto prepare_data_loader(Dataset dataset, Options options) {
    return torch::data::make_data_loader<Sampler>(std::move(dataset), options);
  }
  void backward(const torch::Tensor& loss, const torch::Tensor& gradient = {},
                c10::optional<bool> retain_graph = {}, bool create_graph = false);
  double clip_grad_norm_(const std::vector<torch::Tensor>& parameters, double max_norm,
                         double norm_type = 2.0);
  void clip_grad_value_(const std::vector<torch::Tensor>& parameters, double clip_value);
  torch::Tensor gather_for_metrics(const torch::Tensor& t);
  template <typename T>
  void save(const T& object, const std::string& path) {}
};
}  // namespace accelerate
