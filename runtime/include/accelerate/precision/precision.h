#pragma once
// Mixed precision for the Accelerator ("no", "fp16", "bf16"), as a self-contained
// component: the Accelerator owns one and calls it from prepare() and backward().
//
// Semantics (details and rationale in docs/mixed-precision.md):
// - Preparing a model under fp16/bf16 turns autocast on for the calling thread, so the
//   user's own `model->forward(x)` and loss run under autocast with no code change
//   (LibTorch modules have no forward hooks to wrap). It stays on for that thread, also in
//   evaluation, until the MixedPrecision object is destroyed. ATen's cast cache is turned
//   off for that thread: with autocast on for good it would keep serving the bf16/fp16
//   copy of a weight from before optimizer.step().
// - backward runs with autocast off; parameters, gradients and optimizer state stay fp32.
// - fp16 uses dynamic loss scaling (GradScaler). After every backward the gradients hold
//   their true (unscaled) values, so clipping and a plain optimizer.step() see correct
//   values. On a gradient-synchronising backward with an inf/nan gradient the step is
//   skipped: the gradients are reset to undefined, which makes every torch::optim
//   optimizer leave those parameters and their state untouched.

#include <accelerate/core/error.h>
#include <accelerate/core/precision_type.h>  // PrecisionType, parse_precision, to_string
#include <accelerate/precision/autocast.h>
#include <accelerate/precision/grad_scaler.h>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace accelerate {

struct MixedPrecisionOptions {
  TORCH_ARG(GradScalerOptions, scaler) = GradScalerOptions();
  // Use dynamic loss scaling even when the precision does not need it (no, bf16): this
  // runs the fp16 loss-scaling protocol on any device, e.g. in CPU tests.
  TORCH_ARG(bool, force_loss_scaling) = false;
};

class MixedPrecision {
 public:
  // Throws accelerate::Error (Unsupported / Config) for fp16 on a non-CUDA device and for an unknown mode.
  MixedPrecision(const std::string& mixed_precision, torch::Device device,
                 MixedPrecisionOptions options = MixedPrecisionOptions());
  // The same for a value already typed (the Accelerator's, resolved once): nothing is read
  // from text again. Throws as above, and for fp8.
  MixedPrecision(PrecisionType type, torch::Device device, MixedPrecisionOptions options = MixedPrecisionOptions());
  // Restores the autocast state of the thread that prepared a model, when destroyed on it.
  ~MixedPrecision();
  MixedPrecision(const MixedPrecision&) = delete;
  MixedPrecision& operator=(const MixedPrecision&) = delete;

  PrecisionType type() const { return type_; }
  std::string name() const { return to_string(type_); }
  bool autocast_enabled() const { return type_ != PrecisionType::No; }
  // kBFloat16, kHalf, or kFloat32 for "no".
  at::ScalarType autocast_dtype() const;
  const torch::Device& device() const { return device_; }
  bool uses_loss_scaling() const { return scaler_ != nullptr; }
  GradScaler* scaler() { return scaler_.get(); }
  const GradScaler* scaler() const { return scaler_.get(); }

  // ---- prepare ------------------------------------------------------------------------
  // Tracks the parameters (their gradients are unscaled after backward) and turns
  // autocast on for the calling thread.
  void on_prepare_model(torch::nn::Module& module);
  void on_prepare_optimizer(torch::optim::Optimizer& optimizer);
  void track_parameters(const std::vector<torch::Tensor>& params);
  const std::vector<torch::Tensor>& tracked_parameters() const { return params_; }

  // ---- autocast -----------------------------------------------------------------------
  // Turns the configured autocast on for the calling thread until destruction (or
  // deactivate_autocast()). No-op for "no".
  void activate_autocast();
  void deactivate_autocast();
  // A region with the configured autocast (enabled) or with autocast off (!enabled).
  AutocastGuard autocast(bool enabled = true) const;

  // ---- backward protocol, in this order (Accelerator::backward does it) ----------------
  //   AutocastGuard off(false);           autocast off during backward and communication
  //   before_backward();                   re-scales existing gradients (loss scaling)
  //   x = scale_loss(loss or gradient);    backward on x; gradient sync completes
  //   finish_backward(sync_step);          true gradients; skip/update at a sync step
  void before_backward();
  torch::Tensor scale_loss(const torch::Tensor& loss);
  // sync_step: the gradients are final for an optimizer step (not an accumulation step).
  void finish_backward(bool sync_step);
  // All of the above around a plain autograd backward (no gradient communication).
  void backward(const torch::Tensor& loss, const torch::Tensor& gradient = {},
                c10::optional<bool> retain_graph = c10::nullopt, bool create_graph = false, bool sync_step = true);

  // Whether the last sync step found inf/nan gradients (its optimizer step is skipped).
  bool optimizer_step_was_skipped() const { return step_skipped_; }

 private:
  PrecisionType type_;
  torch::Device device_;
  std::unique_ptr<GradScaler> scaler_;
  std::vector<torch::Tensor> params_;
  std::unordered_set<const void*> param_ids_;
  bool step_skipped_ = false;

  bool autocast_active_ = false;
  std::thread::id autocast_thread_;
  AutocastState autocast_previous_;
};

}  // namespace accelerate
