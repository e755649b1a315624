#pragma once
// What an Accelerator has prepared: models, optimizers and schedulers in preparation order
// (a checkpoint matches them by position), and the state its active prepared loader
// publishes (LoaderState: accumulate() and gather_for_metrics() read it).
#include <accelerate/accelerator/accelerator.h>

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace accelerate {
namespace detail {

class PreparedObjects {
 public:
  // False when the model was prepared already (preparing it again changes nothing).
  // A program may make a model anew and prepare it again (`net = Net(); torch::load(net, ...)`,
  // which accel-migrate follows with a second prepare, issue 47): the old module is then
  // freed, and the new one may even get its address. So a model owned by a shared_ptr (every
  // ModuleHolder's is) is remembered by a weak reference: one that is gone is forgotten (a
  // checkpoint must not read it), and a live module at a remembered address is the same one
  // only while that reference lives. A module held by value is remembered by address.
  bool add_model(torch::nn::Module& model) {
    forget_gone_models();
    auto same = std::find_if(models_.begin(), models_.end(), [&](const Entry& e) { return e.module == &model; });
    if (same != models_.end()) return false;
    std::weak_ptr<torch::nn::Module> owner = owner_of(model);
    const bool owned = !owner.expired();
    models_.push_back(Entry{&model, std::move(owner), owned});
    return true;
  }
  void add_optimizer(torch::optim::Optimizer& optimizer) { optimizers_.push_back(&optimizer); }
  void add_scheduler(torch::optim::LRScheduler& scheduler) { schedulers_.push_back(&scheduler); }

  // The prepared models still alive, in preparation order.
  std::vector<torch::nn::Module*> models() const {
    std::vector<torch::nn::Module*> alive;
    for (const Entry& e : models_) {
      if (!e.owned || !e.owner.expired()) alive.push_back(e.module);
    }
    return alive;
  }
  const std::vector<torch::optim::Optimizer*>& optimizers() const { return optimizers_; }
  const std::vector<torch::optim::LRScheduler*>& schedulers() const { return schedulers_; }

  LoaderState& loader() { return loader_; }
  const LoaderState& loader() const { return loader_; }

 private:
  struct Entry {
    torch::nn::Module* module;
    std::weak_ptr<torch::nn::Module> owner;  // empty for a module held by value
    bool owned;
  };

  static std::weak_ptr<torch::nn::Module> owner_of(torch::nn::Module& model) {
    try {
      return model.shared_from_this();
    } catch (const std::bad_weak_ptr&) {
      return {};  // held by value: no shared owner to watch
    }
  }
  void forget_gone_models() {
    models_.erase(
        std::remove_if(models_.begin(), models_.end(), [](const Entry& e) { return e.owned && e.owner.expired(); }),
        models_.end());
  }

  std::vector<Entry> models_;
  std::vector<torch::optim::Optimizer*> optimizers_;
  std::vector<torch::optim::LRScheduler*> schedulers_;
  LoaderState loader_;
};

}  // namespace detail
}  // namespace accelerate
