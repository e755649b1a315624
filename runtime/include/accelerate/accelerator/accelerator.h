#pragma once
// The Accelerator: one per process. Reads its set-up from the environment (our launcher,
// torchrun, Hugging Face `accelerate launch`, Slurm, Open MPI) and from options, owns the
// process group, and offers the Hugging Face Accelerate API to training code.
//
// This header is the contract that migrated code (accel-migrate's output) and the data
// loader build on: names and call shapes here are part of the product.

#include <torch/torch.h>

#include <accelerate/accelerator/guards.h>
#include <accelerate/checkpoint/checkpoint.h>  // training state (docs/checkpointing.md)
#include <accelerate/comm/grad_sync_stats.h>
#include <accelerate/core/detail/object_bytes.h>
#include <accelerate/core/error.h>
#include <accelerate/core/options.h>
#include <accelerate/core/split.h>
#include <accelerate/data/detail/loader_position.h>
#include <accelerate/data/loader_state.h>
#include <accelerate/fsdp/fsdp_stats.h>
#include <accelerate/precision/autocast.h>  // mixed precision (docs/mixed-precision.md)
#include <accelerate/precision/grad_scaler.h>
#include <accelerate/tracking/tracking.h>  // experiment tracking (docs/tracking.md)

#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace accelerate {

// FSDP: sharded data parallel (docs/fsdp.md) on several processes, any strategy.
enum class DistributedType { No, MultiCPU, MultiGPU, FSDP };
enum class ReduceOp { Sum, Mean, Max, Min };

// How a loss passed to backward() reduces over its batch. Mean (LibTorch's default for every
// loss): the gradients are averaged over the processes, as each process's loss is a mean
// over its share. Sum (Reduction::Sum, or .sum() of per-sample losses): the processes'
// gradients are summed instead, so that N processes train as one on the same global batch.
enum class LossReduction { Mean, Sum };

class Accelerator;

class MixedPrecision;  // <accelerate/precision.h>

namespace detail {
struct AcceleratorAccess;  // the runtime's own access (<accelerate/accelerator/detail/accelerator_access.h>)
// The subsystem objects an Accelerator owns (runtime/src; docs/dev/architecture.md).
struct ProcessState;
class GradientState;
class PreparedObjects;
class ShardedModels;
struct CheckpointRegistry;
struct CheckpointParts;  // what save_state/load_state work on (checkpoint_state.cpp)
class TrackerRun;
}  // namespace detail

class Accelerator {
  friend class SyncGuard;
  friend struct detail::AcceleratorAccess;

 public:
  explicit Accelerator(AcceleratorOptions options = AcceleratorOptions());
  ~Accelerator();
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  // The process's Accelerator, for code that does not hold it (helpers, lambdas, classes).
  // Throws if none has been constructed yet.
  static Accelerator& current();
  static bool exists();

  // ---- process state ------------------------------------------------------------------
  torch::Device device() const;
  int64_t process_index() const;
  int64_t local_process_index() const;
  int64_t num_processes() const;
  bool is_main_process() const;
  bool is_local_main_process() const;
  DistributedType distributed_type() const;
  bool use_distributed() const { return num_processes() > 1; }
  // The options in force: every optional resolved (code, else environment, else default).
  const AcceleratorOptions& options() const;
  std::string mixed_precision() const;  // "no", "fp16" or "bf16"
  int64_t gradient_accumulation_steps() const;

  // This process's share [first, last) of [begin, end), for hand-written batching:
  //   auto [first, last] = accelerator.process_range(0, inputs.size(0));
  //   for (int64_t i = first; i < last; i += batch_size) { ... inputs.slice(0, i, ...) ... }
  // (see split_range in <accelerate/split.h>; gradients are still averaged across processes).
  std::pair<int64_t, int64_t> process_range(int64_t begin, int64_t end) const {
    return split_range(begin, end, process_index(), num_processes());
  }

