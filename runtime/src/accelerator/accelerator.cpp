// Accelerator: the facade. Construction from environment + options, the subsystem objects it
// owns (Impl), preparation and the training step; the other concerns are in the files of
// this room, each through the subsystem objects it needs (docs/dev/architecture.md).
#include "accelerator/prepared_objects.h"
#include "accelerator/step_trace.h"
#include "accelerator/work_report.h"
#include "checkpoint/checkpoint_registry.h"
#include "comm/grad_sync.h"
#include "comm/gradient_state.h"
#include "data/shared_generators.h"
#include "fsdp/sharded_models.h"
#include "launch/resolve_options.h"
#include "memory/memory_stats.h"
#include "tracking/tracker_run.h"

#include <accelerate/accelerator/accelerator.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/comm/detail/process_state.h>
#include <accelerate/core/detail/env_names.h>
#include <accelerate/log/logging.h>
#include <accelerate/precision/precision.h>

#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <mutex>

namespace accelerate {
namespace {

std::atomic<Accelerator*> g_current{nullptr};

// The work of the Accelerators of this process already destroyed (a program may make more
// than one): the report is the process's, not one Accelerator's.
detail::WorkCounts& finished_work() {
  static detail::WorkCounts counts;
  return counts;
}

// At exit the Accelerator still alive (a program that ends with std::exit, or one whose
// Accelerator is never destroyed) reports too; a destroyed one has reported already.
void report_work_at_exit() {
  if (Accelerator* acc = g_current.load()) {
    detail::AcceleratorAccess::trace_last_step(*acc);
    detail::AcceleratorAccess::report_work(*acc, false);
  }
}

// Loggers' in_order scope takes turns through this group's barrier (weak: the state may be
// gone when a static destructor logs).
void lend_log_barrier(const std::shared_ptr<detail::ProcessState>& state) {
  const std::weak_ptr<detail::ProcessState> weak = state;
  detail::set_log_process(LogProcess{state->rank(), state->world_size(), [weak] {
                                       const auto ps = weak.lock();
                                       if (ps == nullptr || !ps->distributed()) return;
                                       detail::CommScope scope;
                                       ps->run("barrier (in_order logging)",
                                               [](detail::CommGroup& g) { return g.barrier(c10d::BarrierOptions()); });
                                     }});
}

// The process state and this Accelerator's options, resolved once: the given ones over the
// environment, with the first Accelerator's device and process group.
struct OpenedProcess {
  std::shared_ptr<detail::ProcessState> ps;
  detail::ResolvedOptions resolved;
};

// The one process state: a second Accelerator in the same process reuses the process group
// (a TCPStore rendezvous can only happen once per launch) and runs with the first one's
// device, backend, timeout and shared memory.
OpenedProcess open_process(const AcceleratorOptions& given) {
  static std::mutex mutex;
  static std::shared_ptr<detail::ProcessState> state;
  std::lock_guard<std::mutex> lock(mutex);
  if (state) {
    detail::ResolvedOptions resolved = detail::resolve_options(given, state->env);
    const AcceleratorOptions& first = state->options;
    resolved.options.cpu(first.cpu())
        .backend(first.backend())
        .timeout(first.timeout())
        .shared_memory(first.shared_memory());
    return {state, std::move(resolved)};
  }
  const LaunchEnv env = parse_launch_env(current_environment());
  if (!env.note.empty()) detail::runtime_log().info(env.note);
  detail::ResolvedOptions resolved = detail::resolve_options(given, env);
  state = detail::create_process_state(resolved.options, env);
  detail::share_default_generators(*state);  // once per process, with the rendezvous
  lend_log_barrier(state);
  return {state, std::move(resolved)};
}

}  // namespace

// The subsystem objects the Accelerator owns, nothing else: each is reached through its own
// accessor (accelerator.h), and the files of one concern use only those they need. This
// struct stays (rather than members of Accelerator) so that accelerator.h need not include
// the subsystems' private headers and their layout can change without users recompiling.
struct Accelerator::Impl {
  // In this order, as construction reads and checks them: the process group, the options,
  // mixed precision (throws for fp16 without fp16 autocast, on CPU), then FSDP's settings.
  explicit Impl(const AcceleratorOptions& given) : Impl(given, open_process(given)) {}
  Impl(const AcceleratorOptions& given, OpenedProcess opened)
      : ps(std::move(opened.ps)),
        options(std::move(opened.resolved.options)),
        settings(opened.resolved.settings),
        precision(*settings.mixed_precision, ps->device),
        gradients(*options.gradient_accumulation_steps()),
        sharded(resolve_fsdp(given.fsdp_plugin(), ps->env.use_fsdp, ps->env.fsdp)),
        checkpoint{options.project_config(), {}, {}},
        trace(detail::StepTrace::of_process(ps->env.rank, ps->env.world_size)) {}

