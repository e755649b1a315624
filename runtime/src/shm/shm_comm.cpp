// The shared-memory all-reduce of the processes of one host (see shm_comm.h).
#include "shm/shm_comm.h"

#include "shm/shm_barrier.h"
#include "shm/shm_segment.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <unistd.h>

#include <accelerate/core/detail/env_names.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

namespace accelerate {
namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kPage = 4096;
constexpr size_t kLine = 64;  // slices start on cache lines: no false sharing between processes

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
const size_t kControlBytes = round_up(sizeof(ShmControl), kPage);

class ShmWork : public c10d::Work {
 public:
  explicit ShmWork(c10d::OpType type) : c10d::Work(-1, type) {}
  void complete(std::exception_ptr error) { finish(error); }
};

std::string cause_of(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

std::string text_of(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }
std::vector<uint8_t> bytes_of(const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); }

// "/<prefix>-<pid>-<random>": the launcher exports the prefix (and removes what starts with
// it when the job ends); the pid and random part keep names of concurrent jobs apart.
std::string segment_name() {
  std::string prefix = "accelerate";
  if (const char* p = std::getenv(env_names::kShmPrefix); p != nullptr && *p != '\0') {
    prefix = p;
    const bool ok = prefix.size() <= 120 && std::all_of(prefix.begin(), prefix.end(), [](unsigned char c) {
                      return std::isalnum(c) || c == '-' || c == '_' || c == '.';
                    });
    if (!ok) {
      throw DistributedError(std::string("accelerate: ") + env_names::kShmPrefix + "='" + prefix +
                             "' may only contain letters, digits, '-', '_' and '.' (at most 120)");
    }
  }
  std::random_device random;
  std::ostringstream os;
  os << "/" << prefix << "-" << ::getpid() << "-" << std::hex << random();
  return os.str();
}

c10d::ReduceOp gloo_op(ShmOp op) {
  switch (op) {
    case ShmOp::Max:
      return c10d::ReduceOp::MAX;
    case ShmOp::Min:
      return c10d::ReduceOp::MIN;
    case ShmOp::Sum:
      break;
  }
  return c10d::ReduceOp::SUM;
}

}  // namespace

ShmComm::ShmComm(const ShmPeers& peers, HostTopology topo)
    : topo_(std::move(topo)), rank_(peers.rank), timeout_(peers.timeout), store_(peers.store) {}

std::shared_ptr<ShmComm> ShmComm::create(const ShmPeers& peers, bool enabled) {
  try {
    auto topo = discover_hosts(*peers.store, peers.rank, peers.world_size, enabled);
    if (!topo.worth_it(peers.world_size)) return nullptr;
    std::shared_ptr<ShmComm> comm(new ShmComm(peers, std::move(topo)));
    comm->connect(peers);
    comm->worker_ = std::thread([c = comm.get()] { c->worker_loop(); });
    return comm;
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {  // e.g. the store timed out: a peer died during set-up
    throw DistributedError(peers.failure("set-up of the shared-memory all-reduce", cause_of(e)));
  }
}

ShmComm::~ShmComm() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cancel_ = true;  // a wait still in progress (its peers have gone astray) fails now
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  // A failed all-reduce between hosts may leave Gloo's threads waiting: the group's
  // destructor would join them (as ProcessState does for its own group).
  if (broken_ && leaders_) (void)leaders_.release();
}

Clock::time_point ShmComm::deadline() const { return Clock::now() + timeout_; }

