// One FSDP unit's flat parameter (see flat_param.h).
#include "fsdp/flat_param.h"

#include "fsdp/param_access.h"
#include "shm/shm_comm.h"

#include <accelerate/core/error.h>
#include <accelerate/log/logging.h>

#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>

namespace accelerate {
namespace detail {
namespace {

// Gloo in 1.13 aborts the process on bf16 tensors; gathering only copies bits, so bf16
// travels as fp16 (same size).
torch::Tensor bit_view(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? t.view(torch::kHalf) : t;
}

// A tensor over [offset, offset + numel) of `storage_owner`'s storage that is NOT an autograd
// view: LibTorch 1.13's Optimizer::zero_grad() calls detach_() on gradients, which views refuse.
torch::Tensor alias_of(const torch::Tensor& storage_owner, int64_t offset, int64_t numel) {
  auto t = torch::empty({0}, storage_owner.options());
  t.set_(storage_owner.storage(), storage_owner.storage_offset() + offset, {numel}, {1});
  return t;
}

// The shared-memory collectives when every process of the job is on this host and the
// tensors are in CPU memory; else null (Gloo, also between hosts: docs/fsdp.md).
ShmComm* one_host_shm(const ProcessState& ps, const torch::Tensor& a, const torch::Tensor& b) {
  if (!ps.shm || !ps.shm->one_host()) return nullptr;
  for (const auto* t : {&a, &b}) {
    if (!t->device().is_cpu() || !t->is_contiguous()) return nullptr;
  }
  return ps.shm.get();
}

// What a pooled buffer's storage frees: the allocator's buffer goes back to the pool (or is
// freed if the pool is gone) when the last tensor on it is, whichever thread that is.
struct PoolReturn {
  at::DataPtr inner;
  std::weak_ptr<UnitBufferPool> pool;
  size_t nbytes = 0;
};
void return_to_pool(void* context) {
  std::unique_ptr<PoolReturn> back(static_cast<PoolReturn*>(context));
  if (auto pool = back->pool.lock()) pool->give(std::move(back->inner), back->nbytes);
}

// torch::zeros of `numel` elements, on a buffer from `pool` when it has one: every unit makes
// a flat gradient buffer in every synchronising backward, and fresh pages from the kernel
// (glibc maps large blocks anew) cost a fault each, more than zeroing reused ones.
torch::Tensor pooled_zeros(const std::shared_ptr<UnitBufferPool>& pool, int64_t numel,
                           const torch::TensorOptions& options) {
  if (!pool) return torch::zeros({numel}, options);
  const size_t nbytes = static_cast<size_t>(numel) * c10::elementSize(options.dtype().toScalarType());
  at::DataPtr inner = pool->take(options.device(), nbytes);
  if (!inner.get()) inner = c10::GetAllocator(options.device().type())->allocate(nbytes);
  void* data = inner.get();
  const c10::Device device = inner.device();
  at::DataPtr outer(data, new PoolReturn{std::move(inner), pool, nbytes}, &return_to_pool, device);
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<int64_t>(nbytes), std::move(outer), nullptr, false);
  return torch::empty({0}, options).set_(storage, 0, {numel}, {1}).zero_();
}

bool same(const torch::Tensor& a, const torch::Tensor& b) {
  return a.defined() && b.defined() && a.unsafeGetTensorImpl() == b.unsafeGetTensorImpl();
}

}  // namespace

FlatParam::FlatParam(const ProcessState& ps, UnitSpec spec, const FlatParamConfig& config)
    : ps_(ps),
      rank_(ps.rank()),
      world_(std::max<int64_t>(1, ps.world_size())),
      name_(std::move(spec.name)),
      names_(std::move(spec.param_names)),
      params_(std::move(spec.params)),
      config_(config) {
  CommScope scope;
  param_access::Pause pause;
  const auto dtype = params_.front().scalar_type();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].scalar_type() != dtype) {
      throw Error(ErrorCode::Unsupported, "accelerate: FSDP unit '" + name_ + "' mixes parameter dtypes (" + names_[0] +
                                              " is " + c10::toString(dtype) + ", " + names_[i] + " is " +
                                              c10::toString(params_[i].scalar_type()) +
                                              "); give them one dtype or wrap them in different units");
    }
    offsets_.push_back(total_);
    numels_.push_back(params_[i].numel());
    total_ += params_[i].numel();
  }
  shard_numel_ = std::max<int64_t>(1, (total_ + world_ - 1) / world_);
  const auto shard_dtype = at::isFloatingType(dtype) && c10::elementSize(dtype) < 4 ? torch::kFloat32 : dtype;
  if (!at::isFloatingType(config_.compute_dtype)) config_.compute_dtype = dtype;
  aliased_ = !config_.reshard && config_.compute_dtype == shard_dtype && config_.shard_device == config_.device;

  full_ =
      torch::zeros({world_ * shard_numel_}, torch::TensorOptions().dtype(config_.compute_dtype).device(config_.device));
  for (size_t i = 0; i < params_.size(); ++i) full_.narrow(0, offsets_[i], numels_[i]).copy_(params_[i].reshape({-1}));
  if (aliased_) {
    shard_ = full_.narrow(0, local_begin(), shard_numel_);
  } else {
    // From the parameters themselves, not from full_: that may already be rounded to bf16.
    shard_ = torch::zeros({shard_numel_}, torch::TensorOptions().dtype(shard_dtype).device(config_.shard_device));
    for (size_t i = 0; i < params_.size(); ++i) {
      const int64_t begin = std::max(offsets_[i], local_begin());
      const int64_t end = std::min(offsets_[i] + numels_[i], local_begin() + local_valid());
      if (begin < end) {
        shard_.narrow(0, begin - local_begin(), end - begin)
            .copy_(params_[i].reshape({-1}).narrow(0, begin - offsets_[i], end - begin));
      }
    }
  }
  grad_shard_ = torch::zeros({shard_numel_}, shard_.options());
  for (size_t i = 0; i < params_.size(); ++i) {
    // The model's own tensors now read the flat buffer (their autograd identity stays).
    params_[i].set_data(full_.narrow(0, offsets_[i], numels_[i]).view(params_[i].sizes()));
    sentinels_.push_back(torch::zeros({}, full_.options()).expand(params_[i].sizes()));
    params_[i].mutable_grad() = torch::Tensor();
  }
  storage_ = full_.storage().unsafeGetStorageImpl();
  nbytes_ = storage_->nbytes();
  build_pieces();
  seen_.assign(params_.size(), 0);
  decided_.assign(params_.size(), 0);
  keep_.assign(params_.size(), 0);
  release();
}