  std::shared_ptr<detail::ProcessState> ps;  // shared by every Accelerator of the process
  // The options as options() shows them; the library reads mixed_precision and split_batches
  // from `settings`, decided once with them (resolve_options), not from these copies.
  AcceleratorOptions options;
  LaunchSettings settings;
  MixedPrecision precision;                                   // autocast, fp16 loss scaling (precision_accelerator.cpp)
  detail::GradientState gradients;                            // accumulation, no_sync, sync_gradients
  detail::PreparedObjects prepared;                           // models, optimizers, schedulers, the loader's state
  std::vector<std::unique_ptr<detail::GradSync>> grad_syncs;  // replicated models (this file)
  detail::ShardedModels sharded;                              // FSDP settings and sharded models (accelerator_fsdp.cpp)
  detail::CheckpointRegistry checkpoint;                      // save_state / load_state (checkpoint_state.cpp)
  detail::TrackerRun trackers;                                // init_trackers / log (tracking_accelerator.cpp)
  // The facade's own small state (this file only): set_trigger, set_seed, shared_seed.
  bool trigger = false;
  std::optional<uint64_t> seed;
  std::optional<uint64_t> shared_seed;
  detail::WorkCounts work;                        // the work report (work_report.h); samples are in the loader state
  detail::StepTrace& trace;                       // the process's step trace (step_trace.h), usually disabled
  int64_t traced_samples = 0, traced_padded = 0;  // this Accelerator's counts at its last traced step
  // Per watched optimizer or model (watched()): a hash of its parameters' bytes when the trace
  // last looked (StepTrace::contents), which a step the program took itself changes, and the
  // parameters (handles sharing their storage): the last look, when the Accelerator ends, must
  // not reach an optimizer the program may have destroyed before it.
  struct Watched {
    uint64_t hash = 0;
    std::vector<torch::Tensor> params;
  };
  std::map<const void*, Watched> traced_contents;
  // The samples counted at the last backward pass: a step seen at the next pass is charged
  // these, not the batch the loader has yielded since (the next step's).
  int64_t samples_at_backward = 0, padded_at_backward = 0;
  // The last process_share() since the previous backward pass (hand-made batches).
  struct ShareNote {
    int64_t real = 0, padded = 0, step_real = 0;
  };
  std::optional<ShareNote> pending_share;
  // The last process_share() at all: batch_mean weighs a metric of it by its real rows after
  // the backward pass has consumed pending_share (a loss printed after the step).
  std::optional<ShareNote> last_share;
};

Accelerator::Accelerator(AcceleratorOptions options) {
  detail::memory_stats::check_environment();  // before the rendezvous, as the other options
  impl_ = std::make_unique<Impl>(options);
  detail::memory_stats::on_accelerator(*impl_->ps);  // counted memory: rank, the staging area
  g_current = this;
  static const bool at_exit = std::atexit(report_work_at_exit) == 0;
  (void)at_exit;
}

Accelerator::~Accelerator() {
  detail::AcceleratorAccess::trace_last_step(*this);
  detail::AcceleratorAccess::report_work(*this, true);
  Accelerator* self = this;
  g_current.compare_exchange_strong(self, nullptr);
}

void detail::AcceleratorAccess::report_work(Accelerator& acc, bool finished) {
  detail::WorkCounts mine = acc.impl_->work;
  const LoaderState& loader = acc.loader_state();
  mine.samples += loader.samples;
  mine.padded_samples += loader.padded_samples;
  detail::WorkCounts total = finished_work();
  total += mine;
  if (finished) finished_work() = total;
  write_work_report(acc.process_index(), acc.num_processes(), total);
}

namespace {

std::vector<torch::Tensor> params_of(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    params.insert(params.end(), group.params().begin(), group.params().end());
  }
  return params;
}

// What the step trace watches for steps the program takes itself: each prepared optimizer's
// parameters, or, when it prepared none, each prepared model's: an optimizer accel-migrate
// could not prepare (a member made after its class is constructed) still steps a prepared
// model (e2e.trainer_class wrote no line before). Keyed by the object's address.
std::vector<std::pair<const void*, std::vector<torch::Tensor>>> watched(const detail::PreparedObjects& prepared) {
  std::vector<std::pair<const void*, std::vector<torch::Tensor>>> out;
  for (const auto* optimizer : prepared.optimizers()) out.emplace_back(optimizer, params_of(*optimizer));
  if (!out.empty()) return out;
  for (const auto* model : prepared.models()) out.emplace_back(model, model->parameters());
  return out;
}

}  // namespace

