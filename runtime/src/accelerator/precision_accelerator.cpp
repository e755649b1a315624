// The Accelerator's mixed-precision API (autocast regions, skipped fp16 steps, the scaler),
// over the MixedPrecision component it owns (see accelerate/precision.h).
#include <accelerate/accelerator/accelerator.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/precision/precision.h>

namespace accelerate {

AutocastGuard Accelerator::autocast(bool enabled) const { return precision_state().autocast(enabled); }

bool Accelerator::optimizer_step_was_skipped() const { return precision_state().optimizer_step_was_skipped(); }

GradScaler* Accelerator::scaler() { return precision().scaler(); }

bool Accelerator::step_optimizer(torch::optim::Optimizer& optimizer) {
  // As the reference's AcceleratedOptimizer.step(): nothing on accumulation steps or after
  // an fp16 overflow (whose gradients backward() already reset to undefined).
  if (!sync_gradients() || optimizer_step_was_skipped()) return false;
  AutocastGuard fp32(false);
  // DeepSpeed's gradient_clipping (mapped by the launcher): its engine clips every
  // parameter's gradient norm at the step, whether or not the program clips.
  if (const double max_norm = options().gradient_clipping().value_or(0.0); max_norm > 0) {
    std::vector<torch::Tensor> params;
    for (const auto& group : optimizer.param_groups()) {
      params.insert(params.end(), group.params().begin(), group.params().end());
    }
    clip_grad_norm_(params, max_norm);
  }
  optimizer.step();
  detail::AcceleratorAccess::count_optimizer_step(*this, optimizer);  // work report, step trace
  return true;
}

}  // namespace accelerate
