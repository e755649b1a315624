// A model prepared under SHARD_GRAD_OP or FULL_SHARD (see sharded_model.h).
#include "fsdp/sharded_model.h"

#include <accelerate/error.h>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <iostream>

namespace accelerate {
namespace detail {
namespace {

// Runs before a parameter's AccumulateGrad node adds the incoming gradient.
class BeforeAccumulate : public torch::autograd::FunctionPreHook {
 public:
  explicit BeforeAccumulate(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    fn_();
    return grads;
  }

 private:
  std::function<void()> fn_;
};

// Runs after it has written .grad().
class AfterAccumulate : public torch::autograd::FunctionPostHook {
 public:
  explicit AfterAccumulate(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    fn_();
    return outputs;
  }

 private:
  std::function<void()> fn_;
};

}  // namespace

ShardedModel::ShardedModel(const ProcessState& ps, torch::nn::Module& module, const FsdpSettings& settings,
                           c10::ScalarType compute_dtype, std::vector<torch::Tensor> buffers,
                           std::function<bool()> communicate)
    : ps_(ps),
      module_(module),
      settings_(settings),
      buffers_(std::move(buffers)),
      communicate_(std::move(communicate)),
      alive_(std::make_shared<bool>(true)) {
  FlatParamConfig config;
  config.reshard = settings.sharding_strategy == ShardingStrategy::FULL_SHARD;
  config.compute_dtype = compute_dtype;
  config.device = ps.device;
  config.shard_device = settings.offload_params ? torch::Device(torch::kCPU) : ps.device;
  // Owned by this model and its units, never a static: it is emptied with them, before exit
  // and so before LibTorch's allocators go away (a CUDA block freed after the caching
  // allocator's teardown crashes), and two prepared models do not hold each other's buffers.
  if (config.reshard) config.pool = std::make_shared<UnitBufferPool>();
  config.grad_pool = std::make_shared<UnitBufferPool>();
  grad_pool_ = config.grad_pool;
  size_t largest = 0;
  for (auto& spec : plan_units(module, settings)) {
    const size_t u = units_.size();
    for (size_t i = 0; i < spec.params.size(); ++i) where_[spec.params[i].unsafeGetTensorImpl()] = {u, i};
    units_.push_back(std::make_shared<FlatParam>(ps, std::move(spec), config));
    largest = std::max(largest, static_cast<size_t>(units_.back()->full_bytes()));
  }
  if (ps.rank() == 0) {
    const std::string note = single_unit_note(module, settings, units_.size());
    if (!note.empty()) std::cerr << note + "\n";
  }
  // Set after the units exist: their constructors free their initial buffers for good. One
  // unit's worth: FULL_SHARD gathers one unit at a time (on_access) and prefetches none.
  if (config.pool) config.pool->set_limit(largest);
  // One gradient buffer: a unit's is reduced before the next unit's backward needs one.
  config.grad_pool->set_limit(largest);
  reduced_.assign(units_.size(), 0);
  for (const auto& unit : units_) param_access::add(unit, this);
  install_hooks();
}

ShardedModel::~ShardedModel() {
  *alive_ = false;
  for (const auto& unit : units_) param_access::remove(unit.get());
  for (size_t k = 0; k < accumulators_.size(); ++k) {
    auto& node = *accumulators_[k];
    node.del_post_hook(post_keys_[k]);
    auto& pre = node.pre_hooks();
    pre.erase(std::remove_if(pre.begin(), pre.end(), [&](const auto& h) { return h.get() == pre_hooks_[k]; }),
              pre.end());
  }
}

void ShardedModel::install_hooks() {
  for (size_t u = 0; u < units_.size(); ++u) {
    for (size_t i = 0; i < units_[u]->params().size(); ++i) {
      // After set_data (the unit's constructor): a dtype change resets the accumulator.
      auto acc = torch::autograd::impl::grad_accumulator(units_[u]->params()[i]);
      if (!acc) {
        throw Error(ErrorCode::Unsupported, "accelerate: parameter '" + units_[u]->param_names()[i] +
                                                "' has no gradient accumulator (not a leaf tensor?)");
      }
      auto pre = std::make_unique<BeforeAccumulate>([this, u, i] { before_grad(u, i); });
      pre_hooks_.push_back(pre.get());
      acc->add_pre_hook(std::move(pre));
      post_keys_.push_back(acc->add_post_hook(std::make_unique<AfterAccumulate>([this, u, i] { after_grad(u, i); })));
      accumulators_.push_back(std::move(acc));
    }
  }
}

void ShardedModel::begin_pass() {
  in_flight_ = true;
  sync_ = communicate_();
  ++stats_.passes;
  std::fill(reduced_.begin(), reduced_.end(), 0);
  // Runs when this backward pass has finished.
  std::weak_ptr<bool> alive = alive_;
  torch::autograd::Engine::get_default_engine().queue_callback([this, alive] {
    if (auto a = alive.lock(); a && *a) finalize();
  });
}

void ShardedModel::before_grad(size_t u, size_t i) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!in_flight_) begin_pass();
  units_[u]->before_grad(i, sync_);
}