void detail::AcceleratorAccess::trace_line(Accelerator& acc, const std::vector<torch::Tensor>& params,
                                           bool seen_later) {
  auto& impl = *acc.impl_;
  const LoaderState& loader = acc.loader_state();
  const int64_t samples = seen_later ? impl.samples_at_backward : impl.work.samples + loader.samples;
  const int64_t padded = seen_later ? impl.padded_at_backward : impl.work.padded_samples + loader.padded_samples;
  impl.trace.on_step(params, samples - impl.traced_samples, padded - impl.traced_padded,
                     impl.sharded.settings().shards());
  impl.traced_samples = samples;
  impl.traced_padded = padded;
}

void detail::AcceleratorAccess::count_optimizer_step(Accelerator& acc, const torch::optim::Optimizer& optimizer) {
  auto& impl = *acc.impl_;
  ++impl.work.optimizer_steps;
  if (!impl.trace.enabled()) return;   // the one branch a step when nobody traces
  trace_steps_taken(acc, &optimizer);  // other optimizers' own steps before this step's line
  const auto params = params_of(optimizer);
  trace_line(acc, params, false);
  const auto seen = impl.traced_contents.find(&optimizer);
  if (seen != impl.traced_contents.end()) seen->second.hash = detail::StepTrace::contents(params);
}

// Called before each backward pass: a step the program took since the previous one has left
// the parameters changed (gradient accumulation's backward passes without a step do not).
// The first look at an object only records its hash; `stepping` (stepped through
// optimizer_step, which writes its own line) is left out. A program's last step is seen at
// the end of its loader's epoch (loader_epoch_end), or, with no prepared loader, when the
// Accelerator ends (trace_last_step).
void detail::AcceleratorAccess::trace_steps_taken(Accelerator& acc, const torch::optim::Optimizer* stepping) {
  auto& impl = *acc.impl_;
  for (const auto& [object, params] : watched(impl.prepared)) {
    const uint64_t now = detail::StepTrace::contents(params);
    auto [seen, first] = impl.traced_contents.emplace(object, Accelerator::Impl::Watched{now, params});
    if (first || seen->second.hash == now || object == stepping) continue;
    trace_line(acc, params, true);
    seen->second.hash = now;
  }
  const LoaderState& loader = acc.loader_state();
  impl.samples_at_backward = impl.work.samples + loader.samples;
  impl.padded_at_backward = impl.work.padded_samples + loader.padded_samples;
}

int64_t detail::AcceleratorAccess::backward_calls(const Accelerator& acc) { return acc.impl_->work.backward_calls; }

void detail::AcceleratorAccess::loader_epoch_end(Accelerator& acc) {
  if (acc.impl_->trace.enabled()) trace_steps_taken(acc);
}

// Only after a backward pass that no line has taken yet: parameters changed without one (a
// checkpoint loaded into the model after training) are no step. The stored parameters, not
// the optimizer: it may be gone (declared after the Accelerator, destroyed before it).
void detail::AcceleratorAccess::trace_last_step(Accelerator& acc) {
  auto& impl = *acc.impl_;
  if (!impl.trace.enabled() || !impl.trace.backward_pending()) return;
  for (auto& [object, watched] : impl.traced_contents) {
    const uint64_t now = detail::StepTrace::contents(watched.params);
    if (watched.hash == now) continue;
    trace_line(acc, watched.params, true);
    watched.hash = now;
  }
}

void detail::AcceleratorAccess::note_share(Accelerator& acc, int64_t real, int64_t padded, int64_t step_real) {
  acc.impl_->pending_share = Accelerator::Impl::ShareNote{real, padded, step_real};
  acc.impl_->last_share = acc.impl_->pending_share;
}

int64_t detail::AcceleratorAccess::share_real_rows(const Accelerator& acc, int64_t rows) {
  const auto& s = acc.impl_->last_share;
  return s && rows == s->real + s->padded ? s->real : -1;
}