  void wait_for_everyone();
  // Deciding together (Hugging Face's triggers): a process that meets a condition calls
  // set_trigger(); check_trigger() is a collective that every process calls at the same
  // point and returns true on all of them when any process set it (then clears it), e.g.
  //   if (loss.item<float>() < 1e-3f) accelerator.set_trigger();
  //   if (accelerator.check_trigger()) break;
  void set_trigger();
  bool check_trigger();
  MainProcessFirst main_process_first();
  MainProcessFirst local_main_process_first();

  // Prints on the main process only (like std::cout << a << b << ... << '\n').
  template <typename... Args>
  void print(Args&&... args) {
    if (!is_main_process()) return;
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    os << '\n';
    std::cout << os.str() << std::flush;
  }

  // ---- preparation (in place) ---------------------------------------------------------
  // Accepts, in any order and number: models (ModuleHolder such as `Net model;` or
  // torch::nn::Sequential, std::shared_ptr<M>, M& held by value, M*), optimizers (by
  // value, unique_ptr, shared_ptr, raw pointer) and LR schedulers. Models move to
  // device(), get identical parameters and buffers on all processes (broadcast from
  // process 0), and gradient synchronisation is installed.
  template <typename... Ts>
  void prepare(Ts&&... objects) {
    (prepare_one(std::forward<Ts>(objects)), ...);
  }

  void prepare_model(torch::nn::Module& module);
  void prepare_optimizer(torch::optim::Optimizer& optimizer);
  void prepare_scheduler(torch::optim::LRScheduler& scheduler);

  // ---- data loader (owned by data_loader.h, which defines these; see docs/data-loader.md)
  // Takes what torch::data::make_data_loader takes: <Sampler>(dataset, options),
  // (dataset, options), (dataset, sampler, options), a batch size in place of options.
  // Returns a loader used like LibTorch's that shards and puts batches on device().
  template <typename Sampler = void, typename... Args>
  auto prepare_data_loader(Args&&... args);
  // The loader's next epoch starts num_batches in (resuming); returns the loader.
  template <typename Loader>
  auto& skip_first_batches(Loader& loader, size_t num_batches);

  // ---- training step ------------------------------------------------------------------
  // Mirrors Tensor::backward; scales the loss for gradient accumulation and mixed precision.
  // On the short last step of a prepared loader's epoch the loss is weighted by the
  // process's share of the step's real samples (docs/data-loader.md "Short last batches").
  void backward(const torch::Tensor& loss, const torch::Tensor& gradient = {},
                c10::optional<bool> retain_graph = c10::nullopt, bool create_graph = false);
  // The same for a loss reduced as `reduction` says over its batch (LossReduction::Sum: the
  // all-reduce gives the sum of the processes' gradients).
  void backward(const torch::Tensor& loss, LossReduction reduction);

  // While alive, gradient all-reduce is skipped (the gradients stay local).
  SyncGuard no_sync();
  template <typename... Models>
  SyncGuard no_sync(Models&...) {
    return no_sync();
  }
  // Counts steps; synchronises only every gradient_accumulation_steps() step (and at the
  // end of a prepared loader's epoch). Check sync_gradients() before optimizer.step().
  SyncGuard accumulate();
  template <typename... Models>
  SyncGuard accumulate(Models&...) {
    return accumulate();
  }
  bool sync_gradients() const;
  void set_sync_gradients(bool sync);

  // Mirror torch::nn::utils::clip_grad_norm_/clip_grad_value_ (unscale first under fp16).
  double clip_grad_norm_(const std::vector<torch::Tensor>& parameters, double max_norm, double norm_type = 2.0);
  double clip_grad_norm_(const torch::Tensor& parameter, double max_norm, double norm_type = 2.0);
  void clip_grad_value_(const std::vector<torch::Tensor>& parameters, double clip_value);
  void clip_grad_value_(const torch::Tensor& parameter, double clip_value);