void ShardedModel::after_grad(size_t u, size_t i) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (units_[u]->after_grad(i, sync_) && !reduced_[u]) reduce(u);
}

void ShardedModel::reduce(size_t u) {
  reduced_[u] = 1;
  // Its backward formulas have run: the full parameters are not needed any more (a later
  // reader gathers them again). Freed first, so that they and the reduction's buffers are
  // never in memory together.
  units_[u]->release();
  if (sync_) {
    units_[u]->reduce_grads();
    ++stats_.reductions;
  }
}

void ShardedModel::finalize() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!in_flight_) return;
  in_flight_ = false;
  // In unit order on every process. A unit that no process used in this pass has no
  // gradients anywhere and is skipped everywhere.
  for (size_t u = 0; u < units_.size(); ++u) {
    units_[u]->release();
    if (!reduced_[u] && sync_ && units_[u]->pending()) {
      units_[u]->reduce_grads();
      ++stats_.reductions;
    }
    reduced_[u] = 1;
    units_[u]->end_pass();
  }
  // Not held beyond backward: between passes (forward, the optimizer step, a state dict) it
  // would add a unit's bytes to what FULL_SHARD holds.
  grad_pool_->clear();
  if (sync_ && !buffers_.empty())
    broadcast_tensors(ps_, buffers_, 0, "broadcast of the model's buffers from process 0");
}

void ShardedModel::gather_all() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  for (auto& unit : units_) {
    unit->gather();
    ++stats_.gathers;
  }
}

void ShardedModel::on_access(const std::vector<FlatParam*>& gather, const std::vector<FlatParam*>& in_use) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (settings_.sharding_strategy == ShardingStrategy::FULL_SHARD) {
    // One unit at a time (plus what this operator reads): the memory FULL_SHARD promises.
    for (auto& unit : units_) {
      if (std::find(in_use.begin(), in_use.end(), unit.get()) == in_use.end()) unit->release();
    }
  }
  for (FlatParam* unit : gather) {
    unit->gather();
    ++stats_.gathers;
  }
}

namespace {

// State an optimizer makes in its constructor (Adagrad's accumulator), cut to the piece. State
// made by a step cannot be moved: the optimizer must be prepared before it steps.
std::unique_ptr<torch::optim::OptimizerParamState> initial_state_of_piece(torch::optim::OptimizerParamState& state,
                                                                          int64_t start, int64_t numel) {
  if (auto* adagrad = dynamic_cast<torch::optim::AdagradParamState*>(&state); adagrad && adagrad->step() == 0) {
    auto piece = std::make_unique<torch::optim::AdagradParamState>(*adagrad);
    piece->sum(adagrad->sum().reshape({-1}).narrow(0, start, numel).clone());
    return piece;
  }
  throw Error(ErrorCode::InvalidState,
              "accelerate: the optimizer already holds state (it has stepped) for parameters of a model "
              "prepared with FSDP sharding: prepare the model and the optimizer before the first step, and load "
              "optimizer state with accelerator.load_state");
}

}  // namespace

size_t ShardedModel::shard_optimizer(torch::optim::Optimizer& optimizer) const {
  size_t replaced = 0;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      auto it = where_.find(p.unsafeGetTensorImpl());
      if (it == where_.end()) continue;
      const auto& unit = *units_[it->second.first];
      const size_t i = it->second.second;
      const torch::Tensor& piece = unit.pieces()[i];
      compat::move_optimizer_state(optimizer, p, piece, [&](torch::optim::OptimizerParamState& state) {
        return initial_state_of_piece(state, unit.piece_start(i), piece.numel());
      });
      p = piece;
      ++replaced;
    }
  }
  return replaced;
}

torch::Tensor ShardedModel::piece_of(const torch::Tensor& param) const {
  auto it = where_.find(param.unsafeGetTensorImpl());
  if (it == where_.end()) return {};
  return units_[it->second.first]->pieces()[it->second.second];
}

std::vector<torch::Tensor> ShardedModel::pieces() const {
  std::vector<torch::Tensor> all;
  for (const auto& unit : units_) all.insert(all.end(), unit->pieces().begin(), unit->pieces().end());
  return all;
}

}  // namespace detail
}  // namespace accelerate