int64_t FlatParam::full_bytes() const {
  return world_ * shard_numel_ * static_cast<int64_t>(c10::elementSize(config_.compute_dtype));
}

int64_t FlatParam::local_valid() const { return std::max<int64_t>(0, std::min(shard_numel_, total_ - local_begin())); }

void FlatParam::build_pieces() {
  for (size_t i = 0; i < params_.size(); ++i) {
    const int64_t begin = std::max(offsets_[i], local_begin());
    const int64_t end = std::min(offsets_[i] + numels_[i], local_begin() + local_valid());
    const int64_t offset = begin < end ? begin - local_begin() : 0;
    // A leaf the optimizer owns: updating it updates the shard.
    auto piece = shard_.narrow(0, offset, std::max<int64_t>(0, end - begin)).detach();
    piece.requires_grad_(true);
    pieces_.push_back(piece);
    piece_offsets_.push_back(offset);
  }
}

FlatParam::~FlatParam() {
  // Nothing to throw to: the next collective reports the group's state.
  auto settle = [this](const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, uint64_t seq) {
    if (!work) return;
    try {
      ps_.wait(work, what, seq);
    } catch (const std::exception& e) {
      detail::runtime_log().error(e.what(), LogScope::all_processes);
    }
  };
  settle(fetch_.work, fetch_.what, fetch_.seq);
  if (fetch_.work && !fetch_.work->isCompleted()) fetch_.buffer.release_context();  // still written into
  settle(reduction_.work, reduction_.what, reduction_.seq);
}

int64_t FlatParam::piece_start(size_t i) const {
  return pieces_[i].numel() == 0 ? 0 : local_begin() + piece_offsets_[i] - offsets_[i];
}

// ---- the full parameters ----------------------------------------------------------------

bool FlatParam::needs_gather(const at::Tensor& t) const {
  const State state = state_.load(std::memory_order_acquire);
  if (state == State::Gathering) return false;  // the gather's own copies (possibly another thread)
  // A prefetch writes a buffer of its own, so no copy of it lands here: whoever reads now
  // must wait for it (gather()).
  if (state == State::Freed || state == State::Fetching) return true;
  if (!stale_.load(std::memory_order_relaxed)) return false;
  if (!aliased_) return true;
  // SHARD_GRAD_OP keeps the shard inside the full buffer: an operator on this process's own
  // slice only (the optimizer updating it) reads current values and must not gather.
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return false;
    last += (t.size(d) - 1) * t.stride(d);
  }
  return t.storage_offset() < local_begin() || last >= local_begin() + shard_numel_;
}