  // ---- mixed precision (docs/mixed-precision.md) ---------------------------------------
  // RAII: autocast with the configured precision while alive (a no-op guard for "no");
  // autocast(false) turns autocast off in the scope (an fp32 region).
  AutocastGuard autocast(bool enabled = true) const;
  // Whether the last gradient-synchronising backward found inf/nan gradients under fp16
  // (backward then reset the gradients to undefined, so the optimizer step is skipped).
  bool optimizer_step_was_skipped() const;
  // optimizer.step() unless this is an accumulation step (!sync_gradients()) or the step
  // was skipped for overflow; returns whether it stepped. Takes the optimizer as prepare()
  // does (object, pointer, smart pointer): accel-migrate emits it for `optimizer.step()`.
  template <typename Opt>
  bool optimizer_step(Opt&& optimizer) {
    using U = std::decay_t<Opt>;
    if constexpr (is_smart_pointer<U>::value || std::is_pointer<U>::value) {
      return optimizer_step(*optimizer);
    } else {
      static_assert(std::is_base_of<torch::optim::Optimizer, U>::value,
                    "accelerate::Accelerator::optimizer_step: expected a torch::optim optimizer");
      return step_optimizer(optimizer);
    }
  }
  // The fp16 loss scaler (nullptr unless fp16): scale and growth tracker for save_state.
  GradScaler* scaler();
  MixedPrecision& precision();

