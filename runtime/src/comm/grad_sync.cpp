#include "comm/grad_sync.h"

#include "core/autograd_hooks.h"

#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/error.h>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

namespace accelerate {
namespace detail {
namespace {

std::vector<int64_t> dense_strides(c10::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * std::max<int64_t>(sizes[d], 1);
  return strides;
}

}  // namespace

bool grad_sync_overlap() {
  const char* v = std::getenv(env_names::kGradSyncOverlap);
  const std::string mode = v == nullptr ? "1" : v;
  if (mode != "1" && mode != "0") {
    throw LaunchEnvError(std::string("accelerate: ") + env_names::kGradSyncOverlap + "='" + mode + "' is not 1 or 0");
  }
  return mode == "1";
}

GradSync::GradSync(const ProcessState& ps, std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers,
                   double first_bucket_cap_mb, double bucket_cap_mb, std::function<bool()> enabled, bool overlap)
    : ps_(ps),
      params_(std::move(params)),
      buffers_(std::move(buffers)),
      enabled_(std::move(enabled)),
      overlap_(overlap),
      alive_(std::make_shared<bool>(true)) {
  build_buckets(first_bucket_cap_mb, bucket_cap_mb);
  allocate_buckets();
  ready_.assign(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[i]);
    if (!acc) {
      throw Error(ErrorCode::Unsupported,
                  "accelerate: parameter " + std::to_string(i) + " has no gradient accumulator (not a leaf tensor?)");
    }
    hook_keys_.push_back(acc->add_post_hook(std::make_unique<AfterGradHook>([this, i] { on_grad_ready(i); })));
    accumulators_.push_back(std::move(acc));
  }
}

GradSync::~GradSync() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
  *alive_ = false;
}

void GradSync::build_buckets(double first_cap_mb, double cap_mb) {
  bucket_of_.assign(params_.size(), 0);
  // Gradients become ready roughly in reverse registration order: bucket that way, so
  // bucket 0 fills first and communication starts early (as DDP does).
  double cap = first_cap_mb;
  int64_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    const auto dtype = comm_dtype(p.scalar_type());
    const int64_t p_bytes = p.numel() * static_cast<int64_t>(c10::elementSize(dtype));
    const bool fits = !buckets_.empty() && buckets_.back().dtype == dtype &&
                      (bytes + p_bytes <= static_cast<int64_t>(cap * 1024 * 1024) || bytes == 0);
    if (!fits) {
      if (!buckets_.empty()) cap = cap_mb;
      buckets_.emplace_back();
      buckets_.back().dtype = dtype;
      bytes = 0;
    }
    auto& b = buckets_.back();
    bucket_of_[k] = buckets_.size() - 1;
    b.params.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    bytes += p_bytes;
  }
  for (size_t index = 0; index < buckets_.size(); ++index) {
    std::ostringstream what;
    what << "all_reduce of gradient bucket " << index << " of " << buckets_.size() << " ("
         << buckets_[index].params.size() << " parameters)";
    buckets_[index].what = what.str();
  }
}

// Each bucket is a flat buffer of its gradients followed by one "used" flag per parameter.
// On CPU with processes sharing a host, all buckets of the model are one region of shared
// memory (each bucket on a cache line of its own); else each is an ordinary tensor.
void GradSync::allocate_buckets() {
  CommScope scope;  // prepare() under InferenceMode must still make normal buffers
  size_t total = 0;
  for (auto& b : buckets_) {
    total = (total + 63) / 64 * 64;
    b.region_offset = total;
    total += static_cast<size_t>(b.numel + static_cast<int64_t>(b.params.size())) * c10::elementSize(b.dtype);
  }
  const bool reducible =
      std::all_of(buckets_.begin(), buckets_.end(), [](const Bucket& b) { return shm_reduce_supports(b.dtype); });
  if (ps_.shm && ps_.device.is_cpu() && reducible) {
    std::ostringstream purpose;
    purpose.precision(1);
    purpose << std::fixed << "gradient buckets of a model (" << total / 1e6 << " MB per process)";
    region_ = ps_.shm->allocate(total, purpose.str());
  }
  for (auto& b : buckets_) {
    const int64_t size = b.numel + static_cast<int64_t>(b.params.size());
    const auto options = torch::TensorOptions().dtype(b.dtype).device(ps_.device);
    if (region_) {
      auto owner = region_->owner;  // the tensors (and gradients on them) keep the memory mapped
      b.flat = torch::from_blob(
          region_->mine() + b.region_offset, {size}, [owner](void*) {}, options);
    } else {
      b.flat = torch::empty({size}, options);
    }
  }
  grad_views_.assign(params_.size(), torch::Tensor());
  for (auto& b : buckets_) {
    for (size_t j = 0; j < b.params.size(); ++j) {
      const auto& p = params_[b.params[j]];
      if (p.scalar_type() != b.dtype) continue;  // half precision: the bucket is fp32
      // A tensor of its own on the bucket's storage, not a view: optimizers' zero_grad()
      // calls detach_() on gradients, which LibTorch refuses for views.
      grad_views_[b.params[j]] =
          torch::empty({0}, b.flat.options())
              .set_(b.flat.storage(), b.flat.storage_offset() + b.offsets[j], p.sizes(), dense_strides(p.sizes()));
    }
  }
}

