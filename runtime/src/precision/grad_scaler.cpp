// Dynamic loss scaling (see accelerate/grad_scaler.h).
#include <accelerate/precision/grad_scaler.h>

#include <accelerate/core/error.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace accelerate {
namespace {

bool has_kernel(const char* op, const torch::Device& device) {
  c10::DispatchKey key;
  switch (device.type()) {
    case c10::DeviceType::CPU:
      key = c10::DispatchKey::CPU;
      break;
    case c10::DeviceType::CUDA:
      key = c10::DispatchKey::CUDA;
      break;
    default:
      return false;
  }
  const auto handle = c10::Dispatcher::singleton().findSchema({op, ""});
  return handle.has_value() && handle->hasKernelForDispatchKey(key);
}

bool fused_available(const torch::Device& device) {
  return has_kernel("aten::_amp_foreach_non_finite_check_and_unscale_", device) &&
         has_kernel("aten::_amp_update_scale_", device);
}

void check_options(const GradScalerOptions& o) {
  if (!(o.init_scale() > 0) || !std::isfinite(o.init_scale()))
    throw Error(ErrorCode::Config,
                "accelerate::GradScaler: init_scale must be a positive finite number (default 65536)");
  if (!(o.growth_factor() > 1.0))
    throw Error(ErrorCode::Config, "accelerate::GradScaler: growth_factor must be > 1 (default 2)");
  if (!(o.backoff_factor() > 0.0 && o.backoff_factor() < 1.0))
    throw Error(ErrorCode::Config, "accelerate::GradScaler: backoff_factor must be in (0, 1) (default 0.5)");
  if (o.growth_interval() <= 0)
    throw Error(ErrorCode::Config, "accelerate::GradScaler: growth_interval must be > 0 (default 2000)");
}

// Gradients to unscale, grouped by (device, dtype) as the fused kernel requires.
struct GradGroup {
  torch::Device device;
  torch::ScalarType dtype;
  std::vector<torch::Tensor> grads;
};

std::vector<GradGroup> group_grads(const std::vector<torch::Tensor>& params) {
  std::vector<GradGroup> groups;
  std::unordered_set<const void*> seen;
  for (const auto& param : params) {
    if (!param.defined() || !param.grad().defined()) continue;
    if (!seen.insert(param.unsafeGetTensorImpl()).second) continue;
    torch::Tensor p = param;  // shares the TensorImpl: mutable_grad() writes the param's grad
    torch::Tensor values = p.grad();
    if (values.is_sparse()) {
      // Duplicate indices would be unscaled once each but summed later: coalesce first.
      p.mutable_grad() = values.coalesce();
      values = p.grad()._values();
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](const GradGroup& g) {
      return g.device == values.device() && g.dtype == values.scalar_type();
    });
    if (it == groups.end()) {
      groups.push_back(GradGroup{values.device(), values.scalar_type(), {}});
      it = std::prev(groups.end());
    }
    it->grads.push_back(values);
  }
  return groups;
}

std::vector<torch::Tensor> optimizer_params(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params()) params.push_back(p);
  return params;
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(std::move(options)) {
  check_options(options_);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  scale_ = torch::full({1}, options_.init_scale(), f32);
  growth_tracker_ = torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, f32);
}

bool GradScaler::uses_fused_kernels(const torch::Device& device) const {
  switch (options_.kernels()) {
    case AmpKernels::Portable:
      return false;
    case AmpKernels::Auto:
      return fused_available(device);
    case AmpKernels::Fused:
      if (!fused_available(device)) {
        throw Error(ErrorCode::Unsupported,
                    "accelerate::GradScaler: AmpKernels::Fused was requested, but this LibTorch has no fused AMP "
                    "kernels for device '" +
                        device.str() + "' (use AmpKernels::Auto or Portable)");
      }
      return true;
  }
  return false;
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) {
  if (!loss.defined()) throw Error(ErrorCode::InvalidArgument, "accelerate::GradScaler::scale: the loss is undefined");
  if (scale_.device() != loss.device()) {
    scale_ = scale_.to(loss.device());
    growth_tracker_ = growth_tracker_.to(loss.device());
    found_inf_ = found_inf_.to(loss.device());
  }
  const bool low_precision = loss.scalar_type() == torch::kHalf || loss.scalar_type() == torch::kBFloat16;
  const torch::Tensor l = low_precision ? loss.to(torch::kFloat32) : loss;
  // 0-dim so that the result keeps the loss's shape (a [1] factor would make a scalar [1]).
  return l * scale_.squeeze(0).to(l.scalar_type());
}

torch::Tensor GradScaler::inv_scale_on(const torch::Device& device) const {
  // Reciprocal in double, as PyTorch does, so that 1/scale is exact for powers of two.
  return scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32).squeeze(0).to(device);
}