  // ---- collectives --------------------------------------------------------------------
  // Concatenate along dim 0 from all processes (in rank order). Scalars become 1-d.
  torch::Tensor gather(const torch::Tensor& tensor);
  // gather, then drop the duplicates that even_batches padding added on the last batch.
  torch::Tensor gather_for_metrics(const torch::Tensor& tensor);
  torch::Tensor reduce(const torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  torch::Tensor broadcast(const torch::Tensor& tensor, int64_t from_process = 0);
  // Every process's `bytes`, in rank order; their lengths may differ. The transport of
  // gather_object, usable with any serialised form (torch::serialize::OutputArchive, JSON).
  std::vector<std::string> gather_bytes(const std::string& bytes);
  // Objects from every process in rank order, as Hugging Face's gather_object: the items of
  // a std::vector are concatenated (process 0's, then process 1's, ...). Items are
  // std::string or trivially copyable values. Collective: every process calls it.
  template <typename T>
  std::vector<T> gather_object(const std::vector<T>& objects) {
    std::vector<T> all;
    for (const std::string& part : gather_bytes(detail::objects_to_bytes(objects)))
      detail::objects_from_bytes(part, all);
    return all;
  }
  // One object per process, in rank order.
  template <typename T>
  std::vector<T> gather_object(const T& object) {
    return gather_object(std::vector<T>{object});
  }
  std::vector<std::string> gather_object(const char* text) { return gather_object(std::string(text)); }
  // This process's share of `items`, as Hugging Face's split_between_processes: contiguous,
  // in process order, sizes differing by at most one (split_range). With apply_padding, a
  // shorter share is completed with copies of the input's last item, so that every process
  // has as many items (and gather() returns equal parts). No communication.
  template <typename T>
  std::vector<T> split_between_processes(const std::vector<T>& items, bool apply_padding = false) const {
    const auto [first, last] = split_range(0, static_cast<int64_t>(items.size()), process_index(), num_processes());
    std::vector<T> share(items.begin() + first, items.begin() + last);
    const int64_t longest = (static_cast<int64_t>(items.size()) + num_processes() - 1) / num_processes();
    while (apply_padding && !items.empty() && static_cast<int64_t>(share.size()) < longest)
      share.push_back(items.back());
    return share;
  }
  // Each value split as above (the keys are kept on every process).
  template <typename K, typename V>
  std::map<K, std::vector<V>> split_between_processes(const std::map<K, std::vector<V>>& items,
                                                      bool apply_padding = false) const {
    std::map<K, std::vector<V>> share;
    for (const auto& [key, values] : items) share.emplace(key, split_between_processes(values, apply_padding));
    return share;
  }
  // Rows of `tensor` along dim 0, as above (padding repeats the last row).
  torch::Tensor split_between_processes(const torch::Tensor& tensor, bool apply_padding = false) const;
  // Pads `dim` to the largest size across processes so that they can be gathered.
  torch::Tensor pad_across_processes(const torch::Tensor& tensor, int64_t dim = 0, double pad_index = 0,
                                     bool pad_first = false);

  // ---- experiment tracking (docs/tracking.md) ------------------------------------------
  // Starts the trackers named by log_with (AcceleratorOptions, else ACCELERATE_LOG_WITH /
  // accelerate launch --log_with) and those given to add_tracker, on the main process, in
  // logging_dir/project_name (ProjectConfiguration::logging_dir, else project_dir). Every
  // process calls it; once per run (end_training ends the run).
  void init_trackers(const std::string& project_name, const TrackerConfig& config = {});
  // A tracker of the program's own, started by init_trackers with the built-in ones.
  void add_tracker(std::unique_ptr<Tracker> tracker);
  // Values for `step` (default: the previous step + 1, from 0) to every tracker, on the
  // main process; the others return at once. Needs init_trackers first.
  void log(const LogValues& values, std::optional<int64_t> step = std::nullopt);
  // The runtime's own counters as values: grad_sync/* (grad_sync_stats) and, under
  // sharding, fsdp/* (fsdp_stats).
  void log_runtime_stats(std::optional<int64_t> step = std::nullopt);
  // A started tracker by name; nullptr on the other processes or when none has that name.
  Tracker* get_tracker(const std::string& name);
  // Closes every tracker (files flushed and closed); init_trackers may then start a new run.
  void end_training();

  // ---- saving -------------------------------------------------------------------------
  // torch::save on the main process only, written atomically (temp file + rename). A model
  // prepared with FSDP sharding is gathered first (every process must call save then): the
  // file is the plain archive torch::load(model, path) reads in any program.
  template <typename T>
  void save(const T& object, const std::string& path) {
    if constexpr (is_model<T>::value) {
      save_full_model(module_ref(object), path);
    } else {
      if (!is_main_process()) return;
      const std::string tmp = temp_path_for(path);
      torch::save(object, tmp);
      commit_temp_file(tmp, path);
    }
  }

  template <typename M>
  M& unwrap_model(M& model) {
    return model;
  }  // prepare works in place: nothing to unwrap

  // ---- sharded data parallel (docs/fsdp.md) --------------------------------------------
  // The settings in force (AcceleratorOptions::fsdp_plugin, else ACCELERATE_USE_FSDP/FSDP_*).
  const FsdpSettings& fsdp_settings() const;
  // The model's parameters and buffers with their full values, by dotted name as in
  // named_parameters(), on the CPU: on the main process; empty on the others. Collective
  // for a model prepared with sharding (every process calls it).
  template <typename M>
  torch::OrderedDict<std::string, torch::Tensor> get_state_dict(const M& model) {
    return module_state_dict(module_ref(model));
  }
  // Writes the model by the FSDP state dict type: FULL_STATE_DICT (and without FSDP) one
  // plain LibTorch archive at `path` (torch::load(model, path) reads it in any program);
  // SHARDED_STATE_DICT a directory `path` with one file per process and the metadata to
  // load it on any number of processes. Collective.
  template <typename M>
  void save_model(const M& model, const std::string& path) {
    save_module(module_ref(model), path);
  }
  // Loads what save_model (either kind), save or torch::save wrote into the prepared model,
  // on any number of processes. Throws CheckpointError naming a missing or mismatched
  // parameter (a different model). Collective.
  template <typename M>
  void load_model(M& model, const std::string& path) {
    load_module(const_cast<torch::nn::Module&>(module_ref(model)), path);
  }

  // ---- training state (docs/checkpointing.md) ------------------------------------------
  // Everything a bit-exact resume needs: prepared models, optimizers, LR schedulers, the
  // fp16 GradScaler, every process's random generators, each prepared data loader's
  // position, step(), and the registered objects. Collective: every process calls it. The
  // directory appears whole or not at all. Returns the directory written.
  std::string save_state(const std::string& output_dir);
  // Into project_dir/checkpoints/checkpoint_<iteration> (then iteration + 1), keeping at most
  // total_limit of them.
  std::string save_state();
  // Restores what save_state wrote into the objects prepared and registered in this run (the
  // same kinds, in the same order); data loaders resume at their next begin(). Returns the
  // directory read. Throws CheckpointError naming what is missing or does not fit, or the
  // file whose size or content hash differs from the manifest's.
  std::string load_state(const std::string& input_dir);
  // The latest valid checkpoint under project_dir/checkpoints.
  std::string load_state();
  // That checkpoint, if there is one: the newest complete one whose files match their
  // hashes, a damaged newer one skipped with a note (decided by process 0: collective).
  std::optional<std::string> latest_checkpoint();
  // Objects saved with every checkpoint (by process 0) and loaded on every process: anything
  // with save(OutputArchive&) const / load(InputArchive&), by reference, pointer or smart
  // pointer; it must outlive the Accelerator's use of it. Order matters, as for prepare().
  template <typename... Ts>
  void register_for_checkpointing(Ts&&... objects) {
    (register_one(std::forward<Ts>(objects)), ...);
  }
  ProjectConfiguration& project_configuration();
  // accumulate() calls so far (the reference's `step`); saved and restored with the state.
  int64_t step() const;

  // Seeds torch (CPU and CUDA) and the loaders' shared generator; device_specific adds
  // process_index() so that augmentation differs per process.
  void set_seed(uint64_t seed, bool device_specific = false);

  // ---- loader state, runtime counters, shared seeds -------------------------------------
  // Where the active prepared loader's epoch stands (docs/data-loader.md): written by the
  // loader, read by gather_for_metrics and accumulate().
  const LoaderState& loader_state() const;
  GradSyncStats grad_sync_stats() const;
  FsdpStats fsdp_stats() const;
  // A seed identical on every process (drawn on process 0 and broadcast), for samplers.
  uint64_t shared_seed();
  // Process 0's `local` on every process (a broadcast from process 0: a collective, so every
  // process must call it the same number of times); on one process `local` itself, without
  // communication. accel-migrate wraps seeds that decide data order in it; the result has
  // the argument's type, so `std::mt19937 g{shared_seed(rd())}` converts as before.
  template <typename T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
  T shared_seed(T local) {
    return static_cast<T>(shared_seed_bits(static_cast<uint64_t>(local)));
  }

 private:
  uint64_t shared_seed_bits(uint64_t local);
  template <typename T>
  struct is_smart_pointer : std::false_type {};
  template <typename T, typename = void>
  struct is_model : std::is_base_of<torch::nn::Module, T> {};
  template <typename T>
  struct is_model<T, std::enable_if_t<torch::detail::is_module_holder<T>::value>> : std::true_type {};
  template <typename T>
  struct is_model<std::shared_ptr<T>> : std::is_base_of<torch::nn::Module, T> {};

  template <typename M>
  static const torch::nn::Module& module_ref(const M& model) {
    if constexpr (torch::detail::is_module_holder<M>::value) {
      return *model.ptr();
    } else if constexpr (is_smart_pointer<M>::value || std::is_pointer<M>::value) {
      return module_ref(*model);
    } else {
      static_assert(std::is_base_of<torch::nn::Module, M>::value,
                    "accelerate::Accelerator: expected a model (a module, module holder or pointer to one)");
      return model;
    }
  }
  torch::OrderedDict<std::string, torch::Tensor> module_state_dict(const torch::nn::Module& model);
  void save_module(const torch::nn::Module& model, const std::string& path);
  void save_full_model(const torch::nn::Module& model, const std::string& path);
  void load_module(torch::nn::Module& model, const std::string& path);
  void prepare_sharded_model(torch::nn::Module& module, const std::vector<torch::Tensor>& buffers);
  double clip_sharded_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm, double norm_type);
  std::vector<torch::Tensor> sharded_grad_targets(const std::vector<torch::Tensor>& parameters, bool* replicated_only);
  template <typename T>
  struct is_smart_pointer<std::shared_ptr<T>> : std::true_type {};
  template <typename T, typename D>
  struct is_smart_pointer<std::unique_ptr<T, D>> : std::true_type {};

