// The training-mode forward and backward of accelerate::nn::SyncBatchNorm{1,2,3}d.
//
// Which channel the statistics travel on. The model's gradient buckets are all-reduced
// during backward (grad_sync.cpp): a hook on each parameter's gradient accumulator starts a
// bucket's all-reduce on the job's group (or the shared-memory worker, shm_comm.h), and both
// run collectives strictly in the order they were started, so every process must start them
// in the same order. The all-reduce that this backward needs would be started between those
// buckets, at a point that depends on the autograd engine's scheduling of the batch-norm
// node against the gradient accumulators (and, on a graph that spans devices, on which
// device thread gets there first). Instead of relying on that order, the statistics use a
// channel of their own: a second Gloo group over the same store (prefix
// "accelerate/sync_batch_norm/"), made at the first synchronised forward and used by nothing
// else. Its collectives are started only by these forwards (program order, the same on
// every process) and these backwards (the reverse, as the engine runs the batch-norm nodes
// of one graph in the same order everywhere), and each is waited for before the next starts,
// so it never interleaves with the buckets. The values are a few per channel: the latency of
// a loopback Gloo all-reduce, not its bandwidth, is the cost.
#include <accelerate/accelerator/accelerator.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/comm/detail/process_state.h>
#include <accelerate/core/error.h>
#include <accelerate/helpers/sync_batch_norm.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <mutex>

