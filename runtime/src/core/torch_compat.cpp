// LibTorch version differences (see accelerate/core/detail/torch_compat.h).
#include <accelerate/core/detail/torch_compat.h>
#include <accelerate/helpers/sync_batch_norm.h>

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
  std::vector<std::vector<torch::Tensor> > outputs(1);
  const int64_t n = input.numel();
  for (int64_t r = 0; r < output.numel() / n; ++r) outputs[0].push_back(output.narrow(0, r * n, n));
  std::vector<torch::Tensor> inputs{input};
  return group.allgather(outputs, inputs);
#endif
}

#if TORCH_VERSION_MAJOR < 2
namespace {

// The ring reduce-scatter of 1.13 Gloo: at step s, rank r sends its partial sum of chunk
// (r - s - 1) to r + 1 and adds what r - 1 sends into chunk (r - s - 2); after world - 1
// steps chunk r holds the sum over every process.
void ring_reduce_scatter(CommGroup& group, torch::Tensor& output, torch::Tensor& input, int64_t rank, int64_t world,
                         const std::function<void(const c10::intrusive_ptr<c10d::Work>&)>& wait) {
  const int64_t n = output.numel();
  const int next = static_cast<int>((rank + 1) % world), prev = static_cast<int>((rank + world - 1) % world);
  constexpr int kTag = 0x46534450;  // "FSDP": apart from any other point-to-point traffic
  std::vector<torch::Tensor> received{torch::empty({n}, input.options())};
  for (int64_t step = 0; step + 1 < world; ++step) {
    const int64_t send_chunk = ((rank - step - 1) % world + world) % world;
    const int64_t recv_chunk = ((rank - step - 2) % world + world) % world;
    std::vector<torch::Tensor> sent{input.narrow(0, send_chunk * n, n)};
    auto send = group.send(sent, next, kTag);
    auto recv = group.recv(received, prev, kTag);
    wait(send);
    wait(recv);
    input.narrow(0, recv_chunk * n, n).add_(received[0]);
  }
  output.copy_(input.narrow(0, rank * n, n));
}

}  // namespace
#endif

void reduce_scatter_flat(CommGroup& group, torch::Tensor& output, torch::Tensor& input, int64_t rank,
                         int64_t world_size, const std::function<void(const c10::intrusive_ptr<c10d::Work>&)>& wait) {
#if TORCH_VERSION_MAJOR >= 2
  (void)rank;
  (void)world_size;
  c10d::ReduceScatterOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  wait(group._reduce_scatter_base(output, input, opts));
#else
  if (group.getBackendName() == "nccl") {
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    wait(group._reduce_scatter_base(output, input, opts));
    return;
  }
  ring_reduce_scatter(group, output, input, rank, world_size, wait);
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
  return type == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
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

bool move_optimizer_state(
    torch::optim::Optimizer& optimizer, const torch::Tensor& from, const torch::Tensor& to,
    const std::function<std::unique_ptr<torch::optim::OptimizerParamState>(torch::optim::OptimizerParamState&)>&
        convert) {
#if TORCH_VERSION_MAJOR >= 2
  auto key = [](const torch::Tensor& t) { return static_cast<void*>(t.unsafeGetTensorImpl()); };
#else
  auto key = [](const torch::Tensor& t) { return c10::guts::to_string(t.unsafeGetTensorImpl()); };
#endif
  auto& state = optimizer.state();
  auto it = state.find(key(from));
  if (it == state.end()) return false;
  auto converted = convert(*it->second);
  state.erase(it);
  state[key(to)] = std::move(converted);
  return true;
}

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

#if TORCH_VERSION_MAJOR < 2
// LibTorch 1.13 declares BatchNormImplBase<D, ...>::pretty_print in its header and defines
// it in libtorch_cpu without exporting it; a class derived from BatchNorm{1,2,3}dImpl outside
// LibTorch (accelerate::nn::SyncBatchNorm2d, ...) needs it in its construction vtables.
// 2.x defines it in the header. The text is LibTorch's.
namespace torch {
namespace nn {
template <>
void BatchNormImplBase<1, BatchNorm1dImpl>::pretty_print(std::ostream& stream) const {
  accelerate::nn::detail::print_batch_norm(stream, "torch::nn::BatchNorm1d", options);
}
template <>
void BatchNormImplBase<2, BatchNorm2dImpl>::pretty_print(std::ostream& stream) const {
  accelerate::nn::detail::print_batch_norm(stream, "torch::nn::BatchNorm2d", options);
}
template <>
void BatchNormImplBase<3, BatchNorm3dImpl>::pretty_print(std::ostream& stream) const {
  accelerate::nn::detail::print_batch_norm(stream, "torch::nn::BatchNorm3d", options);
}
}  // namespace nn
}  // namespace torch
#endif