bool GradSync::in_bucket(size_t param, const torch::Tensor& grad) const {
  const auto& v = grad_views_[param];
  return v.defined() && grad.defined() && grad.data_ptr() == v.data_ptr() && grad.scalar_type() == v.scalar_type() &&
         grad.sizes() == v.sizes() && grad.strides() == v.strides();
}

std::vector<size_t> GradSync::bucket_sizes() const {
  std::vector<size_t> sizes;
  for (const auto& b : buckets_) sizes.push_back(b.params.size());
  return sizes;
}

void GradSync::on_grad_ready(size_t param) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!in_flight_) {
    if (!enabled_()) return;
    in_flight_ = true;
    ++passes_;
    next_launch_ = 0;
    std::fill(ready_.begin(), ready_.end(), false);
    for (auto& b : buckets_) {
      b.pending = b.params.size();
      b.launched = false;
      b.work.reset();
    }
    // Runs when this backward pass has finished: waits for the buckets.
    std::weak_ptr<bool> alive = alive_;
    torch::autograd::Engine::get_default_engine().queue_callback([this, alive] {
      if (auto a = alive.lock(); a && *a) finalize();
    });
  }
  if (ready_[param]) return;  // accumulated twice in one pass (reentrant backward): already counted
  ready_[param] = true;
  auto& b = buckets_[bucket_of_[param]];
  if (--b.pending == 0 && overlap_) launch_ready_buckets();
}

void GradSync::launch_ready_buckets() {
  // Strictly in bucket order, so every process issues the same sequence of collectives.
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(next_launch_++);
}

void GradSync::launch(size_t index) {
  auto& b = buckets_[index];
  const auto start = std::chrono::steady_clock::now();
  CommScope scope;
  const int64_t n = static_cast<int64_t>(b.params.size());
  auto used = b.flat.narrow(0, b.numel, n);
  for (int64_t j = 0; j < n; ++j) {
    const size_t k = b.params[j];
    auto& p = params_[k];
    const auto& g = p.grad();
    if (!g.defined()) {
      b.flat.narrow(0, b.offsets[j], p.numel()).zero_();
      used[j].fill_(0);
      continue;
    }
    if (g.is_sparse()) {
      throw Error(ErrorCode::Unsupported,
                  "accelerate: gradient synchronisation does not support sparse gradients (parameter of shape " +
                      c10::str(p.sizes()) + "); use a dense embedding");
    }
    if (!in_bucket(k, g)) {
      b.flat.narrow(0, b.offsets[j], p.numel()).copy_(g.reshape({-1}));
      if (grad_views_[k].defined()) p.mutable_grad() = grad_views_[k];
      ++copied_;
    }
    used[j].fill_(1);
    if (observer_) observer_(p, b.flat.narrow(0, b.offsets[j], p.numel()).view(p.sizes()));
  }
  copy_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  b.seq = ps_.begin(b.what);
  try {
    if (region_) {
      // Summed and divided by the world size in place, in every process's bucket.
      b.work = ps_.shm->allreduce_in_place(region_, b.region_offset, b.numel + n, b.dtype,
                                           static_cast<double>(ps_.world_size()));
    } else {
      std::vector<torch::Tensor> tensors{b.flat};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;  // Gloo 1.13 aborts on AVG: sum, then divide
      b.work = ps_.group->allreduce(tensors, opts);
    }
  } catch (const std::exception& e) {
    ps_.fail(b.what, e.what());
  }
  b.launched = true;
  ++(finalizing_ ? launched_at_end_ : launched_during_backward_);
}

void GradSync::finalize() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!in_flight_) return;
  in_flight_ = false;                      // even on failure, the next pass starts afresh
  for (auto& b : buckets_) b.pending = 0;  // unused parameters: their (absent) gradients count as zero
  // From here on the caller waits for the communication (launching a bucket can take the
  // time of another: its thread may run at once on this core).
  const auto start = std::chrono::steady_clock::now();
  finalizing_ = true;
  launch_ready_buckets();
  finalizing_ = false;
  CommScope scope;
  const double world = static_cast<double>(ps_.world_size());
  for (auto& b : buckets_) {
    ps_.wait(b.work, b.what, b.seq);
    b.work.reset();
    const int64_t n = static_cast<int64_t>(b.params.size());
    if (!region_) b.flat.narrow(0, 0, b.numel).div_(world);
    const auto used = b.flat.narrow(0, b.numel, n).to(torch::kCPU, torch::kDouble).contiguous();
    const double* used_by = used.data_ptr<double>();
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = b.params[j];
      auto& p = params_[k];
      // A parameter no process used keeps an undefined gradient, as in DDP.
      if (used_by[j] == 0 || in_bucket(k, p.grad())) continue;
      if (grad_views_[k].defined()) {
        p.mutable_grad() = grad_views_[k];  // unused here, used elsewhere: the average is in the bucket
        continue;
      }
      auto avg = b.flat.narrow(0, b.offsets[j], p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.mutable_grad() = avg.to(p.scalar_type()).clone();
      }
    }
  }
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!buffers_.empty()) broadcast_tensors(ps_, buffers_, 0, "broadcast of the model's buffers from process 0");
}

}  // namespace detail
}  // namespace accelerate