namespace accelerate {
namespace nn {
namespace detail {
namespace {

using accelerate::detail::CommGroup;
using accelerate::detail::CommScope;
using accelerate::detail::ProcessState;

struct Channel {
  const ProcessState* ps = nullptr;
  const c10d::Store* store = nullptr;  // with ps: tells a later ProcessState at the same address apart
  c10::intrusive_ptr<CommGroup> group;
};

// Never destroyed: a Gloo group joins its threads when destroyed, which must not happen
// during static destruction (after the process state it was made from may be gone).
Channel& channel_for(const ProcessState& ps) {
  static std::mutex mutex;
  static auto* channel = new Channel();
  std::lock_guard<std::mutex> lock(mutex);
  if (channel->ps != &ps || channel->store != ps.store.get()) {
    auto store = c10::make_intrusive<c10d::PrefixStore>("accelerate/sync_batch_norm/", ps.store);
    channel->group =
        accelerate::detail::make_gloo_group(ps, store, static_cast<int>(ps.rank()), static_cast<int>(ps.world_size()));
    channel->ps = &ps;
    channel->store = ps.store.get();
  }
  return *channel;
}

// Sums `local` (a 1-d fp64 tensor, any device) over every process; returns it on its device.
torch::Tensor all_reduce_sum(const torch::Tensor& local, const char* what) {
  CommScope scope;
  const ProcessState& ps = accelerate::detail::AcceleratorAccess::process_state(Accelerator::current());
  Channel& ch = channel_for(ps);
  std::vector<torch::Tensor> tensors{local.to(torch::kCPU, torch::kDouble).contiguous().clone()};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  try {
    auto work = ch.group->allreduce(tensors, opts);
    work->wait(ps.timeout);
  } catch (const std::exception& e) {
    throw DistributedError(std::string("accelerate: all_reduce of batch-norm statistics (") + what +
                           ", SyncBatchNorm's own Gloo group) failed on process " + std::to_string(ps.rank()) + " of " +
                           std::to_string(ps.world_size()) + ": " + e.what());
  }
  return tensors[0].to(local.device());
}

// Every dimension but the channels (1).
std::vector<int64_t> reduce_dims(const torch::Tensor& x) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel vector shaped to broadcast against x: {1, C, 1, ...}.
torch::Tensor per_channel(const torch::Tensor& v, const torch::Tensor& x) {
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = v.numel();
  return v.view(shape);
}

struct GlobalStats {
  torch::Tensor mean;  // fp64, per channel
  torch::Tensor var;   // fp64, biased (divided by count), per channel
  int64_t count = 0;   // values per channel over all processes
};

// Two passes, as LibTorch's CPU kernel: the global mean first, then the sum of squared
// deviations from it (no cancellation of E[x^2] - E[x]^2). Accumulated in fp64 from the
// fp32 (or fp64) input.
GlobalStats global_stats(const torch::Tensor& x) {
  const auto dims = reduce_dims(x);
  const int64_t channels = x.size(1);
  const int64_t local_count = channels == 0 ? 0 : x.numel() / channels;
  auto first = torch::cat({torch::full({1}, static_cast<double>(local_count), x.options().dtype(torch::kDouble)),
                           x.sum(dims, /*keepdim=*/false, torch::kDouble)});
  first = all_reduce_sum(first, "forward: count and sum");
  GlobalStats s;
  s.count = static_cast<int64_t>(first[0].item<double>());
  if (s.count <= 1) {
    throw Error(ErrorCode::InvalidArgument,
                "accelerate: SyncBatchNorm: expected more than 1 value per channel when training over all processes, "
                "got input of size " +
                    c10::str(x.sizes()) + " on this process");
  }
  s.mean = first.narrow(0, 1, channels) / static_cast<double>(s.count);
  const auto centred = x - per_channel(s.mean.to(x.scalar_type()), x);
  auto squares = all_reduce_sum(centred.square().sum(dims, /*keepdim=*/false, torch::kDouble), "forward: squares");
  s.var = squares / static_cast<double>(s.count);
  return s;
}

// The running statistics as LibTorch's BatchNormImplBase::forward updates them, with the
// global batch's mean and unbiased variance.
void update_running_stats(const BatchNormState& st, const GlobalStats& s) {
  if (!st.options.track_running_stats() || !st.running_mean.defined()) return;
  double factor = st.options.momentum().value_or(0.0);
  if (st.num_batches_tracked.defined()) {
    st.num_batches_tracked += 1;
    if (!st.options.momentum()) factor = 1.0 / st.num_batches_tracked.item<double>();
  }
  torch::NoGradGuard no_grad;
  const double count = static_cast<double>(s.count);
  const auto unbiased = s.var * (count / (count - 1.0));
  st.running_mean.copy_(st.running_mean.to(torch::kDouble) * (1.0 - factor) + s.mean * factor);
  st.running_var.copy_(st.running_var.to(torch::kDouble) * (1.0 - factor) + unbiased * factor);
}

// xhat = (x - mean) * invstd with the global statistics (given, not differentiated through
// here: the backward accounts for them).
//
// Why the gradients come out as on one process. With the global batch B split over N
// processes, the one-process loss is L = (1/N) * sum_k L_k (L_k: the mean loss of process
// k's share). Every y_i = f(xhat_i) enters only its own process's L_k, so the gradient that
// reaches this node on process k, g = dL_k/dxhat, is also d(sum_k L_k)/dxhat on k's samples.
// The exact gradient of sum_k L_k with respect to x_i needs sum(g) and sum(g * xhat) over
// the whole batch (the mean and variance depend on every sample): summing those two over
// the processes (not averaging) makes dx below d(sum_k L_k)/dx_i for this process's x_i.
// Each parameter's gradient on process k then holds k's share of d(sum_k L_k)/dtheta, and
// the gradient synchronisation averages: (1/N) * sum over k = dL/dtheta, the one-process
// gradient. The affine weight and bias are ordinary autograd operations after this node,
// so their gradients follow the same argument.
struct SyncNormalize : public torch::autograd::Function<SyncNormalize> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& mean,
                               const torch::Tensor& invstd, int64_t count) {
    auto xhat = (x - per_channel(mean, x)) * per_channel(invstd, x);
    ctx->save_for_backward({xhat, invstd});
    ctx->saved_data["count"] = count;
    return xhat;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& xhat = saved[0];
    const auto& invstd = saved[1];
    const auto count = static_cast<double>(ctx->saved_data["count"].toInt());
    const auto& g = grads[0];  // zeros when unused (materialised): every process all-reduces
    const auto dims = reduce_dims(xhat);
    const int64_t channels = xhat.size(1);
    auto sums = torch::cat({g.sum(dims, false, torch::kDouble), (g * xhat).sum(dims, false, torch::kDouble)});
    sums = all_reduce_sum(sums, "backward: gradient sums") / count;
    const auto mean_g = per_channel(sums.narrow(0, 0, channels).to(xhat.scalar_type()), xhat);
    const auto mean_gx = per_channel(sums.narrow(0, channels, channels).to(xhat.scalar_type()), xhat);
    auto dx = (g - mean_g - xhat * mean_gx) * per_channel(invstd, xhat);
    return {dx, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool sync_batch_norm_needed() { return Accelerator::exists() && Accelerator::current().num_processes() > 1; }

torch::Tensor sync_batch_norm_forward(const BatchNormState& st, const torch::Tensor& input) {
  // Half-precision inputs are normalised in fp32 (as LibTorch's kernels accumulate), fp64 stays fp64.
  const auto compute = input.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  const auto x = input.to(compute);
  GlobalStats s;
  {
    torch::NoGradGuard no_grad;
    s = global_stats(x.detach());
  }
  update_running_stats(st, s);
  const auto mean = s.mean.to(compute);
  const auto invstd = (s.var + st.options.eps()).rsqrt().to(compute);
  auto y = SyncNormalize::apply(x, mean, invstd, s.count);
  if (st.options.affine()) y = y * per_channel(st.weight, y) + per_channel(st.bias, y);
  return y.to(input.scalar_type());
}

void print_batch_norm(std::ostream& stream, const std::string& name, const torch::nn::BatchNormOptions& options) {
  stream << std::boolalpha << name << "(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats() << ")";
}

}  // namespace detail
}  // namespace nn
}  // namespace accelerate
