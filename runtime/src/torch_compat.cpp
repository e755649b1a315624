// LibTorch version differences (see accelerate/detail/torch_compat.h).
#include <accelerate/detail/torch_compat.h>

#include <ATen/autocast_mode.h>

#include <cstdlib>
#include <cstring>

#define ACCEL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace accelerate {
namespace detail {
namespace compat {

const char* torch_version() { return TORCH_VERSION; }

c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, c10d::TCPStoreOptions opts) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  const char* env = std::getenv("USE_LIBUV");
  if (env != nullptr && std::strcmp(env, "0") == 0) opts.useLibUV = false;
  if (opts.useLibUV && opts.isServer) {
    try {
      return c10::make_intrusive<c10d::TCPStore>(host, opts);
    } catch (const std::exception& e) {
      // Builds without libuv refuse before binding anything; any other failure is real.
      if (std::strstr(e.what(), "libuv") == nullptr) throw;
    }
  }
  // A client only connects: the server's kind does not matter to it.
  opts.useLibUV = false;
#endif
  return c10::make_intrusive<c10d::TCPStore>(host, opts);
}

c10::intrusive_ptr<c10d::Work> allgather_flat(CommGroup& group, torch::Tensor& output, torch::Tensor& input) {
#if TORCH_VERSION_MAJOR >= 2
  return group._allgather_base(output, input);
#else
  // Gloo 1.13 throws on _allgather_base: per-rank views into the flat output instead.
  std::vector<std::vector<torch::Tensor>> outputs(1);
  const int64_t n = input.numel();
  for (int64_t r = 0; r < output.numel() / n; ++r) outputs[0].push_back(output.narrow(0, r * n, n));
  std::vector<torch::Tensor> inputs{input};
  return group.allgather(outputs, inputs);
#endif
}

bool autocast_enabled(c10::DeviceType type) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(type);
#else
  return type == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

void set_autocast_enabled(c10::DeviceType type, bool enabled) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(type, enabled);
#else
  if (type == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(enabled);
  } else {
    at::autocast::set_enabled(enabled);
  }
#endif
}

at::ScalarType autocast_dtype(c10::DeviceType type) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(type);
#else
  return type == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                      : at::autocast::get_autocast_gpu_dtype();
#endif
}

void set_autocast_dtype(c10::DeviceType type, at::ScalarType dtype) {
#if ACCEL_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(type, dtype);
#else
  if (type == c10::DeviceType::CPU) {
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
}

bool cpu_autocast_supports_fp16() { return ACCEL_TORCH_AT_LEAST(2, 4); }

bool cpu_has_fused_amp_kernels() { return ACCEL_TORCH_AT_LEAST(2, 4); }

void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive) {
  optimizer.load(archive);
  // 1.13's load restores the per-parameter state but leaves every param group's options (lr,
  // betas, weight decay, ...) as they are; 2.x copies them. Reading them through the options'
  // own (virtual) serialize gives the saved values on both.
  torch::serialize::InputArchive groups;
  if (!archive.try_read("param_groups", groups)) return;  // an optimizer with its own format
  for (size_t i = 0; i < optimizer.param_groups().size(); ++i) {
    torch::serialize::InputArchive group, options;
    groups.read("param_groups/" + std::to_string(i), group);
    group.read("options", options);
    optimizer.param_groups()[i].options().serialize(options);
  }
}

}  // namespace compat
}  // namespace detail
}  // namespace accelerate