// The leader creates the segment and publishes its name under a store key; the others map
// it and say so; then the leader removes the name (see shm_segment.h). A failure on any
// process is published too, so that no process waits for a segment that will not come.
std::shared_ptr<ShmSegment> ShmComm::share_segment(const std::string& suffix, size_t bytes,
                                                   const std::string& purpose) {
  const std::string key = "accelerate/shm/" + std::to_string(topo_.local_ranks[0]) + "/segment" + suffix;
  const std::string leader = "process " + std::to_string(topo_.local_ranks[0]);
  if (!topo_.leader()) {
    const std::string value = text_of(store_->get(key));
    if (value.rfind("ok ", 0) != 0) {
      std::string cause = value.substr(value.find(' ') + 1);
      const std::string own = "accelerate: shared memory: ";
      if (cause.rfind(own, 0) == 0) cause = cause.substr(own.size());
      throw DistributedError(own + leader + " could not set up the " + purpose + " (" + cause + ")");
    }
    std::shared_ptr<ShmSegment> segment;
    try {
      segment = ShmSegment::open(value.substr(3), bytes);
    } catch (const std::exception& e) {
      store_->set(key + "/opened/" + std::to_string(rank_), bytes_of(std::string("error ") + e.what()));
      throw;
    }
    store_->set(key + "/opened/" + std::to_string(rank_), bytes_of("ok"));
    return segment;
  }
  std::shared_ptr<ShmSegment> segment;
  try {
    segment = ShmSegment::create(name_ + suffix, bytes, purpose);
  } catch (const std::exception& e) {
    store_->set(key, bytes_of(std::string("error ") + e.what()));
    throw;
  }
  store_->set(key, bytes_of("ok " + segment->name()));
  for (size_t i = 1; i < topo_.local_ranks.size(); ++i) {
    const std::string opened = text_of(store_->get(key + "/opened/" + std::to_string(topo_.local_ranks[i])));
    if (opened != "ok") {
      throw DistributedError("accelerate: shared memory: process " + std::to_string(topo_.local_ranks[i]) +
                             " could not map the " + purpose + ": " + opened.substr(opened.find(' ') + 1));
    }
  }
  // Every process has it mapped: nothing can be left behind from now on. (To look at the
  // segments while a job runs, ACCELERATE_SHM_KEEP_NAMES=1 keeps the names until this
  // process exits; the launcher removes them if it is killed.)
  const char* keep = std::getenv(env_names::kShmKeepNames);
  if (keep == nullptr || std::string(keep) != "1") segment->unlink();
  return segment;
}

void ShmComm::connect(const ShmPeers& peers) {
  const int local = topo_.local_size();
  if (local > kShmMaxLocal) {
    throw DistributedError("accelerate: shared memory: " + std::to_string(local) + " processes on one host (at most " +
                           std::to_string(kShmMaxLocal) + "); set " + env_names::kShm + "=0");
  }
  if (local > 1) {
    if (topo_.leader()) name_ = segment_name();
    const size_t bytes = kControlBytes + static_cast<size_t>(local + 1) * kChunkBytes;
    control_segment_ = share_segment("", bytes, "all-reduce staging area (" + std::to_string(local) + " processes)");
    // The memory comes zeroed from tmpfs, which is the initial state of every field.
    control_ = static_cast<ShmControl*>(control_segment_->data());
    barrier_ = std::make_unique<ShmBarrier>(control_, topo_.local_ranks, topo_.local_rank, &cancel_);
    barrier_->register_self();
  }
  if (topo_.num_hosts > 1 && topo_.leader()) {
    auto store = c10::make_intrusive<c10d::PrefixStore>("accelerate/shm/leaders/", store_);
    try {
      leaders_ = peers.make_gloo_group(store, topo_.host_index, topo_.num_hosts);
    } catch (const std::exception& e) {
      throw DistributedError(peers.failure("rendezvous of the hosts' leaders (hierarchical all-reduce)", cause_of(e)));
    }
  }
}

std::optional<ShmOp> ShmComm::supported(const std::vector<at::Tensor>& tensors,
                                        const c10d::AllreduceOptions& opts) const {
  if (tensors.size() != 1) return std::nullopt;
  const auto& t = tensors[0];
  if (!t.defined() || !t.device().is_cpu() || t.layout() != c10::kStrided || !t.is_contiguous() ||
      !shm_reduce_supports(t.scalar_type())) {
    return std::nullopt;
  }
  switch (opts.reduceOp.op_) {
    case c10d::ReduceOp::SUM:
      return ShmOp::Sum;
    case c10d::ReduceOp::MAX:
      return ShmOp::Max;
    case c10d::ReduceOp::MIN:
      return ShmOp::Min;
    default:
      return std::nullopt;
  }
}

c10::intrusive_ptr<c10d::Work> ShmComm::enqueue(std::function<void()> body, c10d::OpType type) {
  auto work = c10::make_intrusive<ShmWork>(type);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(body), work});
  }
  wake_.notify_one();
  return work;
}

