// gather, gather_for_metrics, reduce, broadcast, pad_across_processes.
// Tensors travel in comm_dtype (fp32 for half types, uint8 for bool) and come back in
// their own dtype; a single process returns its input unchanged (scalars made 1-d by gather).
// Each entry point holds a CommScope: its buffers are normal tensors under InferenceMode too.
#include <accelerate/accelerator/accelerator.h>
#include <accelerate/comm/detail/process_state.h>

#include <algorithm>
#include <cstring>

namespace accelerate {
namespace {

using detail::CommGroup;
using detail::ProcessState;

int64_t normalize_dim(const torch::Tensor& t, int64_t dim) {
  const int64_t n = t.dim();
  if (dim < -n || dim >= n) {
    throw Error(ErrorCode::InvalidArgument,
                "accelerate: dim " + std::to_string(dim) + " is out of range for a tensor with " + std::to_string(n) +
                    " dimensions; pass a dim in [-" + std::to_string(n) + ", " + std::to_string(n) + ")");
  }
  return dim < 0 ? dim + n : dim;
}

// Every process's `t` (same shape on each), stacked in rank order along a new dim 0.
torch::Tensor all_gather_same_shape(const ProcessState& ps, const torch::Tensor& t, const std::string& what) {
  torch::Tensor input = t.to(ps.device, detail::comm_dtype(t.scalar_type())).contiguous().reshape({-1});
  torch::Tensor output = torch::empty({ps.world_size() * input.numel()}, input.options());
  ps.run(what, [&](CommGroup& g) { return detail::compat::allgather_flat(g, output, input); });
  auto shape = t.sizes().vec();
  shape.insert(shape.begin(), ps.world_size());
  return output.view(shape).to(t.scalar_type());
}

// Every process's value of `v`, in rank order.
std::vector<int64_t> all_gather_ints(const ProcessState& ps, const std::vector<int64_t>& v, const std::string& what) {
  auto all = all_gather_same_shape(ps, torch::tensor(v, torch::kInt64), what).cpu().contiguous();
  return std::vector<int64_t>(all.data_ptr<int64_t>(), all.data_ptr<int64_t>() + all.numel());
}

}  // namespace

torch::Tensor Accelerator::gather(const torch::Tensor& tensor) {
  detail::CommScope scope;
  const torch::Tensor t = tensor.dim() == 0 ? tensor.reshape({1}) : tensor;
  const auto& ps = process();
  if (!ps.distributed()) return t;
  // Sizes along dim 0 may differ (last batch): exchange them, pad to the largest, trim.
  const auto sizes = all_gather_ints(ps, {t.size(0)}, "all_gather of tensor sizes (gather)");
  const int64_t max_size = *std::max_element(sizes.begin(), sizes.end());
  torch::Tensor padded = t;
  if (t.size(0) < max_size) {
    auto shape = t.sizes().vec();
    shape[0] = max_size - t.size(0);
    padded = torch::cat({t, torch::zeros(shape, t.options())});
  }
  auto all = all_gather_same_shape(ps, padded, "all_gather (gather)");
  std::vector<torch::Tensor> parts;
  for (int64_t r = 0; r < ps.world_size(); ++r) parts.push_back(all[r].narrow(0, 0, sizes[r]));
  return torch::cat(parts).to(t.device());
}

torch::Tensor Accelerator::split_between_processes(const torch::Tensor& tensor, bool apply_padding) const {
  if (tensor.dim() == 0) {
    throw Error(ErrorCode::InvalidArgument,
                "accelerate: split_between_processes: a 0-dim tensor has no rows to split; pass a tensor with dim 0 "
                "along the items");
  }
  const int64_t n = tensor.size(0);
  const auto [first, last] = split_range(0, n, process_index(), num_processes());
  torch::Tensor share = tensor.narrow(0, first, last - first);
  const int64_t longest = (n + num_processes() - 1) / num_processes();
  // Shares differ by at most one row: one copy of the last row evens them.
  if (apply_padding && n > 0 && share.size(0) < longest) share = torch::cat({share, tensor.narrow(0, n - 1, 1)});
  return share;
}

std::vector<std::string> Accelerator::gather_bytes(const std::string& bytes) {
  detail::CommScope scope;
  const auto& ps = process();
  if (!ps.distributed()) return {bytes};
  const auto sizes = all_gather_ints(ps, {static_cast<int64_t>(bytes.size())}, "all_gather of sizes (gather_object)");
  const int64_t max_size = std::max<int64_t>(1, *std::max_element(sizes.begin(), sizes.end()));
  torch::Tensor mine = torch::zeros({max_size}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(mine.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  const torch::Tensor all = all_gather_same_shape(ps, mine, "all_gather (gather_object)").cpu().contiguous();
  std::vector<std::string> out;
  for (int64_t r = 0; r < ps.world_size(); ++r) {
    const auto* row = all[r].data_ptr<uint8_t>();
    out.emplace_back(reinterpret_cast<const char*>(row), static_cast<size_t>(sizes[r]));
  }
  return out;
}

torch::Tensor Accelerator::gather_for_metrics(const torch::Tensor& tensor) {
  torch::Tensor all = gather(tensor);
  const auto& loader = loader_state();
  // On the last batch of an epoch, even_batches padding repeated samples from the
  // start of the dataset: keep only the real ones.
  if (loader.end_of_dataloader && loader.remainder >= 0 && loader.remainder < all.size(0)) {
    all = all.narrow(0, 0, loader.remainder);
  }
  return all;
}

torch::Tensor Accelerator::reduce(const torch::Tensor& tensor, ReduceOp op) {
  detail::CommScope scope;
  const auto& ps = process();
  const bool mean = op == ReduceOp::Mean;
  if (!ps.distributed()) return mean && !tensor.is_floating_point() ? tensor.to(torch::kFloat) : tensor;
  std::vector<torch::Tensor> t{tensor.to(ps.device, detail::comm_dtype(tensor.scalar_type())).contiguous().clone()};
  c10d::AllreduceOptions opts;
  opts.reduceOp = op == ReduceOp::Max   ? c10d::ReduceOp::MAX
                  : op == ReduceOp::Min ? c10d::ReduceOp::MIN
                                        : c10d::ReduceOp::SUM;  // Mean: SUM then divide (Gloo aborts on AVG)
  ps.run("all_reduce (reduce)", [&](CommGroup&) { return ps.allreduce(t, opts); });
  torch::Tensor out = t[0];
  if (mean) {
    out = out.to(tensor.is_floating_point() ? out.scalar_type() : torch::kFloat)
              .div(static_cast<double>(ps.world_size()));
    return out.to(tensor.is_floating_point() ? tensor.scalar_type() : torch::kFloat).to(tensor.device());
  }
  return out.to(tensor.scalar_type()).to(tensor.device());
}

torch::Tensor Accelerator::broadcast(const torch::Tensor& tensor, int64_t from_process) {
  detail::CommScope scope;
  const auto& ps = process();
  if (from_process < 0 || from_process >= num_processes()) {
    throw Error(ErrorCode::InvalidArgument, "accelerate: broadcast from process " + std::to_string(from_process) +
                                                ", but there are " + std::to_string(num_processes()) +
                                                " processes; from_process must be a process_index() of this run");
  }
  if (!ps.distributed()) return tensor;
  const bool root = process_index() == from_process;
  const std::string what = "broadcast from process " + std::to_string(from_process);
  // The receivers need not know the shape or dtype: send them first.
  constexpr int64_t kMaxDims = 16;
  std::vector<int64_t> meta(2 + kMaxDims, 0);
  if (root) {
    if (tensor.dim() > kMaxDims) {
      throw Error(ErrorCode::Unsupported, "accelerate: broadcast supports up to " + std::to_string(kMaxDims) +
                                              " dimensions, got a tensor of " + std::to_string(tensor.dim()));
    }
    meta[0] = static_cast<int64_t>(tensor.scalar_type());
    meta[1] = tensor.dim();
    for (int64_t d = 0; d < tensor.dim(); ++d) meta[2 + d] = tensor.size(d);
  }
  c10d::BroadcastOptions opts;
  opts.rootRank = static_cast<int>(from_process);
  std::vector<torch::Tensor> m{torch::tensor(meta, torch::kInt64).to(ps.device)};
  ps.run(what + " (shape)", [&](CommGroup& g) { return g.broadcast(m, opts); });
  auto mc = m[0].cpu();
  const auto dtype = static_cast<c10::ScalarType>(mc[0].item<int64_t>());
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < mc[1].item<int64_t>(); ++d) shape.push_back(mc[2 + d].item<int64_t>());
  std::vector<torch::Tensor> data{
      root ? tensor.to(ps.device, detail::comm_dtype(dtype)).contiguous().clone()
           : torch::empty(shape, torch::TensorOptions().dtype(detail::comm_dtype(dtype)).device(ps.device))};
  ps.run(what, [&](CommGroup& g) { return g.broadcast(data, opts); });
  const auto out_device = tensor.defined() ? tensor.device() : ps.device;
  return data[0].to(out_device, dtype);
}

torch::Tensor Accelerator::pad_across_processes(const torch::Tensor& tensor, int64_t dim, double pad_index,
                                                bool pad_first) {
  detail::CommScope scope;
  const auto& ps = process();
  if (tensor.dim() == 0 || !ps.distributed()) return tensor;
  dim = normalize_dim(tensor, dim);
  const auto sizes = all_gather_ints(ps, {tensor.size(dim)}, "all_gather of tensor sizes (pad_across_processes)");
  const int64_t max_size = *std::max_element(sizes.begin(), sizes.end());
  if (tensor.size(dim) == max_size) return tensor;
  auto shape = tensor.sizes().vec();
  shape[dim] = max_size;
  auto out = torch::full(shape, pad_index, tensor.options());
  out.narrow(dim, pad_first ? max_size - tensor.size(dim) : 0, tensor.size(dim)).copy_(tensor);
  return out;
}

}  // namespace accelerate
