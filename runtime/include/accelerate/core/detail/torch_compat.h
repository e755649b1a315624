#pragma once
// The one place that knows LibTorch versions apart (1.13 on Debian 12, 2.6 on Debian 13,
// 2.x wheels). Nothing else in the runtime tests TORCH_VERSION_*: it calls what is here.

#include <torch/torch.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include <functional>
#include <string>

namespace accelerate {
namespace detail {

// Since PyTorch 2.0 the concrete process groups (Gloo, NCCL) are c10d::Backend objects
// behind a dispatching c10d::ProcessGroup; 1.13's ProcessGroupGloo is the group itself.
#if TORCH_VERSION_MAJOR >= 2
using CommGroup = c10d::Backend;
#else
using CommGroup = c10d::ProcessGroup;
#endif

namespace compat {

// "1.13.1", "2.6.0", ...: the LibTorch these headers belong to.
const char* torch_version();

// A TCPStore client or server. LibTorch 2.4+ defaults to a libuv server, which Debian's
// build (and some wheels) lack: those get the classic server, which speaks the same
// protocol, so clients of either kind interoperate. USE_LIBUV=0 in the environment forces
// the classic one, as in PyTorch.
c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, c10d::TCPStoreOptions opts);

// Gathers equally sized 1-d `input`s of every process into `output` (world_size *
// input.numel() elements, rank order) with one flat buffer where the backend can
// (_allgather_base, Gloo in 2.x), else through a list of per-rank tensors.
c10::intrusive_ptr<c10d::Work> allgather_flat(CommGroup& group, torch::Tensor& output, torch::Tensor& input);

// Sums the 1-d `input` (world_size equal chunks) over the processes and leaves chunk `rank`
// of the sum in `output`; `input` may be overwritten. Every piece of communication is handed
// to `wait` (which waits with the runtime's error context) before the next one starts.
// Gloo in 2.x and NCCL: _reduce_scatter_base. Gloo in 1.13 has no reduce-scatter (it throws):
// a ring of send/recv, world_size - 1 steps that each add one received chunk, so the extra
// memory is one chunk (an all-reduce would need the whole buffer on every process, an
// all-to-all one more buffer of the input's size).
void reduce_scatter_flat(CommGroup& group, torch::Tensor& output, torch::Tensor& input, int64_t rank,
                         int64_t world_size, const std::function<void(const c10::intrusive_ptr<c10d::Work>&)>& wait);

// Autocast state by device type. 2.4 replaced the per-device names (set_cpu_enabled,
// get_autocast_gpu_dtype, ...) by functions taking the device type.
bool autocast_enabled(c10::DeviceType type);
void set_autocast_enabled(c10::DeviceType type, bool enabled);
at::ScalarType autocast_dtype(c10::DeviceType type);
void set_autocast_dtype(c10::DeviceType type, at::ScalarType dtype);
// CPU autocast to float16 exists from 2.x; 1.13 has bfloat16 only.
bool cpu_autocast_supports_fp16();
// The fused GradScaler kernels (_amp_foreach_non_finite_check_and_unscale_,
// _amp_update_scale_) are registered for CPU from 2.4; 1.13 has them for CUDA only. The
// scaler finds them through the dispatcher; this says what to expect (tests, docs).
bool cpu_has_fused_amp_kernels();

// Moves the optimizer's per-parameter state kept for `from` (if any) to `to`, converted by
// `convert`. The state is keyed by the string of the TensorImpl's address in 1.13, by the
// address itself in 2.x. Returns whether there was state to move.
bool move_optimizer_state(
    torch::optim::Optimizer& optimizer, const torch::Tensor& from, const torch::Tensor& to,
    const std::function<std::unique_ptr<torch::optim::OptimizerParamState>(torch::optim::OptimizerParamState&)>&
        convert);

// optimizer.load(archive), with every param group's options (lr, ...) restored as saved:
// 1.13's load keeps the current options, 2.x takes the saved ones.
void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive);

}  // namespace compat
}  // namespace detail
}  // namespace accelerate