void ShmComm::worker_loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) {
        const auto gone = std::make_exception_ptr(ShmError("this process is shutting down"));
        for (auto& t : queue_) static_cast<ShmWork&>(*t.work).complete(gone);
        queue_.clear();
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error = broken_;
    if (!error) {
      try {
        task.body();
      } catch (const std::exception& e) {
        const std::string cause = cause_of(e);
        error = std::make_exception_ptr(ShmError(cause));
        broken_ = error;  // the barrier counts are out of step now: no later collective can run
        if (barrier_) barrier_->abort(cause);
      }
    }
    // The body holds the caller's tensors (an FSDP unit's flat gradient, its output): drop
    // them before the caller resumes, so that what it frees next is freed then, and not at
    // a moment that depends on this thread's timing (counted memory would differ by run).
    task.body = nullptr;
    static_cast<ShmWork&>(*task.work).complete(error);
  }
}

c10::intrusive_ptr<c10d::Work> ShmComm::allreduce(const at::Tensor& t, ShmOp op) {
  return enqueue([this, t, op] { run_staged(t, op); });
}

c10::intrusive_ptr<c10d::Work> ShmComm::allreduce_in_place(std::shared_ptr<ShmRegion> region, size_t offset,
                                                           int64_t numel, c10::ScalarType dtype, double divisor) {
  return enqueue(
      [this, region, offset, numel, dtype, divisor] { run_in_place(*region, offset, numel, dtype, divisor); });
}

c10::intrusive_ptr<c10d::Work> ShmComm::reduce_scatter(const at::Tensor& input, const at::Tensor& output,
                                                       double divisor) {
  // Invariants: FSDP's units call this only on one host, with buffers they made to fit.
  TORCH_CHECK(one_host(), "accelerate: shared-memory reduce_scatter needs every process on one host");
  TORCH_CHECK(input.device().is_cpu() && output.device().is_cpu() && input.is_contiguous() && output.is_contiguous() &&
                  input.scalar_type() == at::kFloat && output.scalar_type() == at::kFloat &&
                  input.numel() == output.numel() * topo_.local_size(),
              "accelerate: shared-memory reduce_scatter takes contiguous fp32 CPU tensors of world * S and S elements");
  return enqueue([this, input, output, divisor] { run_reduce_scatter(input, output, divisor); },
                 c10d::OpType::REDUCE_SCATTER);
}

c10::intrusive_ptr<c10d::Work> ShmComm::all_gather(const at::Tensor& input, const at::Tensor& output) {
  // Invariants, as reduce_scatter's.
  TORCH_CHECK(one_host(), "accelerate: shared-memory all_gather needs every process on one host");
  TORCH_CHECK(input.device().is_cpu() && output.device().is_cpu() && input.is_contiguous() && output.is_contiguous() &&
                  input.nbytes() * topo_.local_size() == output.nbytes(),
              "accelerate: shared-memory all_gather takes contiguous CPU tensors of B and world * B bytes");
  return enqueue([this, input, output] { run_all_gather(input, output); }, c10d::OpType::ALLGATHER);
}

std::shared_ptr<ShmRegion> ShmComm::allocate(size_t bytes, const std::string& purpose) {
  auto region = std::make_shared<ShmRegion>();
  region->local_rank = topo_.local_rank;
  region->slot_bytes = round_up(std::max<size_t>(bytes, 1), kPage);
  if (topo_.local_size() == 1) {
    void* p = std::aligned_alloc(kPage, region->slot_bytes);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, region->slot_bytes);
    region->owner = std::shared_ptr<void>(p, std::free);
    region->slots = {static_cast<char*>(p)};
    return region;
  }
  auto segment = share_segment("-g" + std::to_string(++regions_), region->slot_bytes * topo_.local_size(), purpose);
  for (int i = 0; i < topo_.local_size(); ++i)
    region->slots.push_back(static_cast<char*>(segment->data()) + i * region->slot_bytes);
  region->owner = segment;
  return region;
}

// This process's share [lo, hi) of `numel` elements, split on cache-line boundaries.
std::pair<int64_t, int64_t> ShmComm::my_part(int64_t numel, size_t elem) const {
  const int64_t unit = std::max<int64_t>(1, static_cast<int64_t>(kLine / elem));
  const int64_t units = (numel + unit - 1) / unit, n = topo_.local_size(), p = topo_.local_rank;
  return {std::min(numel, units * p / n * unit), std::min(numel, units * (p + 1) / n * unit)};
}

