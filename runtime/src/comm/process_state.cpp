// Process-group set-up (device choice, TCPStore rendezvous, Gloo / NCCL process group) and
// the waits of every collective (timeout, divergence watch, error context).
#include <accelerate/comm/detail/process_state.h>
#include <accelerate/core/detail/env_names.h>
#include <accelerate/log/logging.h>

#include "comm/collective_watch.h"
#include "comm/gloo_endpoint.h"
#include "comm/roll_call.h"
#include "comm/token_store.h"
#include "shm/shm_comm.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#if defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>

namespace accelerate {
namespace detail {
namespace {

std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream os;
  os << t.count() / 1000.0 << "s";
  return os.str();
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A collective that takes longer than this starts the divergence watch; then the watch
// looks every kPoll. Both are far below any timeout and far above a healthy collective's
// wait on an idle machine, and the fast path pays nothing for them.
constexpr milliseconds kWatchAfter{1000};
constexpr milliseconds kPoll{250};

const char* const kDivergenceAdvice =
    ". Every process must call the same collectives in the same order: a loop exit or a branch "
    "around collective work (backward, gather, reduce, wait_for_everyone, saving) that depends on "
    "a value computed per process must be decided together, e.g. `if (local_condition) "
    "accelerator.set_trigger(); if (accelerator.check_trigger()) break;`, or test a reduced value "
    "(accelerator.reduce); see docs/troubleshooting.md, \"The processes diverged\"";

// Waits up to `slice`: true when `work` has completed (its failure, if any, is thrown),
// false when the slice ran out. LibTorch's Work::wait(timeout) throws "Operation timed out!"
// when the time runs out (1.13 and 2.x); the work is still pending then, which is how that
// is told apart from the work's own failure. A `false` return is handled the same way.
bool finished(c10d::Work& work, milliseconds slice) {
  try {
    if (work.wait(slice)) return true;
  } catch (...) {
    if (work.isCompleted()) throw;
    return false;
  }
  if (work.isCompleted()) throw Error(ErrorCode::Distributed, "the collective did not complete");
  return false;
}

// c10::Error's what() carries a C++ stack trace in 1.13: keep messages to their cause.
std::string cause_of(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

std::string endpoint(const LaunchEnv& env) {
  return "MASTER_ADDR=" + env.master_addr + " MASTER_PORT=" + std::to_string(env.master_port);
}

c10::intrusive_ptr<c10d::Store> connect_store(const LaunchEnv& env, std::chrono::milliseconds timeout) {
  if (!env.store_key.empty()) {  // a job with a token: machine 0's launcher serves an authenticated store
    try {
      return c10::make_intrusive<c10d::PrefixStore>(
          env.store_prefix, c10::make_intrusive<TokenStore>(env.master_addr, env.master_port, env.store_key, timeout));
    } catch (const std::exception& e) {
      throw DistributedError("accelerate: rendezvous failed on process " + std::to_string(env.rank) + " of " +
                             std::to_string(env.world_size) + ": " + e.what());
    }
  }
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(env.master_port);
  // torchrun's agent already serves the store; otherwise process 0 does.
  opts.isServer = !env.agent_store && env.rank == 0;
  if (opts.isServer) opts.numWorkers = static_cast<std::size_t>(env.world_size);
  opts.waitWorkers = false;
  opts.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = compat::make_tcp_store(env.master_addr, opts);
  } catch (const std::exception& e) {
    const std::string cause = e.what();
    const std::string who = "process " + std::to_string(env.rank) + " of " + std::to_string(env.world_size);
    if (opts.isServer && (contains(cause, "in use") || contains(cause, "EADDRINUSE"))) {
      throw DistributedError("accelerate: rendezvous failed on " + who +
                             ": MASTER_PORT=" + std::to_string(env.master_port) +
                             " is busy on this machine (another job is using it); choose a free "
                             "port with --main_process_port / MASTER_PORT.\n  cause: " +
                             cause);
    }
    if (opts.isServer) {
      throw DistributedError("accelerate: rendezvous failed on " + who + ": cannot serve the TCPStore at " +
                             endpoint(env) + " (is MASTER_ADDR an address of this machine?).\n  cause: " + cause);
    }
    throw DistributedError("accelerate: rendezvous failed on " + who + ": cannot reach the TCPStore at " +
                           endpoint(env) + " within " + seconds(timeout) +
                           " (is process 0 running, and MASTER_ADDR reachable from here?).\n  cause: " + cause);
  }
  if (!env.store_prefix.empty()) {
    store = c10::make_intrusive<c10d::PrefixStore>(env.store_prefix, store);
  }
  return store;
}

// Gloo binds to one address per device and advertises it to every peer: the rules of
// gloo_endpoint.h choose it. Decided before the store is reached, so that a MASTER_ADDR with
// no route from here fails at once rather than after the rendezvous timeout.
GlooEndpoint gloo_endpoint(const LaunchEnv& env) {
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  try {
    return choose_gloo_endpoint(gather_endpoint_facts(
        env.master_addr, env.master_port, env.local_world_size < env.world_size, ifname != nullptr ? ifname : ""));
  } catch (const DistributedError& e) {
    throw DistributedError("accelerate: rendezvous failed on process " + std::to_string(env.rank) + " of " +
                           std::to_string(env.world_size) + ": " + e.what());
  }
}

c10::intrusive_ptr<CommGroup> gloo_group(const ProcessState& ps, const GlooEndpoint& endpoint,
                                         c10::intrusive_ptr<c10d::Store> store, int rank, int size) {
  auto opts = c10d::ProcessGroupGloo::Options::create(ps.timeout);
  for (const auto& name : endpoint.interfaces) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
  }
  if (endpoint.interfaces.empty()) {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(endpoint.address));
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(std::move(store), rank, size, opts);
}

c10::intrusive_ptr<CommGroup> make_gloo(const ProcessState& ps, const GlooEndpoint& endpoint) {
  return gloo_group(ps, endpoint, ps.store, static_cast<int>(ps.rank()), static_cast<int>(ps.world_size()));
}

// Every process signs in (host, Gloo address) and waits for the others, so that a process
// that never comes is named instead of surfacing as a timeout deep inside Gloo's set-up.
void meet(const ProcessState& ps, std::chrono::milliseconds timeout) {
  Attendee me{ps.rank(), host_name(), ps.gloo_endpoint};
  const bool report = ps.env.debug && ps.rank() == 0;
  const auto everyone =
      roll_call(*ps.store, me, ps.world_size(), timeout, endpoint(ps.env), report,
                std::string("Start every process (each machine's launcher), check that their machines reach "
                            "MASTER_ADDR, or wait longer with `accelerate launch --rdzv_timeout SECONDS` (") +
                    env_names::kRdzvTimeout + ").");
  if (report) {
    detail::runtime_log().info("all " + std::to_string(ps.world_size()) + " processes met at " + endpoint(ps.env) +
                               ": " + describe_attendees(everyone));
  }
}

c10::intrusive_ptr<CommGroup> make_nccl(const ProcessState& ps) {
#if defined(USE_C10D_NCCL)
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = ps.timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(ps.store, static_cast<int>(ps.rank()),
                                                     static_cast<int>(ps.world_size()), opts);
#else
  (void)ps;
  throw DistributedError(
      "accelerate: the nccl backend was requested but this libaccelerate was built against a "
      "LibTorch without NCCL (Debian's LibTorch is CPU-only); use backend gloo or --cpu");
#endif
}

}  // namespace

c10::intrusive_ptr<CommGroup> make_gloo_group(const ProcessState& ps, c10::intrusive_ptr<c10d::Store> store, int rank,
                                              int size) {
  // The leaders talk across hosts: the same address rules as the whole group's.
  return gloo_group(ps, gloo_endpoint(ps.env), std::move(store), rank, size);
}

c10::intrusive_ptr<c10d::Work> ProcessState::allreduce(std::vector<torch::Tensor>& tensors,
                                                       const c10d::AllreduceOptions& opts) const {
  if (shm) {
    if (auto op = shm->supported(tensors, opts)) return shm->allreduce(tensors[0], *op);
  }
  return group->allreduce(tensors, opts);
}

c10::ScalarType comm_dtype(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Half:
      return c10::ScalarType::Float;
    case c10::ScalarType::Bool:
      return c10::ScalarType::Byte;
    default:
      return dtype;
  }
}

