#pragma once
// FSDP's side of an Accelerator (docs/fsdp.md): the resolved settings, and the models
// prepared under SHARD_GRAD_OP / FULL_SHARD in preparation order. What the training step,
// clipping and checkpoints ask of them (which model is sharded, which tensors hold the
// gradients, whether an optimizer holds shards) is answered here, once.
#include "fsdp/sharded_model.h"

#include <accelerate/core/fsdp_options.h>

#include <torch/torch.h>

#include <memory>
#include <set>
#include <vector>

namespace accelerate {
namespace detail {

class ShardedModels {
 public:
  explicit ShardedModels(FsdpSettings settings) : settings_(std::move(settings)) {}

  const FsdpSettings& settings() const { return settings_; }
  bool empty() const { return models_.empty(); }
  void add(std::unique_ptr<ShardedModel> model) { models_.push_back(std::move(model)); }
  const std::vector<std::unique_ptr<ShardedModel>>& models() const { return models_; }

  // The sharded model of `model`, or null when it was prepared without sharding.
  const ShardedModel* find(const torch::nn::Module& model) const;
  // Whether the optimizer holds shards of a sharded model's parameters (each process's
  // state then differs).
  bool holds_shards_of(const torch::optim::Optimizer& optimizer) const;
  // Every piece of every sharded model, by TensorImpl.
  std::set<const void*> pieces() const;
  // What holds the gradients of `parameters`: a sharded model's parameter stands for its
  // piece; a piece (e.g. from optimizer.parameters()) for itself; anything else is
  // replicated. Each appears once. *replicated_only tells whether no shard was among them.
  std::vector<torch::Tensor> grad_targets(const std::vector<torch::Tensor>& parameters, bool* replicated_only) const;

 private:
  FsdpSettings settings_;
  std::vector<std::unique_ptr<ShardedModel>> models_;
};

}  // namespace detail
}  // namespace accelerate