// ---- the subsystem objects (accelerator.h) ----------------------------------------------
const detail::ProcessState& Accelerator::process() const { return *impl_->ps; }
const MixedPrecision& Accelerator::precision_state() const { return impl_->precision; }
MixedPrecision& Accelerator::precision() { return impl_->precision; }
detail::GradientState& Accelerator::gradient_state() { return impl_->gradients; }
const detail::GradientState& Accelerator::gradient_state() const { return impl_->gradients; }
detail::PreparedObjects& Accelerator::prepared_objects() { return impl_->prepared; }
detail::ShardedModels& Accelerator::sharded_models() { return impl_->sharded; }
const detail::ShardedModels& Accelerator::sharded_models() const { return impl_->sharded; }
detail::CheckpointRegistry& Accelerator::checkpoint_registry() { return impl_->checkpoint; }
detail::TrackerRun& Accelerator::tracker_run() { return impl_->trackers; }

Accelerator& Accelerator::current() {
  Accelerator* acc = g_current.load();
  if (acc == nullptr) {
    throw Error(ErrorCode::InvalidState,
                "accelerate::Accelerator::current(): no Accelerator exists in this process yet; "
                "construct one first (accelerate::Accelerator accelerator;)");
  }
  return *acc;
}

bool Accelerator::exists() { return g_current.load() != nullptr; }

// ---- process state --------------------------------------------------------------------
torch::Device Accelerator::device() const { return impl_->ps->device; }
int64_t Accelerator::process_index() const { return impl_->ps->env.rank; }
int64_t Accelerator::local_process_index() const { return impl_->ps->env.local_rank; }
int64_t Accelerator::num_processes() const { return impl_->ps->env.world_size; }
bool Accelerator::is_main_process() const { return process_index() == 0; }
bool Accelerator::is_local_main_process() const { return local_process_index() == 0; }
DistributedType Accelerator::distributed_type() const {
  if (!impl_->ps->distributed()) return DistributedType::No;
  if (impl_->sharded.settings().enabled) return DistributedType::FSDP;
  return impl_->ps->device.is_cuda() ? DistributedType::MultiGPU : DistributedType::MultiCPU;
}
const AcceleratorOptions& Accelerator::options() const { return impl_->options; }
std::string Accelerator::mixed_precision() const { return *impl_->options.mixed_precision(); }
int64_t Accelerator::gradient_accumulation_steps() const { return impl_->gradients.accumulation_steps(); }
const LoaderState& Accelerator::loader_state() const { return impl_->prepared.loader(); }

LoaderState& detail::AcceleratorAccess::loader_state(Accelerator& acc) { return acc.prepared_objects().loader(); }
detail::ProcessState& detail::AcceleratorAccess::process_state(Accelerator& acc) { return *acc.impl_->ps; }
const LaunchSettings& detail::AcceleratorAccess::launch_settings(const Accelerator& acc) { return acc.impl_->settings; }

GradSyncStats Accelerator::grad_sync_stats() const {
  GradSyncStats stats;
  for (const auto& sync : impl_->grad_syncs) {
    ++stats.models;
    stats.buckets += static_cast<int64_t>(sync->num_buckets());
    stats.passes += sync->passes();
    stats.launched_during_backward += sync->launched_during_backward();
    stats.launched_at_end += sync->launched_at_end();
    stats.shared_memory_models += sync->shared_memory() ? 1 : 0;
    stats.copied_gradients += sync->copied_gradients();
    stats.copy_seconds += sync->copy_seconds();
    stats.wait_seconds += sync->wait_seconds();
  }
  return stats;
}

void Accelerator::wait_for_everyone() {
  if (!impl_->ps->distributed()) return;
  detail::CommScope scope;
  impl_->ps->run("barrier (wait_for_everyone)", [](detail::CommGroup& g) { return g.barrier(c10d::BarrierOptions()); });
}

void Accelerator::set_trigger() { impl_->trigger = true; }

bool Accelerator::check_trigger() {
  auto& ps = *impl_->ps;
  bool any = impl_->trigger;
  if (ps.distributed()) {
    detail::CommScope scope;
    std::vector<torch::Tensor> flag{
        torch::full({1}, any ? 1 : 0, torch::TensorOptions(torch::kInt32).device(ps.device))};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::MAX;
    ps.run("all_reduce of the trigger (check_trigger)", [&](detail::CommGroup&) { return ps.allreduce(flag, opts); });
    any = flag[0].item<int32_t>() != 0;
  }
  if (any) impl_->trigger = false;
  return any;
}

