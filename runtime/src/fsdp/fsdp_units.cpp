// The auto-wrap policy (see fsdp_units.h).
#include "fsdp/fsdp_units.h"

#include <algorithm>
#include <set>
#include <utility>

namespace accelerate {
namespace detail {
namespace {

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

struct Planner {
  const FsdpSettings& settings;
  std::set<const void*> taken;
  std::vector<UnitSpec> units;

  bool wraps(const torch::nn::Module& module, size_t pending) const {
    switch (settings.auto_wrap_policy) {
      case AutoWrapPolicy::NO_WRAP:
        return false;
      case AutoWrapPolicy::SIZE_BASED_WRAP:
        return settings.min_num_params > 0 && static_cast<int64_t>(pending) >= settings.min_num_params;
      case AutoWrapPolicy::TRANSFORMER_BASED_WRAP:
        for (const auto& wanted : settings.transformer_layer_cls_to_wrap) {
          if (class_name_matches(module.name(), wanted)) return true;
        }
        return false;
    }
    return false;
  }

  static size_t count(const Named& named) {
    size_t n = 0;
    for (const auto& [_, p] : named) n += static_cast<size_t>(p.numel());
    return n;
  }

  void emit(const std::string& name, Named named) {
    if (named.empty()) return;
    UnitSpec unit;
    unit.name = name;
    for (auto& [n, p] : named) {
      unit.param_names.push_back(n);
      unit.params.push_back(p);
    }
    units.push_back(std::move(unit));
  }

  // The parameters of `module`'s subtree that no wrapped descendant took.
  Named visit(torch::nn::Module& module, const std::string& prefix, bool root) {
    Named pending;
    for (auto& item : module.named_parameters(/*recurse=*/false)) {
      const torch::Tensor& p = item.value();
      if (!p.requires_grad() || !taken.insert(p.unsafeGetTensorImpl()).second) continue;
      pending.emplace_back(prefix + item.key(), p);
    }
    for (auto& child : module.named_children()) {
      Named sub = visit(*child.value(), prefix + child.key() + ".", false);
      pending.insert(pending.end(), sub.begin(), sub.end());
    }
    if (!root && wraps(module, count(pending))) {
      const std::string path = prefix.empty() ? prefix : prefix.substr(0, prefix.size() - 1);
      emit(path, std::move(pending));
      return {};
    }
    return pending;
  }
};

std::string strip_namespaces(const std::string& name) {
  const auto colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

}  // namespace

bool class_name_matches(const std::string& module_name, const std::string& wanted) {
  if (module_name == wanted) return true;
  const std::string bare = strip_namespaces(module_name);
  if (bare == wanted) return true;
  const std::string impl = "Impl";
  return bare.size() > impl.size() && bare.compare(bare.size() - impl.size(), impl.size(), impl) == 0 &&
         bare.substr(0, bare.size() - impl.size()) == wanted;
}

std::string single_unit_note(torch::nn::Module& model, const FsdpSettings& settings, size_t units) {
  if (settings.sharding_strategy != ShardingStrategy::FULL_SHARD || units != 1) return "";
  // The modules holding trainable parameters of their own: what a unit per layer would be.
  // SIZE_BASED_WRAP with the smallest of them as its threshold wraps each one alone.
  int64_t total = 0, largest = 0, smallest = 0, layers = 0;
  for (const auto& module : model.modules(/*include_self=*/true)) {
    int64_t own = 0;
    for (const auto& p : module->parameters(/*recurse=*/false)) {
      if (p.requires_grad()) own += p.numel();
    }
    if (own == 0) continue;
    total += own;
    largest = std::max(largest, own);
    smallest = layers == 0 ? own : std::min(smallest, own);
    ++layers;
  }
  if (layers < 2) return "";
  return "FULL_SHARD with the whole model as one unit (no wrap policy): each process gathers all " +
         std::to_string(total) + " parameters of its " + std::to_string(layers) +
         " layers, and their gradients, at once, so sharding saves only the optimizer state and the resting "
         "weights; a unit per layer would gather at most " +
         std::to_string(largest) + " (--fsdp_auto_wrap_policy SIZE_BASED_WRAP --fsdp_min_num_params " +
         std::to_string(smallest) + ", or TRANSFORMER_BASED_WRAP; docs/fsdp.md)";
}

std::vector<UnitSpec> plan_units(torch::nn::Module& model, const FsdpSettings& settings) {
  Planner planner{settings, {}, {}};
  Named rest = planner.visit(model, "", true);
  planner.emit("", std::move(rest));
  return std::move(planner.units);
}

}  // namespace detail
}  // namespace accelerate