at::DataPtr FlatParam::take_buffer() {
  at::DataPtr buffer = config_.pool ? config_.pool->take(full_.device(), nbytes_) : at::DataPtr();
  if (!buffer.get()) buffer = storage_->allocator()->allocate(nbytes_);
  return buffer;
}

void FlatParam::refill_storage() {
  if (storage_->nbytes() == nbytes_ && storage_->data() != nullptr) return;
  storage_->set_data_ptr_noswap(take_buffer());
  storage_->set_nbytes(nbytes_);
}

void FlatParam::prefetch() {
  if (!config_.reshard || world_ == 1 || !ps_.distributed() || state_.load() != State::Freed) return;
  CommScope scope;
  param_access::Pause pause;
  Fetch f;
  f.buffer = take_buffer();
  // A view that does not own the buffer: the collective's thread may drop its reference after
  // the buffer has moved into the parameters' storage, and must then free nothing.
  f.out = torch::from_blob(
      f.buffer.get(), {full_.numel()}, [](void*) {}, full_.options());
  // The shard itself where no conversion is needed (a copy would cost fresh pages every
  // time): whatever writes the shard touches its gradient first, and mark_stale() then waits
  // for this gather.
  f.send = shard_.to(config_.device, config_.compute_dtype);
  std::ostringstream what;
  what << "all_gather of FSDP unit '" << name_ << "' (" << total_ << " parameters, prefetched)";
  f.what = what.str();
  ShmComm* shm = one_host_shm(ps_, f.out, f.send);
  f.seq = ps_.begin(f.what);
  try {
    torch::Tensor out = bit_view(f.out), in = bit_view(f.send);
    f.work = shm ? shm->all_gather(f.send, f.out) : compat::allgather_flat(*ps_.group, out, in);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    ps_.fail(f.what, e.what());
  }
  // Cleared at the start: a shard written from now on marks the unit stale again, and the
  // read that waits for this gather then gathers once more.
  stale_.store(false, std::memory_order_relaxed);
  fetch_ = std::move(f);
  state_.store(State::Fetching, std::memory_order_release);
}

void FlatParam::mark_stale() {
  if (state_.load() == State::Fetching) finish_fetch();
  stale_.store(true, std::memory_order_relaxed);
}

void FlatParam::finish_fetch() {
  CommScope scope;
  param_access::Pause pause;
  Fetch f = std::exchange(fetch_, Fetch());
  struct Restore {  // a failed prefetch leaves the unit freed
    FlatParam* self;
    Fetch* fetch;
    ~Restore() {
      if (!self) return;
      self->state_.store(State::Freed);
      // Left allocated: the collective that failed may still write into it.
      fetch->buffer.release_context();
    }
  } restore{this, &f};
  ps_.wait(f.work, f.what, f.seq);
  f.work.reset();
  // The buffer moves into the parameters' storage: no copy.
  storage_->set_data_ptr_noswap(std::move(f.buffer));
  storage_->set_nbytes(nbytes_);
  state_.store(State::Present, std::memory_order_release);
  restore.self = nullptr;
}

void FlatParam::gather() {
  if (state_.load() == State::Fetching) {
    finish_fetch();
    if (!stale_.load(std::memory_order_relaxed)) return;
  }
  CommScope scope;
  param_access::Pause pause;
  state_.store(State::Gathering, std::memory_order_release);
  struct Restore {  // a failed gather leaves the unit freed (the next read tries again)
    FlatParam* self;
    ~Restore() {
      if (self) self->state_.store(self->config_.reshard ? State::Freed : State::Present);
    }
  } restore{this};
  refill_storage();
  ShmComm* shm = world_ > 1 && ps_.distributed() ? one_host_shm(ps_, full_, shard_) : nullptr;
  // Gloo's send buffer may not alias the receive buffer; the shared-memory one may be the own slice.
  torch::Tensor send = aliased_ && !shm ? shard_.clone() : shard_.to(config_.device, config_.compute_dtype);
  std::ostringstream what;
  what << "all_gather of FSDP unit '" << name_ << "' (" << total_ << " parameters)";
  if (world_ == 1 || !ps_.distributed()) {
    full_.narrow(0, 0, shard_numel_).copy_(send);
  } else if (shm) {
    ps_.run(what.str(), [&](CommGroup&) { return shm->all_gather(send, full_); });
  } else {
    torch::Tensor out = bit_view(full_), in = bit_view(send);
    ps_.run(what.str(), [&](CommGroup& g) { return compat::allgather_flat(g, out, in); });
  }
  stale_.store(false, std::memory_order_relaxed);
  state_.store(State::Present, std::memory_order_release);
  restore.self = nullptr;
}