char* ShmComm::stage(int index) const {
  return static_cast<char*>(control_segment_->data()) + kControlBytes + static_cast<size_t>(index) * kChunkBytes;
}

// The leaders' all-reduce over Gloo, waited for in slices so that shutting down interrupts it.
void ShmComm::across_hosts(void* data, int64_t numel, c10::ScalarType dtype, ShmOp op) {
  std::vector<at::Tensor> tensors{at::from_blob(data, {numel}, at::TensorOptions().dtype(dtype))};
  c10d::AllreduceOptions opts;
  opts.reduceOp = gloo_op(op);
  auto work = leaders_->allreduce(tensors, opts);
  const auto end = deadline();
  for (;;) {
    try {
      if (work->wait(std::chrono::milliseconds(100))) return;
    } catch (const std::exception& e) {
      if (work->isCompleted()) {
        throw ShmError("the all-reduce between the hosts' leaders (Gloo) failed: " + cause_of(e) +
                       "; a process on another host has probably stopped: see its output");
      }
    }
    if (work->isCompleted()) throw ShmError("the all-reduce between hosts did not complete");
    if (cancel_) throw ShmError("this process is shutting down");
    if (Clock::now() >= end)
      throw ShmError("the all-reduce between the hosts' leaders did not complete within the timeout");
  }
}

void ShmComm::run_in_place(const ShmRegion& region, size_t offset, int64_t numel, c10::ScalarType dtype,
                           double divisor) {
  const size_t elem = c10::elementSize(dtype);
  const int local = topo_.local_size();
  if (local == 1) {  // the only process of its host: the leaders' all-reduce alone
    across_hosts(region.mine() + offset, numel, dtype, ShmOp::Sum);
    void* mine = region.mine() + offset;
    shm_reduce(dtype, ShmOp::Sum, {mine}, {mine}, numel, divisor);
    return;
  }
  const auto [lo, hi] = my_part(numel, elem);
  const size_t at = offset + static_cast<size_t>(lo) * elem;
  std::vector<const void*> src;
  std::vector<void*> all;
  for (char* slot : region.slots) {
    src.push_back(slot + at);
    all.push_back(slot + at);
  }
  barrier_->arrive_and_wait(deadline(), "inputs ready");
  if (topo_.num_hosts == 1) {
    shm_reduce(dtype, ShmOp::Sum, src, all, hi - lo, divisor);
    barrier_->arrive_and_wait(deadline(), "reduced");
    return;
  }
  char* leader_slot = region.slots[0] + offset;
  shm_reduce(dtype, ShmOp::Sum, src, {all[0]}, hi - lo, 1.0);
  barrier_->arrive_and_wait(deadline(), "reduced on this host");
  if (topo_.leader()) across_hosts(leader_slot, numel, dtype, ShmOp::Sum);
  barrier_->arrive_and_wait(deadline(), "reduced across hosts");
  shm_reduce(dtype, ShmOp::Sum, {all[0]}, all, hi - lo, divisor);
  barrier_->arrive_and_wait(deadline(), "copied back");
}

