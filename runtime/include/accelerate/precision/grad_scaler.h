#pragma once
// Dynamic loss scaling for fp16 training, with the defaults and the update rule of
// PyTorch's GradScaler (and so of Hugging Face Accelerate): the loss is multiplied by a
// scale before backward; gradients are divided by it again and checked for inf/nan; a
// step whose gradients overflowed is skipped and the scale backs off, and after
// growth_interval clean steps in a row the scale grows.
//
// The fused ATen kernels (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_)
// are used for a device when LibTorch has a kernel for it (LibTorch 1.13: CUDA only);
// elsewhere a portable implementation (isfinite + mul_) gives the same results.

#include <accelerate/core/error.h>

#include <torch/arg.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <cstdint>
#include <unordered_set>
#include <vector>

namespace accelerate {

// Which implementation unscales gradients and updates the scale.
enum class AmpKernels {
  Auto,      // fused where LibTorch has a kernel for the tensors' device, else portable
  Fused,     // fused only (an error on a device without the kernels)
  Portable,  // portable only (what CPU tests use to pin the path they exercise)
};

struct GradScalerOptions {
  TORCH_ARG(double, init_scale) = 65536.0;
  TORCH_ARG(double, growth_factor) = 2.0;
  TORCH_ARG(double, backoff_factor) = 0.5;
  TORCH_ARG(int64_t, growth_interval) = 2000;
  TORCH_ARG(AmpKernels, kernels) = AmpKernels::Auto;
};

// What a checkpoint keeps (the keys of PyTorch's GradScaler.state_dict()).
struct GradScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  // clean steps since the last growth or backoff
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = GradScalerOptions());

  // loss * scale, computed in fp32 when the loss is fp16/bf16 (the scaled value of an fp16
  // loss would overflow at 65504). The scale moves to the loss's device on first use.
  torch::Tensor scale(const torch::Tensor& loss);

  // Divides the gradients of `params` (those that have one) by the scale, in place, and
  // records whether any was inf/nan. Returns true when this call found one.
  bool unscale_(const std::vector<torch::Tensor>& params);
  // Unscales the optimizer's parameters unless already done since the last update().
  bool unscale_(torch::optim::Optimizer& optimizer);
  // Multiplies the gradients by the scale, in place: the inverse of unscale_, so that a
  // further scaled backward can accumulate onto gradients that were unscaled.
  void rescale_(const std::vector<torch::Tensor>& params);

  // optimizer.step() unless an inf/nan was found since the last update() (unscales the
  // optimizer first if it has not been). Returns whether the step ran.
  bool step(torch::optim::Optimizer& optimizer);
  // Backs off (found inf/nan) or counts towards growth; clears the found flag.
  void update();

  // Whether an inf/nan was found by unscale_ since the last update().
  bool found_inf() const;
  double get_scale() const;
  int64_t growth_tracker() const;
  const GradScalerOptions& options() const { return options_; }
  // Whether the fused kernels serve tensors on `device` under the current options.
  bool uses_fused_kernels(const torch::Device& device) const;

  GradScalerState state_dict() const;
  void load_state_dict(const GradScalerState& state);
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  torch::Tensor inv_scale_on(const torch::Device& device) const;

  GradScalerOptions options_;
  torch::Tensor scale_;           // float32 [1]
  torch::Tensor growth_tracker_;  // int32 [1], same device as scale_
  torch::Tensor found_inf_;       // float32 [1], same device; > 0 once an inf/nan was seen
  std::unordered_set<const void*> unscaled_optimizers_;
};

}  // namespace accelerate
