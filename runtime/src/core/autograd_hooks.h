#pragma once
// Callbacks on a parameter's gradient accumulator (its AccumulateGrad node): before it adds an
// incoming gradient, and after it has written .grad(). The data-parallel gradient
// synchronisation (comm/grad_sync.cpp) and FSDP's sharded model (fsdp/sharded_model.cpp) both
// hook there: one definition of each hook (issue 49 item 5).
#include <torch/csrc/autograd/function_hook.h>

#include <functional>
#include <utility>

namespace accelerate {
namespace detail {

class BeforeGradHook : public torch::autograd::FunctionPreHook {
 public:
  explicit BeforeGradHook(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    fn_();
    return grads;
  }

 private:
  std::function<void()> fn_;
};

class AfterGradHook : public torch::autograd::FunctionPostHook {
 public:
  explicit AfterGradHook(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    fn_();
    return outputs;
  }

 private:
  std::function<void()> fn_;
};

}  // namespace detail
}  // namespace accelerate
