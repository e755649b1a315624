#pragma once
// What an Accelerator has prepared: models, optimizers and schedulers in preparation order
// (a checkpoint matches them by position), and the state its active prepared loader
// publishes (LoaderState: accumulate() and gather_for_metrics() read it).
#include <accelerate/accelerator.h>

#include <torch/torch.h>

#include <set>
#include <vector>

namespace accelerate {
namespace detail {

class PreparedObjects {
 public:
  // False when the model was prepared already (preparing it again changes nothing).
  bool add_model(torch::nn::Module& model) {
    if (!seen_.insert(&model).second) return false;
    models_.push_back(&model);
    return true;
  }
  void add_optimizer(torch::optim::Optimizer& optimizer) { optimizers_.push_back(&optimizer); }
  void add_scheduler(torch::optim::LRScheduler& scheduler) { schedulers_.push_back(&scheduler); }

  const std::vector<torch::nn::Module*>& models() const { return models_; }
  const std::vector<torch::optim::Optimizer*>& optimizers() const { return optimizers_; }
  const std::vector<torch::optim::LRScheduler*>& schedulers() const { return schedulers_; }

  LoaderState& loader() { return loader_; }
  const LoaderState& loader() const { return loader_; }

 private:
  std::set<const torch::nn::Module*> seen_;
  std::vector<torch::nn::Module*> models_;
  std::vector<torch::optim::Optimizer*> optimizers_;
  std::vector<torch::optim::LRScheduler*> schedulers_;
  LoaderState loader_;
};

}  // namespace detail
}  // namespace accelerate