MainProcessFirst Accelerator::main_process_first() { return MainProcessFirst(*this, false); }
MainProcessFirst Accelerator::local_main_process_first() { return MainProcessFirst(*this, true); }

MainProcessFirst::MainProcessFirst(Accelerator& acc, bool local)
    : acc_(&acc), local_(local), uncaught_(std::uncaught_exceptions()) {
  const bool main = local ? acc.is_local_main_process() : acc.is_main_process();
  if (!main) acc.wait_for_everyone();  // the others wait until the main one is done
}

MainProcessFirst::MainProcessFirst(MainProcessFirst&& other) noexcept
    : acc_(other.acc_), local_(other.local_), uncaught_(other.uncaught_) {
  other.acc_ = nullptr;
}

void MainProcessFirst::done() {
  Accelerator* acc = std::exchange(acc_, nullptr);
  if (acc == nullptr) return;
  const bool main = local_ ? acc->is_local_main_process() : acc->is_main_process();
  if (main) acc->wait_for_everyone();  // releases the others, waiting in the constructor
}

MainProcessFirst::~MainProcessFirst() noexcept {
  // Unwinding an exception of the section: a barrier now could only hang or fail.
  if (acc_ == nullptr || std::uncaught_exceptions() > uncaught_) return;
  Accelerator* acc = acc_;
  try {
    done();
  } catch (const std::exception& e) {
    // A destructor must not throw: report now, and let the next collective throw it.
    detail::runtime_log().error(std::string("main_process_first: ") + e.what() + " (the next collective throws it)",
                                LogScope::all_processes);
    detail::AcceleratorAccess::process_state(*acc).defer_error(e.what());
  }
}