void FlatParam::release() {
  if (state_.load() == State::Fetching) finish_fetch();  // the collective must complete everywhere
  if (!config_.reshard || state_.load() != State::Present) return;
  at::DataPtr buffer = storage_->set_data_ptr(at::DataPtr(nullptr, full_.device()));
  const size_t nbytes = storage_->nbytes();
  storage_->set_nbytes(0);
  state_.store(State::Freed, std::memory_order_release);
  if (config_.pool) config_.pool->give(std::move(buffer), nbytes);  // else freed here
}

// ---- gradients ------------------------------------------------------------------------

void FlatParam::before_grad(size_t i, bool sync) {
  CommScope scope;
  param_access::Pause pause;
  auto& p = params_[i];
  if (p.storage().unsafeGetStorageImpl() != storage_) {
    throw Error(ErrorCode::InvalidState, "accelerate: parameter '" + names_[i] + "' of FSDP unit '" + name_ +
                                             "' no longer lives in the unit's flat buffer: it was replaced after "
                                             "prepare() (torch::load or set_data on a prepared model?). Load state "
                                             "with accelerator.load_model or accelerator.load_state instead");
  }
  torch::Tensor grad = p.grad();
  if (!decided_[i]) {  // first touch since the last reduction: did anybody zero the gradient?
    keep_[i] = same(grad, sentinels_[i]);
    decided_[i] = 1;
  }
  if (same(grad, sentinels_[i])) grad = torch::Tensor();
  if (!sync) {  // no_sync / accumulation: plain local gradients
    p.mutable_grad() = grad;
    return;
  }
  if (!grad_flat_.defined()) grad_flat_ = pooled_zeros(config_.grad_pool, world_ * shard_numel_, full_.options());
  auto slot = grad_flat_.narrow(0, offsets_[i], numels_[i]).view(p.sizes());
  if (grad.defined() && !same(grad, slot)) slot.copy_(grad);  // gradients accumulated locally
  p.mutable_grad() = slot;                                    // AccumulateGrad adds in place
}

bool FlatParam::after_grad(size_t i, bool sync) {
  if (sync && grad_flat_.defined()) {
    // With create_graph, AccumulateGrad replaces the gradient instead of adding in place.
    auto slot = grad_flat_.narrow(0, offsets_[i], numels_[i]);
    const auto& grad = params_[i].grad();
    if (grad.defined() && grad.data_ptr() != slot.data_ptr()) {
      CommScope scope;
      param_access::Pause pause;
      slot.copy_(grad.reshape({-1}));
    }
  }
  if (!seen_[i]) {
    seen_[i] = 1;
    ++ready_;
  }
  return ready_ == params_.size();
}

void FlatParam::end_pass() {
  std::fill(seen_.begin(), seen_.end(), 0);
  ready_ = 0;
}

void FlatParam::set_piece_grad(size_t i, const torch::Tensor& region, bool accumulate) {
  auto& piece = pieces_[i];
  if (piece.numel() == 0) return;
  torch::Tensor grad = piece.grad();
  if (grad.defined() && grad.storage().unsafeGetStorageImpl() == grad_storage()) {
    if (accumulate)
      grad.add_(region);
    else
      grad.copy_(region);
    return;
  }
  // Unset (zero_grad(set_to_none)) or replaced by the user: the shard's own slot again.
  auto slot = alias_of(grad_shard_, piece_offsets_[i], piece.numel());
  if (accumulate && grad.defined())
    slot.copy_(grad.reshape({-1}) + region);
  else
    slot.copy_(region);
  piece.mutable_grad() = slot;
}

// Moves every parameter's gradient of this pass into the flat buffer (those accumulated
// under no_sync by a parameter unused in this pass too) and returns it, in fp32.
torch::Tensor FlatParam::take_flat_grads() {
  const int64_t padded = world_ * shard_numel_;
  if (!grad_flat_.defined()) grad_flat_ = pooled_zeros(config_.grad_pool, padded, full_.options());
  for (size_t i = 0; i < params_.size(); ++i) {
    auto grad = params_[i].grad();
    if (!decided_[i]) {
      keep_[i] = same(grad, sentinels_[i]);
      decided_[i] = 1;
    }
    auto slot = grad_flat_.narrow(0, offsets_[i], numels_[i]);
    if (grad.defined() && !same(grad, sentinels_[i]) && grad.data_ptr() != slot.data_ptr())
      slot.copy_(grad.reshape({-1}));
    params_[i].mutable_grad() = torch::Tensor();
  }
  // Communicated in fp32 (Gloo has no bf16 in 1.13, and fp32 sums are more accurate).
  torch::Tensor input = grad_flat_.scalar_type() == torch::kFloat32 ? grad_flat_ : grad_flat_.to(torch::kFloat32);
  grad_flat_ = torch::Tensor();
  return input;
}