void broadcast_tensors(const ProcessState& ps, const std::vector<torch::Tensor>& tensors, int root,
                       const std::string& what) {
  CommScope scope;
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (const auto& t : tensors) {
    if (t.defined() && t.numel() > 0) by_dtype[comm_dtype(t.scalar_type())].push_back(t);
  }
  for (auto& [dtype, group] : by_dtype) {
    std::vector<torch::Tensor> parts;
    for (auto& t : group) parts.push_back(t.reshape({-1}).to(dtype));
    std::vector<torch::Tensor> flat{torch::cat(parts)};
    ps.run(what, [&](CommGroup& g) {
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      return g.broadcast(flat, opts);
    });
    int64_t offset = 0;
    for (auto& t : group) {
      t.copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

std::string ProcessState::failure_message(const std::string& what, const std::string& cause) const {
  std::ostringstream os;
  os << "accelerate: " << what << " failed on process " << rank() << " of " << world_size() << " (ranks 0.."
     << world_size() - 1 << ", " << backend << ", timeout " << seconds(timeout) << "): " << cause;
  return os.str();
}

void ProcessState::fail(const std::string& what, const std::string& cause) const {
  throw DistributedError(failure_message(what, cause));
}

namespace {

// The view of this process that the shared-memory all-reduce gets (shm/ is below comm/).
// Only used while ShmComm::create runs, so capturing `ps` by reference is safe.
ShmPeers shm_peers(const ProcessState& ps) {
  ShmPeers peers;
  peers.store = ps.store;
  peers.rank = ps.rank();
  peers.world_size = ps.world_size();
  peers.timeout = ps.timeout;
  peers.make_gloo_group = [&ps](c10::intrusive_ptr<c10d::Store> store, int rank, int size) {
    return make_gloo_group(ps, std::move(store), rank, size);
  };
  peers.failure = [&ps](const std::string& what, const std::string& cause) { return ps.failure_message(what, cause); };
  return peers;
}

}  // namespace

ProcessState::~ProcessState() {
  if (broken_) (void)group.release();  // see fail_broken
}

void ProcessState::fail_broken(const std::string& what, const std::string& cause) const {
  {
    std::lock_guard<std::mutex> lock(broken_mutex_);
    if (!broken_) broken_cause_ = what + ": " + cause;
    broken_ = true;
  }
  fail(what, cause);
}

void ProcessState::defer_error(const std::string& message) const {
  std::lock_guard<std::mutex> lock(broken_mutex_);
  if (!deferred_) deferred_message_ = message;  // the first failure is the cause
  deferred_ = true;
}

uint64_t ProcessState::begin(const std::string& what) const {
  if (deferred_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(broken_mutex_);
    if (deferred_.exchange(false)) throw DistributedError(std::exchange(deferred_message_, std::string()));
  }
  if (broken_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(broken_mutex_);
    fail(what, "not started: an earlier collective failed and left the process group unusable (" + broken_cause_ + ")");
  }
  return watch ? watch->begin(what) : 0;
}

void ProcessState::wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, uint64_t seq) const {
  const auto deadline = Clock::now() + timeout;
  try {
    if (!watch) {
      if (!work->wait(timeout)) fail(what, "the collective did not complete");
      return;
    }
    if (finished(*work, std::min(kWatchAfter, timeout))) return;  // the fast path
    wait_watched(*work, what, seq, deadline);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    fail(what, cause_of(e));
  }
}

void ProcessState::wait_watched(c10d::Work& work, const std::string& what, uint64_t seq,
                                Clock::time_point deadline) const {
  watch->publish(seq, what);
  struct Unpublish {  // the key must not go on saying "waiting" once this wait is over
    CollectiveWatch* watch;
    ~Unpublish() {
      if (watch) watch->clear();
    }
  } unpublish{watch.get()};
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) {
      fail_broken(what, "the collective did not complete within the timeout (" + seconds(timeout) + "; " +
                            env_names::kTimeoutSeconds + " or AcceleratorOptions::timeout sets it)");
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
    if (finished(work, std::min(kPoll, left))) return;
    if (auto divergence = watch->find_divergence(seq, what)) {
      unpublish.watch = nullptr;  // the key now says "aborted"
      fail_broken(what, "the processes diverged: " + *divergence + kDivergenceAdvice);
    }
  }
}

void check_one_gpu_per_process(int64_t local_processes, int64_t gpus) {
  if (local_processes <= gpus) return;
  throw DistributedError("accelerate: " + std::to_string(local_processes) + " processes on this machine would share " +
                         std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs") +
                         ", but the nccl backend needs a GPU of its own for each process; start at most " +
                         std::to_string(gpus) + " per machine (--num_processes), or train on CPU (--cpu)");
}

std::shared_ptr<ProcessState> create_process_state(const AcceleratorOptions& options, const LaunchEnv& env) {
  auto ps = std::make_shared<ProcessState>();
  ps->env = env;
  ps->options = options;
  ps->timeout = *options.timeout();
  const bool cuda = !*options.cpu() && torch::cuda::is_available();
  if (cuda) {
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    ps->device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % count));
    c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).setDevice(ps->device);
  }
  if (!env.distributed()) return ps;

  ps->backend = *options.backend();
  if (ps->backend != "gloo" && ps->backend != "nccl") {
    throw DistributedError("accelerate: unknown process group backend '" + ps->backend + "' (expected gloo or nccl)");
  }
  if (ps->backend == "nccl" && !cuda) {
    throw DistributedError("accelerate: backend nccl needs CUDA, but this process runs on CPU");
  }
  if (ps->backend == "nccl") check_one_gpu_per_process(env.local_world_size, torch::cuda::device_count());
  // The rendezvous waits at most 600 s by default (torchrun's join timeout), never longer
  // than a collective may.
  const auto rdzv_timeout =
      env.rdzv_timeout ? *env.rdzv_timeout : std::min(ps->timeout, std::chrono::milliseconds(std::chrono::minutes(10)));
  GlooEndpoint gloo;
  if (ps->backend == "gloo") {
    gloo = gloo_endpoint(env);
    ps->gloo_endpoint = gloo.describe();
    if (env.debug) {
      detail::runtime_log().info("on " + host_name() + ": Gloo on " + gloo.describe() + " (" + gloo.reason + ")",
                                 LogScope::all_processes);
    }
  }
  ps->store = connect_store(env, rdzv_timeout);
  meet(*ps, rdzv_timeout);
  ps->store->setTimeout(ps->timeout);
  // Gloo's waits block until the collective is done, so a long wait means a stuck one. (A
  // NCCL wait returns once the GPU streams are ordered, and in blocking-wait mode a wait
  // that runs out aborts the communicator: no short waits there.) Announced before the
  // group exists: no process can wait in a collective before every key is there.
  if (ps->backend == "gloo") {
    ps->watch = std::make_shared<CollectiveWatch>(ps->store, ps->rank(), ps->world_size());
    ps->watch->announce();
  }
  try {
    ps->group = ps->backend == "nccl" ? make_nccl(*ps) : make_gloo(*ps, gloo);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    // Each process advertises its own address: one that another machine cannot reach
    // (e.g. 127.x in "connect [127.0.0.1]:...") was chosen on that machine.
    const std::string advertised = gloo.reason.empty()
                                       ? ""
                                       : ". This process gave Gloo " + gloo.describe() + " (" + gloo.reason +
                                             "); an address in the error above is the one the peer process gave on its "
                                             "machine (GLOO_SOCKET_IFNAME or MASTER_ADDR there chooses it)";
    ps->fail(ps->backend + " process group rendezvous at " + endpoint(env), cause_of(e) + advertised);
  }
  // Every process takes part, also one that turned shared memory off: all of them then use Gloo.
  if (ps->backend == "gloo" && ps->device.is_cpu()) {
    ps->shm = ShmComm::create(shm_peers(*ps), *options.shared_memory());
  }
  return ps;
}

}  // namespace detail
}  // namespace accelerate