// ---- preparation ----------------------------------------------------------------------
void Accelerator::prepare_model(torch::nn::Module& module) {
  // Counted memory: the gradient buckets it may map (accelerate/memory.h), on every return.
  detail::memory_stats::SharedMemorySample sample(*impl_->ps);
  if (!impl_->prepared.add_model(module)) return;  // prepared already
  module.to(device());
  impl_->precision.on_prepare_model(module);  // autocast on for this thread under bf16/fp16
  auto& ps = *impl_->ps;
  if (!ps.distributed()) return;

  // Identical start on every process: parameters and buffers from process 0.
  std::vector<torch::Tensor> tensors = module.parameters();
  const std::vector<torch::Tensor> buffers = module.buffers();
  tensors.insert(tensors.end(), buffers.begin(), buffers.end());
  detail::broadcast_tensors(ps, tensors, 0, "broadcast of the model's parameters and buffers from process 0");

  if (impl_->sharded.settings().shards()) {  // SHARD_GRAD_OP / FULL_SHARD: accelerator_fsdp.cpp
    prepare_sharded_model(module, buffers);
    return;
  }
  std::vector<torch::Tensor> params;
  for (auto& p : module.parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  if (params.empty()) return;
  const auto& options = impl_->options;
  impl_->grad_syncs.push_back(std::make_unique<detail::GradSync>(
      ps, std::move(params), options.broadcast_buffers() ? buffers : std::vector<torch::Tensor>{},
      options.first_bucket_cap_mb(), options.bucket_cap_mb(), impl_->gradients.communicate_flag(),
      detail::grad_sync_overlap()));
  if (impl_->trace.enabled() && std::getenv(env_names::kTraceDetail) != nullptr) {  // --detail only
    detail::StepTrace* trace = &impl_->trace;
    impl_->grad_syncs.back()->observe_local_grads(
        [trace](const torch::Tensor& param, const torch::Tensor& grad) { trace->on_local_grad(param, grad); });
  }
}

void Accelerator::prepare_optimizer(torch::optim::Optimizer& optimizer) {
  impl_->prepared.add_optimizer(optimizer);
  // Sharded models' parameters become their shards in the optimizer (accelerator_fsdp.cpp).
  for (const auto& model : impl_->sharded.models()) model->shard_optimizer(optimizer);
  impl_->precision.on_prepare_optimizer(optimizer);
}

void Accelerator::prepare_scheduler(torch::optim::LRScheduler& scheduler) { impl_->prepared.add_scheduler(scheduler); }

// ---- training step --------------------------------------------------------------------
namespace {

// The factor a process's loss is multiplied by so that the gradient all-reduce (a mean over
// the processes, for DDP's buckets as for FSDP's reduce-scatter) yields the one-process
// gradient of the global step. For a mean-reduced loss over `real` samples, the step's
// gradient is sum_p real_p * g_p / step_real, and the all-reduce computes
// sum_p w_p * g_p / N: so w_p = N * real_p / step_real. It is 1 exactly whenever every
// process holds its equal share (every step but a short last one), and the caller then
// leaves the loss untouched, bit for bit. For a sum-reduced loss the all-reduce must give
// the sum: w_p = N, and 0 for a process whose batch holds only padding. Scaling the loss
// rather than the gradients keeps this right under accumulation (no_sync passes add local
// gradients, each already weighted) and for every synchronisation path alike.
double loss_weight(int64_t real, int64_t step_real, int64_t num_processes, LossReduction reduction) {
  const bool known = real >= 0 && step_real > 0;
  if (reduction == LossReduction::Sum) {
    if (known && real == 0) return 0.0;
    return static_cast<double>(num_processes);
  }
  if (!known || real * num_processes == step_real) return 1.0;
  return static_cast<double>(num_processes * real) / static_cast<double>(step_real);
}

}  // namespace

// What this backward pass's batch holds: the active prepared loader's batch, else the last
// process_share() since the previous backward pass (hand-made batches), else not known.
std::pair<int64_t, int64_t> Accelerator::current_share() {
  const LoaderState& loader = loader_state();
  std::pair<int64_t, int64_t> share{-1, -1};
  if (loader.active && loader.batch_real >= 0) {
    share = {loader.batch_real, loader.step_real};
  } else if (impl_->pending_share) {
    const auto& p = *impl_->pending_share;
    share = {p.real, p.step_real};
    impl_->work.samples += p.real;  // counted once per backward pass, not per sliced tensor
    impl_->work.padded_samples += p.padded;
  }
  impl_->pending_share.reset();
  return share;
}

void Accelerator::backward(const torch::Tensor& loss, LossReduction reduction) {
  const auto [real, step_real] = current_share();
  backward_weighted(loss, {}, c10::nullopt, false, loss_weight(real, step_real, num_processes(), reduction));
}

void Accelerator::backward(const torch::Tensor& loss, const torch::Tensor& gradient, c10::optional<bool> retain_graph,
                           bool create_graph) {
  const auto [real, step_real] = current_share();
  backward_weighted(loss, gradient, retain_graph, create_graph,
                    loss_weight(real, step_real, num_processes(), LossReduction::Mean));
}

void Accelerator::backward_weighted(const torch::Tensor& loss, const torch::Tensor& gradient,
                                    c10::optional<bool> retain_graph, bool create_graph, double weight) {
  // Mixed precision: backward and gradient communication run with autocast off; under fp16
  // the loss (or the given gradient) is scaled and the gradients are unscaled afterwards.
  AutocastGuard no_autocast(false);
  auto& mp = impl_->precision;
  const auto& gradients = impl_->gradients;
  ++impl_->work.backward_calls;
  if (impl_->trace.enabled()) {
    detail::AcceleratorAccess::trace_steps_taken(*this);  // optimizer.step() calls since the last pass
    impl_->trace.on_backward(loss);
  }
  mp.before_backward();
  torch::Tensor scaled = loss;
  if (gradients.accumulation_steps() > 1) scaled = scaled / static_cast<double>(gradients.accumulation_steps());
  torch::Tensor grad = gradient;
  if (weight != 1.0) {  // 1 on every even step: no multiply, the even case stays bit-exact
    if (grad.defined()) {
      grad = grad * weight;
    } else {
      scaled = scaled * weight;
    }
  }
  if (grad.defined()) {
    grad = mp.scale_loss(grad).to(gradient.scalar_type());
  } else {
    scaled = mp.scale_loss(scaled);
  }
  scaled.backward(grad, retain_graph, create_graph);
  // The engine callback has already synchronised; this covers a backward pass that never
  // reached a hook-carrying node's callback (no-op otherwise).
  for (auto& sync : impl_->grad_syncs) sync->finalize();
  for (const auto& model : impl_->sharded.models()) model->finalize();
  mp.finish_backward(gradients.communicate() && gradients.sync_gradients());
  if (impl_->trace.wants_grads()) {  // --detail: the gradients the next step will use
    for (const auto& watched_object : watched(impl_->prepared)) impl_->trace.on_backward_done(watched_object.second);
  }
}

SyncGuard::SyncGuard(Accelerator& acc, bool sync) : acc_(&acc), previous_(acc.gradient_state().communicate()) {
  acc.gradient_state().set_communicate(previous_ && sync);
}

SyncGuard::SyncGuard(SyncGuard&& other) noexcept : acc_(other.acc_), previous_(other.previous_) {
  other.acc_ = nullptr;
}

SyncGuard::~SyncGuard() {
  if (acc_ != nullptr) acc_->gradient_state().set_communicate(previous_);
}

SyncGuard Accelerator::no_sync() { return SyncGuard(*this, false); }

SyncGuard Accelerator::accumulate() {
  const bool sync = impl_->gradients.begin_accumulation_step(impl_->prepared.loader().end_of_dataloader);
  return SyncGuard(*this, sync);
}

bool Accelerator::sync_gradients() const { return impl_->gradients.sync_gradients(); }
void Accelerator::set_sync_gradients(bool sync) { impl_->gradients.set_sync_gradients(sync); }

double Accelerator::clip_grad_norm_(const std::vector<torch::Tensor>& parameters, double max_norm, double norm_type) {
  if (!impl_->sharded.empty()) return clip_sharded_grad_norm(parameters, max_norm, norm_type);
  return torch::nn::utils::clip_grad_norm_(parameters, max_norm, norm_type);
}

double Accelerator::clip_grad_norm_(const torch::Tensor& parameter, double max_norm, double norm_type) {
  return clip_grad_norm_(std::vector<torch::Tensor>{parameter}, max_norm, norm_type);
}

void Accelerator::clip_grad_value_(const std::vector<torch::Tensor>& parameters, double clip_value) {
  if (!impl_->sharded.empty()) {  // elementwise: the shards are what holds the gradients
    torch::nn::utils::clip_grad_value_(sharded_grad_targets(parameters, nullptr), clip_value);
    return;
  }
  torch::nn::utils::clip_grad_value_(parameters, clip_value);
}

void Accelerator::clip_grad_value_(const torch::Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<torch::Tensor>{parameter}, clip_value);
}