// Per chunk: each process publishes its input in its staging slot (all but its own slice,
// which nobody else reads), reduces its own slice from its own tensor and the others'
// slots straight into its tensor and the shared result area, and copies the other slices
// of the result out. Between hosts the whole chunk goes through the result area instead.
void ShmComm::run_staged(const at::Tensor& t, ShmOp op) {
  const c10::ScalarType dtype = t.scalar_type();
  const size_t elem = t.element_size();
  const int64_t numel = t.numel(), chunk = static_cast<int64_t>(kChunkBytes / elem);
  char* data = static_cast<char*>(t.data_ptr());
  const int local = topo_.local_size(), me = topo_.local_rank;
  const bool hierarchical = topo_.num_hosts > 1;
  char* result = local > 1 ? stage(local) : nullptr;  // no segment on a host of one process
  for (int64_t off = 0; off < numel; off += chunk) {
    const int64_t n = std::min(chunk, numel - off);
    char* part = data + static_cast<size_t>(off) * elem;
    if (local == 1) {  // the same chunks as the other hosts, so that the leaders' calls match
      across_hosts(part, n, dtype, op);
      continue;
    }
    const auto [lo, hi] = my_part(n, elem);
    const size_t lo_b = static_cast<size_t>(lo) * elem, hi_b = static_cast<size_t>(hi) * elem;
    const size_t n_b = static_cast<size_t>(n) * elem;
    std::memcpy(stage(me), part, lo_b);
    std::memcpy(stage(me) + hi_b, part + hi_b, n_b - hi_b);
    barrier_->arrive_and_wait(deadline(), "inputs copied");
    std::vector<const void*> src;
    for (int i = 0; i < local; ++i) src.push_back(i == me ? static_cast<const void*>(part + lo_b) : stage(i) + lo_b);
    // The result area is written only after the first barrier of the chunk, which every
    // process reaches after it has copied out the previous chunk's result.
    shm_reduce(dtype, op, src, {result + lo_b, part + lo_b}, hi - lo, 1.0);
    barrier_->arrive_and_wait(deadline(), hierarchical ? "reduced on this host" : "reduced");
    if (hierarchical) {
      if (topo_.leader()) across_hosts(result, n, dtype, op);
      barrier_->arrive_and_wait(deadline(), "reduced across hosts");
      std::memcpy(part, result, n_b);
      continue;
    }
    std::memcpy(part, result, lo_b);
    std::memcpy(part + hi_b, result + hi_b, n_b - hi_b);
  }
}

// Per chunk of the shard: each process publishes, in its staging slot, the chunk of every
// slice but its own (which nobody else reads), then reduces its own slice from its own
// input and the others' slots (rank order, the division fused) straight into its output.
// The second barrier keeps the slots until every process has read them.
void ShmComm::run_reduce_scatter(const at::Tensor& input, const at::Tensor& output, double divisor) {
  const int local = topo_.local_size(), me = topo_.local_rank;
  const size_t elem = sizeof(float);
  const int64_t shard = output.numel();
  // A slot holds local - 1 slices of the chunk, each starting on a cache line.
  const int64_t unit = static_cast<int64_t>(kLine / elem);
  const int64_t chunk = static_cast<int64_t>(kChunkBytes / elem) / (local - 1) / unit * unit;
  const char* in = static_cast<const char*>(input.data_ptr());
  char* out = static_cast<char*>(output.data_ptr());
  const auto at = [&](int owner, int reader) {  // where `owner`'s slot holds the slice of `reader`
    return stage(owner) + static_cast<size_t>(reader < owner ? reader : reader - 1) * chunk * elem;
  };
  for (int64_t off = 0; off < shard; off += chunk) {
    const int64_t n = std::min(chunk, shard - off);
    for (int j = 0; j < local; ++j) {
      if (j != me) std::memcpy(at(me, j), in + (j * shard + off) * elem, n * elem);
    }
    barrier_->arrive_and_wait(deadline(), "slices copied");
    std::vector<const void*> src;
    for (int i = 0; i < local; ++i) src.push_back(i == me ? in + (me * shard + off) * elem : at(i, me));
    shm_reduce(at::kFloat, ShmOp::Sum, src, {out + off * elem}, n, divisor);
    barrier_->arrive_and_wait(deadline(), "reduced");
  }
}

// Per chunk: each process copies its input's chunk into its staging slot, and after the
// barrier every process copies every other slot into its output; the second barrier keeps
// the slots until every process has read them.
void ShmComm::run_all_gather(const at::Tensor& input, const at::Tensor& output) {
  const int local = topo_.local_size(), me = topo_.local_rank;
  const size_t bytes = input.nbytes();
  const char* in = static_cast<const char*>(input.data_ptr());
  char* out = static_cast<char*>(output.data_ptr());
  for (size_t off = 0; off < bytes; off += kChunkBytes) {
    const size_t n = std::min(kChunkBytes, bytes - off);
    std::memcpy(stage(me), in + off, n);
    barrier_->arrive_and_wait(deadline(), "shards copied");
    for (int i = 0; i < local; ++i) {
      if (i != me) std::memcpy(out + i * bytes + off, stage(i), n);
    }
    barrier_->arrive_and_wait(deadline(), "gathered");
  }
  // Last: `in` may be this process's own slice of `out`, which then needs no copy.
  if (in != out + me * bytes) std::memcpy(out + me * bytes, in, bytes);
}

}  // namespace detail
}  // namespace accelerate
