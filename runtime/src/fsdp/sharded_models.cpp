// FSDP's side of an Accelerator: lookups over the sharded models (sharded_models.h).
#include "fsdp/sharded_models.h"

namespace accelerate {
namespace detail {

const ShardedModel* ShardedModels::find(const torch::nn::Module& model) const {
  for (const auto& s : models_) {
    if (&s->module() == &model) return s.get();
  }
  return nullptr;
}

bool ShardedModels::holds_shards_of(const torch::optim::Optimizer& optimizer) const {
  for (const auto& s : models_) {
    std::set<const void*> pieces;
    for (const auto& piece : s->pieces()) pieces.insert(piece.unsafeGetTensorImpl());
    for (const auto& group : optimizer.param_groups()) {
      for (const auto& param : group.params()) {
        if (pieces.count(param.unsafeGetTensorImpl())) return true;
      }
    }
  }
  return false;
}

std::set<const void*> ShardedModels::pieces() const {
  std::set<const void*> pieces;
  for (const auto& model : models_) {
    for (const auto& piece : model->pieces()) pieces.insert(piece.unsafeGetTensorImpl());
  }
  return pieces;
}

std::vector<torch::Tensor> ShardedModels::grad_targets(const std::vector<torch::Tensor>& parameters,
                                                       bool* replicated_only) const {
  const std::set<const void*> all_pieces = pieces();
  std::set<const void*> seen;
  std::vector<torch::Tensor> out;
  bool any_shard = false;
  for (const auto& p : parameters) {
    torch::Tensor target;
    for (const auto& model : models_) {
      if ((target = model->piece_of(p)).defined()) break;
    }
    if (!target.defined()) target = p;
    const bool shard = all_pieces.count(target.unsafeGetTensorImpl()) != 0;
    any_shard |= shard;
    if (seen.insert(target.unsafeGetTensorImpl()).second) out.push_back(target);
  }
  if (replicated_only) *replicated_only = !any_shard;
  return out;
}

}  // namespace detail
}  // namespace accelerate
