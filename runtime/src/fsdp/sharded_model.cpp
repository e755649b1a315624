// A model prepared under SHARD_GRAD_OP or FULL_SHARD (see sharded_model.h).
#include "fsdp/sharded_model.h"

#include "core/autograd_hooks.h"

#include <accelerate/core/error.h>
#include <accelerate/log/logging.h>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>

namespace accelerate {
namespace detail {
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
  if (const std::string note = single_unit_note(module, settings, units_.size()); !note.empty()) {
    detail::runtime_log().info(note);
  }
  // Set after the units exist: their constructors free their initial buffers for good. One
  // unit's worth: FULL_SHARD gathers one unit at a time (on_access); two with prefetch (the
  // unit in use and the next).
  if (config.pool) config.pool->set_limit(prefetching() ? 2 * largest : largest);
  if (!config.reshard && (settings.forward_prefetch || settings.backward_prefetch != BackwardPrefetch::NO_PREFETCH)) {
    detail::runtime_log().warning("FSDP prefetch has no effect under " +
                                  std::string(to_string(settings.sharding_strategy)) +
                                  ": the parameters stay gathered between uses (it applies to FULL_SHARD)");
  }
  // One gradient buffer: a unit's is reduced before the next unit's backward needs one; two
  // when that reduction runs beside the next unit's backward.
  config.grad_pool->set_limit(overlap_reductions() ? 2 * largest : largest);
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
      auto pre = std::make_unique<BeforeGradHook>([this, u, i] { before_grad(u, i); });
      pre_hooks_.push_back(pre.get());
      acc->add_pre_hook(std::move(pre));
      post_keys_.push_back(acc->add_post_hook(std::make_unique<AfterGradHook>([this, u, i] { after_grad(u, i); })));
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
  if (prefetched_ != u) units_[u]->release();
  if (sync_) {
    // At most one reduction in flight: each holds a unit's whole gradient.
    if (reducing_) units_[*std::exchange(reducing_, std::nullopt)]->finish_reduce();
    units_[u]->reduce_grads(overlap_reductions());
    if (units_[u]->reducing()) {
      reducing_ = u;
      ++stats_.overlapped_reductions;
    }
    ++stats_.reductions;
  }
  // After the reduction: on one host both collectives share one queue, and this one is
  // waited for now.
  prefetch_next(Trigger::GradsDone);
}

void ShardedModel::finalize() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!in_flight_) return;
  in_flight_ = false;
  if (reducing_) units_[*std::exchange(reducing_, std::nullopt)]->finish_reduce();
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
  prefetched_.reset();  // released above: the optimizer step makes every unit stale anyway
  end_iteration();
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
  // A prefetched unit this operator reads is the prefetch's hit: from here on it is in use,
  // never a guess to free.
  for (FlatParam* unit : in_use) {
    if (prefetched_ == index_of(unit)) {
      prefetched_.reset();
      ++stats_.prefetch_hits;
    }
  }
  if (settings_.sharding_strategy == ShardingStrategy::FULL_SHARD) {
    // One unit at a time (plus what this operator reads, plus one prefetched): the memory
    // FULL_SHARD promises.
    for (size_t u = 0; u < units_.size(); ++u) {
      FlatParam* unit = units_[u].get();
      if (std::find(in_use.begin(), in_use.end(), unit) == in_use.end() && prefetched_ != u) unit->release();
    }
  }
  for (FlatParam* unit : gather) {
    const size_t u = index_of(unit);
    unit->gather();
    ++stats_.gathers;
    record_gather(u);
    prefetch_next(Trigger::Gathered);
  }
  int64_t gathered = 0;
  for (const auto& unit : units_) gathered += unit->present() || unit->fetching() ? 1 : 0;
  stats_.most_gathered = std::max(stats_.most_gathered, gathered);
}

size_t ShardedModel::index_of(const FlatParam* unit) const {
  for (size_t u = 0; u < units_.size(); ++u) {
    if (units_[u].get() == unit) return u;
  }
  throw Error(ErrorCode::Internal, "accelerate: FSDP unit '" + unit->name() + "' is not one of this model's");
}

// The reduce-scatter of a unit runs beside the next unit's backward when the user asked for
// overlap in backward (it costs one more unit's gradient in memory, as a prefetch costs one
// more unit's parameters).
bool ShardedModel::overlap_reductions() const {
  return settings_.sharding_strategy == ShardingStrategy::FULL_SHARD &&
         settings_.backward_prefetch != BackwardPrefetch::NO_PREFETCH;
}

bool ShardedModel::prefetching() const {
  return settings_.sharding_strategy == ShardingStrategy::FULL_SHARD &&
         (settings_.forward_prefetch || settings_.backward_prefetch != BackwardPrefetch::NO_PREFETCH);
}

void ShardedModel::record_gather(size_t u) {
  if (!prefetching()) return;
  // Bounded: forward-only loops (evaluation) never end an iteration.
  if (order_.size() >= 4 * units_.size() + 4) {
    on_track_ = false;
    return;
  }
  on_track_ = on_track_ && order_.size() < last_order_.size() && last_order_[order_.size()] == u;
  order_.push_back(u);
}

// Starts gathering the unit the last iteration gathered next, when the policy asks for it at
// this point. Every process decides alike: the same program gathers in the same order.
void ShardedModel::prefetch_next(Trigger trigger) {
  if (!prefetching() || !on_track_ || order_.size() >= last_order_.size()) return;
  const size_t next = last_order_[order_.size()];
  const bool backward = last_repeat_[order_.size()] != 0;
  const BackwardPrefetch policy = settings_.backward_prefetch;
  const bool wanted = backward ? (trigger == Trigger::Gathered && policy == BackwardPrefetch::BACKWARD_PRE) ||
                                     (trigger == Trigger::GradsDone && policy == BackwardPrefetch::BACKWARD_POST)
                               : trigger == Trigger::Gathered && settings_.forward_prefetch;
  if (!wanted || prefetched_ == next) return;
  if (prefetched_) units_[*prefetched_]->release();  // a guess that was not read: at most one is held
  prefetched_.reset();
  units_[next]->prefetch();
  if (units_[next]->fetching()) {
    prefetched_ = next;
    ++stats_.prefetches;
  }
}

void ShardedModel::end_iteration() {
  if (!prefetching()) return;
  last_order_ = std::move(order_);
  order_.clear();
  last_repeat_.assign(last_order_.size(), 0);
  std::vector<char> seen(units_.size(), 0);
  for (size_t k = 0; k < last_order_.size(); ++k) {
    last_repeat_[k] = seen[last_order_[k]];
    seen[last_order_[k]] = 1;
  }
  on_track_ = true;
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