void FlatParam::reduce_grads(bool overlap) {
  CommScope scope;
  param_access::Pause pause;
  Reduction r;
  r.input = take_flat_grads();
  r.out = torch::empty({shard_numel_}, r.input.options());
  std::ostringstream what;
  what << "reduce_scatter of FSDP unit '" << name_ << "' gradients (" << total_ << " parameters)";
  r.what = what.str();
  ShmComm* shm = world_ > 1 && ps_.distributed() ? one_host_shm(ps_, r.input, r.out) : nullptr;
  r.divide = shm == nullptr;  // shared memory fuses the average into the reduction
  if (world_ == 1 || !ps_.distributed()) {
    r.out.copy_(r.input.narrow(0, 0, shard_numel_));
  } else if (shm) {
    r.seq = ps_.begin(r.what);
    try {
      r.work = shm->reduce_scatter(r.input, r.out, static_cast<double>(world_));
    } catch (const DistributedError&) {
      throw;
    } catch (const std::exception& e) {
      ps_.fail(r.what, e.what());
    }
  } else {  // Gloo's ring on 1.13 waits step by step: never in the background
    const uint64_t seq = ps_.begin(r.what);
    try {
      compat::reduce_scatter_flat(*ps_.group, r.out, r.input, rank_, world_,
                                  [&](const c10::intrusive_ptr<c10d::Work>& w) { ps_.wait(w, r.what, seq); });
    } catch (const DistributedError&) {
      throw;
    } catch (const std::exception& e) {
      ps_.fail(r.what, e.what());
    }
  }
  reduction_ = std::move(r);
  if (!overlap || !reduction_.work) finish_reduce();
}

void FlatParam::finish_reduce() {
  CommScope scope;
  param_access::Pause pause;
  Reduction r = std::exchange(reduction_, Reduction());
  if (!r.out.defined()) return;
  if (r.work) ps_.wait(r.work, r.what, r.seq);
  r.input = torch::Tensor();  // back to the pool before the pieces' copies
  torch::Tensor out = r.out;
  if (r.divide) out.div_(static_cast<double>(world_));
  if (out.device() != grad_shard_.device() || out.scalar_type() != grad_shard_.scalar_type()) {
    out = out.to(grad_shard_.device(), grad_shard_.scalar_type());
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    set_piece_grad(i, out.narrow(0, piece_offsets_[i], pieces_[i].numel()), keep_[i] != 0);
    params_[i].mutable_grad() = sentinels_[i];
    decided_[i] = 0;
  }
}

// ---- whole-unit values (state dicts) ---------------------------------------------------

torch::Tensor FlatParam::gather_master() const {
  CommScope scope;
  param_access::Pause pause;
  torch::Tensor local = shard_.to(config_.device, torch::kFloat32);
  if (aliased_) local = local.clone();
  torch::Tensor all = torch::empty({world_ * shard_numel_}, local.options());
  std::ostringstream what;
  what << "all_gather of FSDP unit '" << name_ << "' master parameters (state dict)";
  ShmComm* shm = world_ > 1 && ps_.distributed() ? one_host_shm(ps_, all, local) : nullptr;
  if (world_ == 1 || !ps_.distributed()) {
    all.copy_(local);
  } else if (shm) {
    ps_.run(what.str(), [&](CommGroup&) { return shm->all_gather(local, all); });
  } else {
    ps_.run(what.str(), [&](CommGroup& g) { return compat::allgather_flat(g, all, local); });
  }
  return all.narrow(0, 0, total_);
}

void FlatParam::load_range(const torch::Tensor& values, int64_t begin) {
  if (state_.load() == State::Fetching) finish_fetch();  // its values are about to be outdated
  CommScope scope;
  param_access::Pause pause;
  const int64_t end = begin + values.numel();
  const int64_t lo = std::max(begin, local_begin()), hi = std::min(end, local_begin() + local_valid());
  if (lo < hi) {
    shard_.narrow(0, lo - local_begin(), hi - lo)
        .copy_(values.reshape({-1}).narrow(0, lo - begin, hi - lo).to(shard_.device(), shard_.scalar_type()));
  }
  // The full parameters are gathered again before their next use.
  if (state_.load() == State::Present) {
    if (config_.reshard)
      release();
    else
      stale_.store(true);
  }
}

}  // namespace detail
}  // namespace accelerate
