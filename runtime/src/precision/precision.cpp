// Mixed precision component (see accelerate/precision.h and docs/mixed-precision.md).
#include <accelerate/precision/precision.h>

#include <accelerate/core/error.h>

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <utility>

namespace accelerate {

MixedPrecision::MixedPrecision(const std::string& mixed_precision, torch::Device device, MixedPrecisionOptions options)
    : MixedPrecision(parse_precision(mixed_precision), std::move(device), std::move(options)) {}

MixedPrecision::MixedPrecision(PrecisionType type, torch::Device device, MixedPrecisionOptions options)
    : type_(trainable_precision(type)), device_(std::move(device)) {
  if (type_ == PrecisionType::FP16 && device_.type() != c10::DeviceType::CUDA) {
    // The reference refuses the same way ("fp16 mixed precision requires a GPU").
    throw Error(ErrorCode::Unsupported,
                "accelerate: mixed_precision='fp16' requires a CUDA device, but the device is '" + device_.str() +
                    "': LibTorch's CPU autocast runs in bfloat16 only. Use --mixed_precision bf16 (or "
                    "'no') on CPU.");
  }
  if (type_ != PrecisionType::No) autocast::check_supported(device_.type(), autocast_dtype());
  if (type_ == PrecisionType::FP16 || options.force_loss_scaling())
    scaler_ = std::make_unique<GradScaler>(options.scaler());
}

MixedPrecision::~MixedPrecision() {
  try {
    deactivate_autocast();
  } catch (...) {
    // Destructors must not throw; restoring thread-local flags does not in practice.
  }
}

at::ScalarType MixedPrecision::autocast_dtype() const {
  switch (type_) {
    case PrecisionType::FP16:
      return at::kHalf;
    case PrecisionType::BF16:
      return at::kBFloat16;
    case PrecisionType::No:
    case PrecisionType::FP8:  // never held: parse_precision refuses it
      break;
  }
  return at::kFloat;
}

void MixedPrecision::track_parameters(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params)
    if (p.defined() && param_ids_.insert(p.unsafeGetTensorImpl()).second) params_.push_back(p);
}

void MixedPrecision::on_prepare_model(torch::nn::Module& module) {
  track_parameters(module.parameters(/*recurse=*/true));
  activate_autocast();
}

void MixedPrecision::on_prepare_optimizer(torch::optim::Optimizer& optimizer) {
  for (auto& group : optimizer.param_groups()) track_parameters(group.params());
}

void MixedPrecision::activate_autocast() {
  if (type_ == PrecisionType::No) return;
  const auto here = std::this_thread::get_id();
  if (autocast_active_ && autocast_thread_ == here) return;
  AutocastState state = AutocastState::current();
  if (!autocast_active_) {
    autocast_previous_ = state;
    autocast_thread_ = here;
    autocast_active_ = true;
  }
  if (device_.type() == c10::DeviceType::CPU) {
    state.cpu_enabled = true;
    state.cpu_dtype = autocast_dtype();
  } else {
    state.cuda_enabled = true;
    state.cuda_dtype = autocast_dtype();
  }
  // Autocast stays on across optimizer steps, so a cached low-precision weight would be
  // stale after the step updates the fp32 weight in place.
  state.cache_enabled = false;
  state.apply();
}

void MixedPrecision::deactivate_autocast() {
  if (!autocast_active_ || autocast_thread_ != std::this_thread::get_id()) return;
  autocast_previous_.apply();
  autocast_active_ = false;
}

AutocastGuard MixedPrecision::autocast(bool enabled) const {
  if (!enabled) return AutocastGuard(false);
  if (type_ == PrecisionType::No) return AutocastGuard(true);
  return AutocastGuard(device_.type(), autocast_dtype());
}

void MixedPrecision::before_backward() {
  if (!scaler_) return;
  if (params_.empty()) {
    throw Error(ErrorCode::InvalidState,
                "accelerate: fp16 loss scaling needs the model (or its optimizer) to be prepared before "
                "backward(): the gradients of its parameters are unscaled after each backward");
  }
  // Gradients left by earlier backwards hold true values; the coming backward adds scaled
  // ones, so bring the old ones to the same scale first (exact for power-of-two scales).
  scaler_->rescale_(params_);
}

torch::Tensor MixedPrecision::scale_loss(const torch::Tensor& loss) { return scaler_ ? scaler_->scale(loss) : loss; }

void MixedPrecision::finish_backward(bool sync_step) {
  if (!scaler_) {
    if (sync_step) step_skipped_ = false;
    return;
  }
  scaler_->unscale_(params_);
  if (!sync_step) return;  // the scale stays fixed until the accumulated step is decided
  step_skipped_ = scaler_->found_inf();
  if (step_skipped_) {
    // Undefined (not zero) gradients: torch::optim optimizers skip such parameters
    // entirely, so momentum, Adam moments, step counts and weight decay stay untouched,
    // exactly as if optimizer.step() had not been called. Zero gradients would not be.
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
  }
  scaler_->update();
}

void MixedPrecision::backward(const torch::Tensor& loss, const torch::Tensor& gradient,
                              c10::optional<bool> retain_graph, bool create_graph, bool sync_step) {
  AutocastGuard no_autocast(false);
  before_backward();
  if (gradient.defined()) {
    const torch::Tensor g = scale_loss(gradient).to(gradient.scalar_type());
    loss.backward(g, retain_graph, create_graph);
  } else {
    scale_loss(loss).backward({}, retain_graph, create_graph);
  }
  finish_backward(sync_step);
}

}  // namespace accelerate