  template <typename T>
  void prepare_one(T&& object) {
    using U = std::decay_t<T>;
    if constexpr (torch::detail::is_module_holder<U>::value) {
      prepare_model(*object.ptr());
    } else if constexpr (is_smart_pointer<U>::value || std::is_pointer<U>::value) {
      prepare_one(*object);
    } else if constexpr (std::is_base_of<torch::nn::Module, U>::value) {
      prepare_model(object);
    } else if constexpr (std::is_base_of<torch::optim::Optimizer, U>::value) {
      prepare_optimizer(object);
    } else if constexpr (std::is_base_of<torch::optim::LRScheduler, U>::value) {
      prepare_scheduler(object);
    } else {
      static_assert(sizeof(U) == 0,
                    "accelerate::Accelerator::prepare: unsupported object (expected a module, "
                    "optimizer or LR scheduler; use prepare_data_loader for data loaders)");
    }
  }

  template <typename T>
  void register_one(T&& object) {
    using U = std::remove_reference_t<T>;
    using D = std::decay_t<T>;
    if constexpr (is_smart_pointer<D>::value || std::is_pointer<D>::value) {
      register_one(*object);
    } else if constexpr (torch::detail::is_module_holder<D>::value) {
      register_one(*object.ptr());
    } else {
      static_assert(std::is_lvalue_reference<T>::value,
                    "accelerate::Accelerator::register_for_checkpointing: pass an object that "
                    "outlives the training loop (a variable, pointer or smart pointer), not a temporary");
      static_assert(detail::is_checkpointable<std::remove_const_t<U>>::value,
                    "accelerate::Accelerator::register_for_checkpointing: the object needs "
                    "void save(torch::serialize::OutputArchive&) const and "
                    "void load(torch::serialize::InputArchive&)");
      static_assert(!std::is_const<U>::value,
                    "accelerate::Accelerator::register_for_checkpointing: load_state writes into "
                    "the object: pass a non-const one");
      U* p = &object;
      register_checkpoint_object(CheckpointObject{[p](torch::serialize::OutputArchive& a) { p->save(a); },
                                                  [p](torch::serialize::InputArchive& a) { p->load(a); }});
    }
  }
  void register_checkpoint_object(CheckpointObject object);

  bool step_optimizer(torch::optim::Optimizer& optimizer);
  std::pair<int64_t, int64_t> current_share();  // (real samples, the step's real samples); -1: not known
  void backward_weighted(const torch::Tensor& loss, const torch::Tensor& gradient, c10::optional<bool> retain_graph,
                         bool create_graph, double weight);
  std::string temp_path_for(const std::string& path) const;
  void commit_temp_file(const std::string& tmp, const std::string& path) const;

  // The subsystem objects this Accelerator owns (Impl, defined in accelerator.cpp, holds
  // them): the file of each concern reaches the one or two it uses through these.
  const detail::ProcessState& process() const;
  const MixedPrecision& precision_state() const;  // precision() is the public, non-const way
  detail::GradientState& gradient_state();
  const detail::GradientState& gradient_state() const;
  detail::PreparedObjects& prepared_objects();
  detail::ShardedModels& sharded_models();
  const detail::ShardedModels& sharded_models() const;
  detail::CheckpointRegistry& checkpoint_registry();
  detail::CheckpointParts checkpoint_parts();  // one list for save_state and load_state
  detail::TrackerRun& tracker_run();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accelerate
