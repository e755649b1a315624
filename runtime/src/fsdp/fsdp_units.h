#pragma once
// The auto-wrap policy: which submodules' parameters form one FSDP unit.
#include <accelerate/core/fsdp_options.h>

#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace accelerate {
namespace detail {

struct UnitSpec {
  std::string name;                      // module path ("" for the model itself)
  std::vector<std::string> param_names;  // as in the model's named_parameters()
  std::vector<torch::Tensor> params;
};

// Every trainable parameter lands in exactly one unit (a parameter registered in several
// modules goes with the first that reaches it, in registration order). Children are
// wrapped before their parents, as PyTorch's recursive wrapping does; what no wrapped
// submodule took belongs to the model's own unit, last. Frozen parameters (requires_grad
// false) stay replicated and belong to no unit.
//   NO_WRAP                  one unit
//   SIZE_BASED_WRAP          a submodule whose not-yet-wrapped parameters number at least
//                            min_num_params (0: no submodule is wrapped)
//   TRANSFORMER_BASED_WRAP   a submodule whose class is one of transformer_layer_cls_to_wrap
//                            (matched by Module::name() without namespaces, with or without
//                            its "Impl" suffix: "Block" matches BlockImpl)
std::vector<UnitSpec> plan_units(torch::nn::Module& model, const FsdpSettings& settings);

// One line for the user when FULL_SHARD keeps the whole model as one unit although it has
// several layers (issue 33: a 67M-parameter MLP peaked at 0.79 of NO_SHARD's memory that
// way, 0.56 with a unit per layer): what is gathered at once, and the largest a unit per
// layer would gather. Empty when there is nothing to say (another strategy, several units,
// or fewer than two modules holding trainable parameters).
std::string single_unit_note(torch::nn::Module& model, const FsdpSettings& settings, size_t units);

// "torch::nn::LinearImpl" matches "torch::nn::LinearImpl", "LinearImpl" and "Linear".
bool class_name_matches(const std::string& module_name, const std::string& wanted);

}  // namespace detail
}  // namespace accelerate