bool GradScaler::unscale_(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  bool found_here = false;
  for (auto& group : group_grads(params)) {
    const torch::Tensor inv_scale = inv_scale_on(group.device);
    torch::Tensor found = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(group.device));
    if (uses_fused_kernels(group.device)) {
      at::_amp_foreach_non_finite_check_and_unscale_(group.grads, found, inv_scale);
    } else {
      torch::Tensor any_bad = torch::zeros({}, torch::TensorOptions().dtype(torch::kBool).device(group.device));
      for (auto& g : group.grads) {
        any_bad.logical_or_(torch::isfinite(g).logical_not().any());
        g.mul_(inv_scale);
      }
      found.add_(any_bad.to(torch::kFloat32));
    }
    found_inf_.add_(found.to(found_inf_.device()));
    found_here = found_here || found.item<float>() > 0;
  }
  return found_here;
}

bool GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!unscaled_optimizers_.insert(&optimizer).second) return false;
  return unscale_(optimizer_params(optimizer));
}

void GradScaler::rescale_(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (auto& group : group_grads(params)) {
    const torch::Tensor s = scale_.squeeze(0).to(group.device);
    for (auto& g : group.grads) g.mul_(s);
  }
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  unscale_(optimizer);
  if (found_inf()) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  torch::NoGradGuard no_grad;
  const torch::Device device = scale_.device();
  if (uses_fused_kernels(device)) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor(), options_.backoff_factor(),
                           options_.growth_interval());
  } else {
    // The fused kernel's rule, on the host: the scale is float32 and never grows to inf.
    float scale = scale_.item<float>();
    int64_t tracker = growth_tracker_.item<int32_t>();
    if (found_inf_.item<float>() > 0) {
      scale = static_cast<float>(scale * options_.backoff_factor());
      tracker = 0;
    } else if (++tracker == options_.growth_interval()) {
      const float grown = static_cast<float>(scale * options_.growth_factor());
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    }
    scale_.fill_(scale);
    growth_tracker_.fill_(tracker);
  }
  found_inf_.zero_();
  unscaled_optimizers_.clear();
}

bool GradScaler::found_inf() const { return found_inf_.item<float>() > 0; }
double GradScaler::get_scale() const { return scale_.item<float>(); }
int64_t GradScaler::growth_tracker() const { return growth_tracker_.item<int32_t>(); }

GradScalerState GradScaler::state_dict() const {
  GradScalerState s;
  s.scale = get_scale();
  s.growth_tracker = growth_tracker();
  s.growth_factor = options_.growth_factor();
  s.backoff_factor = options_.backoff_factor();
  s.growth_interval = options_.growth_interval();
  return s;
}

void GradScaler::load_state_dict(const GradScalerState& s) {
  GradScalerOptions next = options_;
  next.init_scale(s.scale)
      .growth_factor(s.growth_factor)
      .backoff_factor(s.backoff_factor)
      .growth_interval(s.growth_interval);
  check_options(next);
  if (s.growth_tracker < 0 || s.growth_tracker >= s.growth_interval)
    throw Error(ErrorCode::Checkpoint, "accelerate::GradScaler::load_state_dict: growth_tracker " +
                                           std::to_string(s.growth_tracker) +
                                           " is outside [0, growth_interval): the state was not saved by "
                                           "GradScaler::state_dict() or is damaged");
  options_ = next;
  scale_.fill_(s.scale);
  growth_tracker_.fill_(s.growth_tracker);
  found_inf_.zero_();
  unscaled_optimizers_.clear();
}

void GradScaler::save(torch::serialize::OutputArchive& archive) const {
  const GradScalerState s = state_dict();
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  archive.write("scale", torch::tensor({s.scale}, f64));
  archive.write("_growth_tracker", torch::tensor({s.growth_tracker}, torch::kInt64));
  archive.write("growth_factor", torch::tensor({s.growth_factor}, f64));
  archive.write("backoff_factor", torch::tensor({s.backoff_factor}, f64));
  archive.write("growth_interval", torch::tensor({s.growth_interval}, torch::kInt64));
}

void GradScaler::load(torch::serialize::InputArchive& archive) {
  auto read = [&](const char* key) {
    torch::Tensor t;
    archive.read(key, t);
    return t;
  };
  GradScalerState s;
  s.scale = read("scale").item<double>();
  s.growth_tracker = read("_growth_tracker").item<int64_t>();
  s.growth_factor = read("growth_factor").item<double>();
  s.backoff_factor = read("backoff_factor").item<double>();
  s.growth_interval = read("growth_interval").item<int64_t>();
  load_state_dict(s);
}

}  // namespace accelerate
