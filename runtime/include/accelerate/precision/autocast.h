#pragma once
// Autocast (automatic mixed precision for forward computations) over ATen's thread-local
// autocast state, with one API for LibTorch 1.13 and 2.x (whose function names differ).
//
//   { accelerate::AutocastGuard bf16(torch::kCPU, torch::kBFloat16);  y = model->forward(x); }
//   { accelerate::AutocastGuard fp32(/*enabled=*/false);  y = exact_metric(x); }
//
// Autocast state is per thread: a guard affects only the thread that creates it.

#include <accelerate/core/error.h>

#include <ATen/ATen.h>
#include <c10/core/Device.h>

namespace accelerate {

// The autocast state of the calling thread, for the device types LibTorch autocasts.
struct AutocastState {
  bool cpu_enabled = false;
  at::ScalarType cpu_dtype = at::kBFloat16;
  bool cuda_enabled = false;
  at::ScalarType cuda_dtype = at::kHalf;
  // ATen caches the low-precision copy of each fp32 leaf (weights) while autocast is on.
  bool cache_enabled = true;

  static AutocastState current();
  // Makes this the calling thread's state.
  void apply() const;
  bool enabled_for(c10::DeviceType type) const;
  bool any_enabled() const { return cpu_enabled || cuda_enabled; }
};

namespace autocast {
// Thin version-portable wrappers (LibTorch 1.13: set_cpu_enabled/set_enabled/...;
// 2.4 and later: set_autocast_enabled(device_type, ...)). Only CPU and CUDA are supported;
// other device types throw.
bool is_enabled(c10::DeviceType type);
void set_enabled(c10::DeviceType type, bool enabled);
at::ScalarType get_dtype(c10::DeviceType type);
void set_dtype(c10::DeviceType type, at::ScalarType dtype);
// Throws a clear error unless LibTorch can autocast `type` to `dtype`
// (CPU: bf16 only on LibTorch < 2.4; CUDA: fp16 and bf16).
void check_supported(c10::DeviceType type, at::ScalarType dtype);
}  // namespace autocast

// RAII: sets the calling thread's autocast state while alive and restores the previous
// state (enabled flags, dtypes, cache flag) when destroyed. Movable so that functions such
// as Accelerator::autocast() can return it; not copyable.
class AutocastGuard {
 public:
  // Autocast on for `device_type` in `dtype`; the other device types keep their state.
  AutocastGuard(c10::DeviceType device_type, at::ScalarType dtype);
  AutocastGuard(const c10::Device& device, at::ScalarType dtype) : AutocastGuard(device.type(), dtype) {}
  // enabled=false: autocast off for every device type (an fp32 region inside an autocast
  // one). enabled=true: keeps the current state (a no-op guard, so that
  // `AutocastGuard g(flag);` reads naturally).
  explicit AutocastGuard(bool enabled);
  // Exactly `state` while alive.
  explicit AutocastGuard(const AutocastState& state);

  ~AutocastGuard();
  AutocastGuard(AutocastGuard&& other) noexcept;
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  AutocastGuard& operator=(AutocastGuard&&) = delete;

 private:
  void enter(const AutocastState& state);

  AutocastState previous_;
  bool active_ = false;
};

}  // namespace accelerate