// ---- seeds and files ------------------------------------------------------------------
void Accelerator::set_seed(uint64_t seed, bool device_specific) {
  const uint64_t s = device_specific ? seed + static_cast<uint64_t>(process_index()) : seed;
  torch::manual_seed(s);
  if (torch::cuda::is_available()) torch::cuda::manual_seed_all(s);
  impl_->seed = seed;
  impl_->shared_seed.reset();
}

uint64_t Accelerator::shared_seed() {
  if (impl_->shared_seed) return *impl_->shared_seed;
  // Without set_seed, the seed is drawn from torch's default generator, as the reference
  // does: a program that calls torch::manual_seed gets the same shuffling on every run and
  // for every process count. Every process draws (and process 0's value wins) so that the
  // generators stay in step with a single-process run.
  uint64_t value = impl_->seed
                       ? *impl_->seed
                       : static_cast<uint64_t>(
                             torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
  impl_->shared_seed = shared_seed_bits(value);
  return *impl_->shared_seed;
}

uint64_t Accelerator::shared_seed_bits(uint64_t local) {
  auto& ps = *impl_->ps;
  // One process: the caller's value untouched and no communication, so that a migrated
  // program seeded from std::random_device or time() is the original program there.
  if (!ps.distributed()) return local;
  detail::CommScope scope;
  // Carried as int64 (Gloo has no uint64); the bits survive the round trip.
  std::vector<torch::Tensor> t{torch::tensor({static_cast<int64_t>(local)}, torch::kInt64).to(ps.device)};
  ps.run("broadcast of the shared seed from process 0", [&](detail::CommGroup& g) {
    c10d::BroadcastOptions opts;
    opts.rootRank = 0;
    return g.broadcast(t, opts);
  });
  return static_cast<uint64_t>(t[0].cpu().item<int64_t>());
}

std::string Accelerator::temp_path_for(const std::string& path) const {
  return path + ".tmp." + std::to_string(::getpid());
}

void Accelerator::commit_temp_file(const std::string& tmp, const std::string& path) const {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw CheckpointError("accelerate: save: cannot move " + tmp + " to " + path + ": " + err +
                          " (check that the directory is writable and on one file system)");
  }
}

}  // namespace accelerate
