// Version-portable autocast state and the RAII guard (see accelerate/autocast.h).
#include <accelerate/precision/autocast.h>

#include <accelerate/core/detail/torch_compat.h>
#include <accelerate/core/error.h>

#include <ATen/autocast_mode.h>

#include <stdexcept>
#include <string>

namespace accelerate {
namespace autocast {
namespace {

[[noreturn]] void unsupported_device(c10::DeviceType type) {
  throw Error(ErrorCode::Unsupported, "accelerate: autocast is supported on CPU and CUDA devices, not '" +
                                          c10::DeviceTypeName(type, /*lower_case=*/true) +
                                          "'; run with mixed_precision 'no' on this device");
}

void require_cpu_or_cuda(c10::DeviceType type) {
  if (type != c10::DeviceType::CPU && type != c10::DeviceType::CUDA) unsupported_device(type);
}

}  // namespace

// Restoring a saved state must not throw (guards restore in destructors).
void set_dtype_unchecked(c10::DeviceType type, at::ScalarType dtype);

bool is_enabled(c10::DeviceType type) {
  require_cpu_or_cuda(type);
  return detail::compat::autocast_enabled(type);
}

void set_enabled(c10::DeviceType type, bool enabled) {
  require_cpu_or_cuda(type);
  detail::compat::set_autocast_enabled(type, enabled);
}

at::ScalarType get_dtype(c10::DeviceType type) {
  require_cpu_or_cuda(type);
  return detail::compat::autocast_dtype(type);
}

void set_dtype(c10::DeviceType type, at::ScalarType dtype) {
  check_supported(type, dtype);
  set_dtype_unchecked(type, dtype);
}

void set_dtype_unchecked(c10::DeviceType type, at::ScalarType dtype) {
  detail::compat::set_autocast_dtype(type, dtype);
}

void check_supported(c10::DeviceType type, at::ScalarType dtype) {
  require_cpu_or_cuda(type);
  const bool bf16 = dtype == at::kBFloat16;
  const bool fp16 = dtype == at::kHalf;
  if (type == c10::DeviceType::CUDA) {
    if (bf16 || fp16) return;
    throw Error(ErrorCode::Unsupported,
                std::string("accelerate: CUDA autocast supports float16 and bfloat16, not ") + c10::toString(dtype));
  }
  if (bf16 || (fp16 && detail::compat::cpu_autocast_supports_fp16())) return;
  if (fp16) {
    throw Error(ErrorCode::Unsupported, std::string("accelerate: CPU autocast in LibTorch ") +
                                            detail::compat::torch_version() +
                                            " supports only bfloat16; float16 (fp16) needs a CUDA device or "
                                            "LibTorch 2.4 or later. Use bf16 on CPU.");
  }
  throw Error(ErrorCode::Unsupported,
              std::string("accelerate: CPU autocast supports bfloat16, not ") + c10::toString(dtype));
}

}  // namespace autocast

AutocastState AutocastState::current() {
  AutocastState s;
  s.cpu_enabled = autocast::is_enabled(c10::DeviceType::CPU);
  s.cpu_dtype = autocast::get_dtype(c10::DeviceType::CPU);
  s.cuda_enabled = autocast::is_enabled(c10::DeviceType::CUDA);
  s.cuda_dtype = autocast::get_dtype(c10::DeviceType::CUDA);
  s.cache_enabled = at::autocast::is_autocast_cache_enabled();
  return s;
}

void AutocastState::apply() const {
  // Dtypes first: ATen reads them only while the flag is on, but a state restored by a
  // guard must come back exactly, including the dtype of a disabled device type.
  autocast::set_dtype_unchecked(c10::DeviceType::CPU, cpu_dtype);
  autocast::set_dtype_unchecked(c10::DeviceType::CUDA, cuda_dtype);
  autocast::set_enabled(c10::DeviceType::CPU, cpu_enabled);
  autocast::set_enabled(c10::DeviceType::CUDA, cuda_enabled);
  at::autocast::set_autocast_cache_enabled(cache_enabled);
}

bool AutocastState::enabled_for(c10::DeviceType type) const {
  if (type == c10::DeviceType::CPU) return cpu_enabled;
  if (type == c10::DeviceType::CUDA) return cuda_enabled;
  return false;
}

AutocastGuard::AutocastGuard(c10::DeviceType device_type, at::ScalarType dtype) {
  autocast::check_supported(device_type, dtype);
  AutocastState next = AutocastState::current();
  if (device_type == c10::DeviceType::CPU) {
    next.cpu_enabled = true;
    next.cpu_dtype = dtype;
  } else {
    next.cuda_enabled = true;
    next.cuda_dtype = dtype;
  }
  enter(next);
}

AutocastGuard::AutocastGuard(bool enabled) {
  AutocastState next = AutocastState::current();
  if (!enabled) {
    next.cpu_enabled = false;
    next.cuda_enabled = false;
  }
  enter(next);
}

AutocastGuard::AutocastGuard(const AutocastState& state) { enter(state); }

void AutocastGuard::enter(const AutocastState& state) {
  previous_ = AutocastState::current();
  state.apply();
  // As torch.autocast does: the weight cache lives until the outermost region ends.
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastGuard::AutocastGuard(AutocastGuard&& other) noexcept : previous_(other.previous_), active_(other.active_) {
  other.active_ = false;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  previous_.apply();
}

}  // namespace accelerate
