// Accelerator::save_state / load_state: which pieces go into a checkpoint, who writes them,
// and the steps at which every process agrees before the next one (docs/checkpointing.md).
#include "accelerator/prepared_objects.h"
#include "checkpoint/checkpoint_pieces.h"
#include "checkpoint/checkpoint_registry.h"
#include "comm/gradient_state.h"
#include "fsdp/fsdp_state_dict.h"
#include "fsdp/sharded_models.h"

#include <accelerate/accelerator/accelerator.h>
#include <accelerate/accelerator/detail/accelerator_access.h>
#include <accelerate/core/detail/env_names.h>
#include <accelerate/launch/detail/launch_settings.h>
#include <accelerate/log/logging.h>

#include <algorithm>
#include <exception>

namespace accelerate {
namespace {

namespace fs = std::filesystem;
namespace ckpt = detail::ckpt;

[[noreturn]] void fail(const std::string& what) { throw CheckpointError("accelerate: " + what); }

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Absolute, normalised, without a trailing separator ("ckpt/" names the directory ckpt).
fs::path directory_path(const std::string& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

// Runs this process's part of a step; then every process learns whether every part went
// well, so that none goes on to the next step (or waits in it) alone. A process whose own
// part failed rethrows its error; the others name the processes that failed.
template <typename F>
void together(Accelerator& acc, const std::string& what, F&& part) {
  std::exception_ptr error;
  try {
    part();
  } catch (...) {
    error = std::current_exception();
  }
  if (acc.num_processes() > 1) {
    const auto flags = acc.gather(torch::tensor({error ? int64_t{1} : int64_t{0}}, torch::kInt64)).cpu();
    if (!error && flags.sum().item<int64_t>() > 0) {
      std::string who;
      for (int64_t r = 0; r < flags.size(0); ++r) {
        if (flags[r].item<int64_t>() != 0) who += (who.empty() ? "" : ", ") + std::to_string(r);
      }
      fail(what + " failed on process " + who + " (its error says why); nothing more was done here");
    }
  }
  if (error) std::rethrow_exception(error);
}

fs::path checkpoints_root(const ProjectConfiguration& project, const char* call) {
  if (project.project_dir().empty()) {
    fail(std::string(call) +
         " without a directory needs a project directory: "
         "AcceleratorOptions().project_config(ProjectConfiguration().project_dir(\"runs/x\")), or "
         "accelerate launch --project_dir runs/x (" +
         env_names::kProjectDir + ")");
  }
  return fs::path(project.project_dir()) / "checkpoints";
}

// The latest valid checkpoint_<n> under `root`: complete, and every file as the manifest
// says (size and content hash). Those passed over are named in a note: a damaged newest
// checkpoint costs the steps since the one before it, not the run.
std::optional<std::pair<int64_t, fs::path>> latest_complete(const fs::path& root) {
  auto all = ckpt::numbered_checkpoints(root);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (!ckpt::is_complete(it->second)) {
      detail::runtime_log().info("skipping " + quoted(it->second) + ": no " + ckpt::kManifestName +
                                 " (not a complete checkpoint)");
      continue;
    }
    try {
      ckpt::read_manifest(it->second);
      return *it;
    } catch (const CheckpointError& e) {
      std::string why = e.what();
      for (const std::string& prefix :
           {std::string("accelerate: load_state: "), "checkpoint " + quoted(it->second) + ": "}) {
        if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      }
      detail::runtime_log().info("skipping the damaged checkpoint " + quoted(it->second) + ": " + why +
                                 "; looking for an older one");
    }
  }
  return std::nullopt;
}

// Deletes the oldest checkpoint_<n> beyond `limit` (the newest was just completed), and
// what an interrupted deletion left behind.
void prune(const fs::path& root, int64_t limit) {
  auto all = ckpt::numbered_checkpoints(root);
  for (size_t i = 0; i + static_cast<size_t>(limit) < all.size(); ++i) ckpt::remove_checkpoint(all[i].second);
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(".checkpoint_", 0) == 0 && name.size() > 9 && name.substr(name.size() - 9) == ".deleting") {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

// A save that failed (a full disk, most often) gives back the space its partial files hold.
void discard_staging(const fs::path& staging, const fs::path& target) {
  std::error_code ec;
  if (!fs::exists(staging, ec)) return;
  fs::remove_all(staging, ec);
  // Every process that staged files says what became of its own staging folder.
  detail::runtime_log().info("save_state failed: " + std::string(ec ? "could not remove " : "removed ") +
                                 quoted(staging) + "; " + quoted(target) +
                                 " and the other checkpoints are as they were",
                             LogScope::all_processes);
}

void check_count(const fs::path& dir, const char* kind, int64_t saved, size_t here, const char* verb) {
  if (saved == static_cast<int64_t>(here)) return;
  const std::string done = std::string(verb) + (std::string(verb).back() == 'e' ? "d" : "ed");
  fail("load_state: checkpoint " + quoted(dir) + " holds " + std::to_string(saved) + " " + kind + ", this run " + done +
       " " + std::to_string(here) + ": " + verb + " the same " + kind + ", in the same order, before load_state");
}

}  // namespace

// What a checkpoint is made of in this run: the Accelerator's prepared and registered objects.
struct detail::CheckpointParts {
  const detail::PreparedObjects& prepared;  // models, optimizers, schedulers
  detail::CheckpointRegistry& registry;     // registered objects, loader positions
  detail::GradientState& gradients;         // the step, saved and restored
  GradScaler* scaler;
  torch::Device device;
  int64_t rank;
  int64_t num_processes;
  // FSDP (docs/fsdp.md): models prepared with sharding, and the state dict type.
  const detail::ShardedModels& sharded;
  StateDictType state_dict_type;
  std::vector<torch::nn::Module*> models() const { return prepared.models(); }  // the live ones
  const std::vector<torch::optim::Optimizer*>& optimizers() const { return prepared.optimizers(); }
  const std::vector<torch::optim::LRScheduler*>& schedulers() const { return prepared.schedulers(); }
  std::vector<CheckpointObject>& objects() const { return registry.objects; }
  std::vector<std::shared_ptr<LoaderPosition>>& loaders() const { return registry.loaders; }
};

namespace {

using Parts = detail::CheckpointParts;

const detail::ShardedModel* sharded_model(const Parts& p, const torch::nn::Module* model) {
  return p.sharded.find(*model);
}

// An optimizer holding shards of a sharded model's parameters: each process's state differs.
bool sharded_optimizer(const Parts& p, const torch::optim::Optimizer& optimizer) {
  return p.sharded.holds_shards_of(optimizer);
}

// Process r > 0's part of a sharded optimizer (process 0's is optimizer_<i>.pt).
std::string optimizer_rank_file(size_t i, int64_t rank) {
  return "optimizer_" + std::to_string(i) + ".rank_" + std::to_string(rank) + ".pt";
}

std::string model_shard_file(size_t i, int64_t rank) {
  return "model_" + std::to_string(i) + ".shard_" + std::to_string(rank) + ".pt";
}

template <typename F>
void write_file(const fs::path& path, F&& fill) {
  torch::serialize::OutputArchive a;
  fill(a);
  ckpt::write_archive(a, path);
}

template <typename F>
void read_file(const fs::path& path, const torch::Device& device, F&& use) {
  torch::serialize::InputArchive a;
  ckpt::read_archive(a, path, device);
  try {
    use(a);
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    fail("load_state: " + quoted(path) + " does not fit this run: " + e.what());
  }
}

// Models, optimizers and schedulers are identical on every process (prepare and the
// gradient synchronisation keep them so): process 0 writes them, as the reference does.
void write_shared(const fs::path& staging, const Parts& p) {
  for (size_t i = 0; i < p.models().size(); ++i) {
    if (sharded_model(p, p.models()[i])) continue;  // write_sharded_parts
    write_file(staging / ckpt::model_file(i), [&](auto& a) { p.models()[i]->save(a); });
  }
  for (size_t i = 0; i < p.optimizers().size(); ++i) {
    if (sharded_optimizer(p, *p.optimizers()[i])) continue;
    write_file(staging / ckpt::optimizer_file(i), [&](auto& a) { p.optimizers()[i]->save(a); });
  }
  for (size_t i = 0; i < p.schedulers().size(); ++i) {
    write_file(staging / ckpt::scheduler_file(i), [&](auto& a) { ckpt::save_scheduler(*p.schedulers()[i], a); });
  }
  if (p.scaler) write_file(staging / ckpt::kScalerFile, [&](auto& a) { p.scaler->save(a); });
  for (size_t i = 0; i < p.objects().size(); ++i) {
    write_file(staging / ckpt::object_file(i), [&](auto& a) { p.objects()[i].save(a); });
  }
}

// Models prepared with FSDP sharding (FULL: gathered, written by process 0 as Module::save
// would; SHARDED: metadata plus one file per process) and their optimizers (one file per
// process: each holds its own shard's state). Every process takes part.
void write_sharded_parts(const fs::path& staging, const Parts& p) {
  const bool main = p.rank == 0;
  for (size_t i = 0; i < p.models().size(); ++i) {
    const auto* sharded = sharded_model(p, p.models()[i]);
    if (!sharded) continue;
    if (p.state_dict_type == StateDictType::SHARDED_STATE_DICT) {
      detail::fsdp_state::write_sharded(*p.models()[i], sharded, p.rank, p.num_processes,
                                        (staging / ckpt::model_file(i)).string(),
                                        [&](int64_t r) { return (staging / model_shard_file(i, r)).string(); });
      continue;
    }
    const auto full = detail::fsdp_state::gather_full(*sharded, main);  // collective
    if (main)
      write_file(staging / ckpt::model_file(i),
                 [&](auto& a) { detail::fsdp_state::write_full(*p.models()[i], full, a); });
  }
  for (size_t i = 0; i < p.optimizers().size(); ++i) {
    if (!sharded_optimizer(p, *p.optimizers()[i])) continue;
    const auto name = main ? ckpt::optimizer_file(i) : optimizer_rank_file(i, p.rank);
    write_file(staging / name, [&](auto& a) { p.optimizers()[i]->save(a); });
  }
}

std::vector<std::string> file_names(const ckpt::Manifest& m) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < m.models; ++i) names.push_back(ckpt::model_file(i));
  for (int64_t i = 0; i < m.optimizers; ++i) names.push_back(ckpt::optimizer_file(i));
  for (int64_t i = 0; i < m.schedulers; ++i) names.push_back(ckpt::scheduler_file(i));
  if (m.scaler) names.push_back(ckpt::kScalerFile);
  for (int64_t i = 0; i < m.objects; ++i) names.push_back(ckpt::object_file(i));
  for (int64_t r = 0; r < m.num_processes; ++r) names.push_back(ckpt::process_file(r));
  return names;
}

// Process 0, once every process has written its files: the manifest, then the rename.
void complete(const fs::path& staging, const fs::path& target, ckpt::Manifest m) {
  std::error_code ec;
  for (const auto& name : file_names(m)) {
    if (!fs::is_regular_file(staging / name, ec)) {
      fail("save_state: " + name + " is missing from " + quoted(staging) +
           " although every process wrote its "
           "files: is the directory on a file system that every process (every machine) sees?");
    }
  }
  // Every file is listed with its size and hash, FSDP's per-process parts included (their
  // names depend on the layout). The hash is of what is on disk, read back once.
  std::vector<fs::path> files;
  for (fs::directory_iterator it(staging, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename() != ckpt::kManifestName) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    m.files.push_back({file.filename().string(), fs::file_size(file), ckpt::content_hash(file)});
  }
  ckpt::write_manifest(staging, m);  // last: its presence means complete
  ckpt::sync_dir(staging);
  ckpt::commit(staging, target);
}

// This process's generators, loader positions and step: its own file when the number of
// processes is unchanged; otherwise process 0's loader positions, converted, and the
// generators of the same rank when it existed.
void restore_process(const fs::path& dir, const ckpt::Manifest& m, const Parts& p) {
  const bool same = m.num_processes == p.num_processes;
  ckpt::ProcessRecord mine, first;
  if (same || p.rank < m.num_processes) {
    read_file(dir / ckpt::process_file(p.rank), torch::kCPU, [&](auto& a) { mine = ckpt::load_process(a); });
  }
  if (same) {
    first = mine;
  } else {
    read_file(dir / ckpt::process_file(0), torch::kCPU, [&](auto& a) { first = ckpt::load_process(a); });
  }
  std::vector<LoaderPosition::Resume> resumes;
  for (size_t i = 0; i < first.loaders.size() && i < p.loaders().size(); ++i) {
    resumes.push_back(ckpt::resume_point(first.loaders[i], p.num_processes, i));
  }
  for (size_t i = 0; i < resumes.size(); ++i) p.loaders()[i]->resume = resumes[i];
  p.gradients.restore_step(first.step);
  if (same || p.rank < m.num_processes) ckpt::restore_generators(mine);
}

// A model: a FULL archive (written with or without FSDP) or SHARDED metadata, into a sharded
// model or a plain one, on any number of processes.
void restore_model(const fs::path& dir, size_t i, const Parts& p) {
  const std::string where = "model " + std::to_string(i) + " (" + ckpt::model_file(i) + "): ";
  const auto* sharded = sharded_model(p, p.models()[i]);
  read_file(dir / ckpt::model_file(i), p.device, [&](auto& a) {
    if (detail::fsdp_state::is_sharded_metadata(a)) {
      detail::fsdp_state::read_sharded(*p.models()[i], sharded, (dir / ckpt::model_file(i)).string(),
                                       [&](int64_t r) { return (dir / model_shard_file(i, r)).string(); });
    } else if (sharded) {
      detail::fsdp_state::read_full(*p.models()[i], sharded, a, quoted(dir / ckpt::model_file(i)));
    } else {
      ckpt::load_module(*p.models()[i], a, where);
    }
  });
}

// An optimizer: each process its own file when it holds shards (the same processes and
// wrap policy as when saved: the shards' layout depends on both).
void restore_optimizer(const fs::path& dir, const ckpt::Manifest& m, size_t i, const Parts& p) {
  const bool sharded_now = sharded_optimizer(p, *p.optimizers()[i]);
  const bool sharded_then = m.num_processes > 1 && fs::exists(dir / optimizer_rank_file(i, 1));
  if (sharded_now != sharded_then || (sharded_now && m.num_processes != p.num_processes)) {
    fail(
        "load_state: optimizer " + std::to_string(i) + " in " + quoted(dir) + " was saved " +
        (sharded_then ? "sharded by " + std::to_string(m.num_processes) + " processes (FSDP)" : "whole (not sharded)") +
        "; this run's is " +
        (sharded_now ? "sharded over " + std::to_string(p.num_processes) + " processes" : "whole") +
        ": an optimizer's shards load only on the same number of processes with the same FSDP strategy and wrap "
        "policy (the model itself loads on any number)");
  }
  const auto name = sharded_now && p.rank > 0 ? optimizer_rank_file(i, p.rank) : ckpt::optimizer_file(i);
  read_file(dir / name, p.device, [&](auto& a) { detail::compat::load_optimizer(*p.optimizers()[i], a); });
}

void restore(const fs::path& dir, const ckpt::Manifest& m, const Parts& p) {
  for (size_t i = 0; i < p.models().size(); ++i) restore_model(dir, i, p);
  for (size_t i = 0; i < p.optimizers().size(); ++i) restore_optimizer(dir, m, i, p);
  for (size_t i = 0; i < p.schedulers().size(); ++i) {
    read_file(dir / ckpt::scheduler_file(i), p.device, [&](auto& a) { ckpt::load_scheduler(*p.schedulers()[i], a); });
  }
  if (m.scaler && p.scaler) {
    read_file(dir / ckpt::kScalerFile, torch::kCPU, [&](auto& a) { p.scaler->load(a); });
  }
  for (size_t i = 0; i < p.objects().size(); ++i) {
    read_file(dir / ckpt::object_file(i), p.device, [&](auto& a) { p.objects()[i].load(a); });
  }
  restore_process(dir, m, p);
}

}  // namespace

detail::CheckpointParts Accelerator::checkpoint_parts() {
  return {prepared_objects(),
          checkpoint_registry(),
          gradient_state(),
          scaler(),
          device(),
          process_index(),
          num_processes(),
          sharded_models(),
          fsdp_settings().state_dict_type};
}

ProjectConfiguration& Accelerator::project_configuration() { return checkpoint_registry().project; }
int64_t Accelerator::step() const { return gradient_state().step(); }

void detail::AcceleratorAccess::track_data_loader(Accelerator& acc, std::shared_ptr<LoaderPosition> position) {
  acc.checkpoint_registry().loaders.push_back(std::move(position));
}

void Accelerator::register_checkpoint_object(CheckpointObject object) {
  checkpoint_registry().objects.push_back(std::move(object));
}

std::string Accelerator::save_state() {
  auto& project = checkpoint_registry().project;
  const fs::path root = checkpoints_root(project, "save_state()");
  if (project.total_limit() && *project.total_limit() < 1) {
    fail("save_state: total_limit must be at least 1 (or unset to keep every checkpoint), got " +
         std::to_string(*project.total_limit()));
  }
  const fs::path target = root / ("checkpoint_" + std::to_string(project.iteration()));
  together(*this, "save_state: checking " + target.string(), [&] {
    if (is_main_process() && fs::exists(target)) {
      fail("save_state: " + quoted(target) +
           " already exists: this project directory holds an earlier run's "
           "checkpoints. Resume it with load_state() (which continues the numbering), or set "
           "project_configuration().iteration() past it, or use an empty project directory");
    }
  });
  save_state(target.string());
  if (project.total_limit()) {
    together(*this, "save_state: deleting old checkpoints in " + root.string(), [&] {
      if (is_main_process()) prune(root, *project.total_limit());
    });
  }
  project.iteration(project.iteration() + 1);
  return target.string();
}

std::string Accelerator::save_state(const std::string& output_dir) {
  if (output_dir.empty()) fail("save_state: the directory is empty (call save_state() to use the project directory)");
  const fs::path target = directory_path(output_dir);
  const fs::path staging = ckpt::staging_dir(target);
  const auto& reg = checkpoint_registry();
  const auto& prepared = prepared_objects();
  const bool main = is_main_process();
  together(*this, "save_state: preparing " + staging.string(), [&] {
    // Every process looks, so that each can say why when the target is in the way.
    if (fs::exists(target) && !ckpt::is_complete(target) && !(fs::is_directory(target) && fs::is_empty(target))) {
      fail("save_state: " + quoted(target) + " exists and is not a checkpoint written by save_state (no " +
           ckpt::kManifestName + "): refusing to replace it; choose another directory or remove it");
    }
    if (!main) return;
    fs::create_directories(target.parent_path());
    ckpt::make_staging_dir(target);
  });

  ckpt::Manifest m;
  m.num_processes = num_processes();
  m.step = step();
  m.models = static_cast<int64_t>(prepared.models().size());
  m.optimizers = static_cast<int64_t>(prepared.optimizers().size());
  m.schedulers = static_cast<int64_t>(prepared.schedulers().size());
  m.objects = static_cast<int64_t>(reg.objects.size());
  m.loaders = static_cast<int64_t>(reg.loaders.size());
  m.scaler = scaler() != nullptr;
  const Parts parts = checkpoint_parts();
  try {
    together(*this, "save_state: writing into " + staging.string(), [&] {
      write_sharded_parts(staging, parts);  // every process: sharded models gather collectively
      if (main) write_shared(staging, parts);
      write_file(staging / ckpt::process_file(process_index()), [&](auto& a) {
        const bool split_batches = detail::AcceleratorAccess::launch_settings(*this).split_batches;
        ckpt::save_process(ckpt::capture_process(process_index(), num_processes(), step(), reg.loaders, split_batches),
                           a);
      });
    });
    together(*this, "save_state: completing " + target.string(), [&] {
      if (main) complete(staging, target, m);
    });
  } catch (...) {
    if (main) discard_staging(staging, target);  // every process is past its writes (together)
    throw;
  }
  return target.string();
}

std::optional<std::string> Accelerator::latest_checkpoint() {
  const fs::path root = checkpoints_root(checkpoint_registry().project, "latest_checkpoint()");
  int64_t number = -1;
  if (is_main_process()) {
    if (auto latest = latest_complete(root)) number = latest->first;
  }
  // Process 0 decides for everyone: all resume from the same checkpoint.
  if (num_processes() > 1) number = broadcast(torch::tensor({number}, torch::kInt64), 0).cpu().item<int64_t>();
  if (number < 0) return std::nullopt;
  return (fs::absolute(root) / ("checkpoint_" + std::to_string(number))).lexically_normal().string();
}

std::string Accelerator::load_state() {
  const fs::path root = checkpoints_root(checkpoint_registry().project, "load_state()");
  auto latest = latest_checkpoint();
  if (!latest) {
    fail("load_state(): no complete checkpoint in " + quoted(root) +
         " to resume from (check with latest_checkpoint() first when a run may start fresh)");
  }
  return load_state(*latest);
}

std::string Accelerator::load_state(const std::string& input_dir) {
  if (input_dir.empty()) fail("load_state: the directory is empty (call load_state() to use the project directory)");
  fs::path dir = directory_path(input_dir);
  auto& reg = checkpoint_registry();
  const auto& prepared = prepared_objects();
  ckpt::Manifest m;
  together(*this, "load_state: checking " + dir.string(), [&] {
    // An atomic exchange was not available and the save stopped between its two renames:
    // the replaced checkpoint is still complete under its aside name.
    if (!fs::exists(dir) && ckpt::is_complete(ckpt::previous_dir(dir))) {
      detail::runtime_log().info(quoted(dir) + " is missing but its previous version " +
                                 quoted(ckpt::previous_dir(dir)) + " is complete: loading that");
      dir = ckpt::previous_dir(dir);
    }
    m = ckpt::read_manifest(dir);
    check_count(dir, "models", m.models, prepared.models().size(), "prepare");
    check_count(dir, "optimizers", m.optimizers, prepared.optimizers().size(), "prepare");
    check_count(dir, "LR schedulers", m.schedulers, prepared.schedulers().size(), "prepare");
    check_count(dir, "registered objects", m.objects, reg.objects.size(), "register");
    if (m.loaders > static_cast<int64_t>(reg.loaders.size())) {
      check_count(dir, "data loaders", m.loaders, reg.loaders.size(), "prepare");
    }
  });
  if (m.format < 2) {
    detail::runtime_log().info(
        quoted(dir) + " has checkpoint format " + std::to_string(m.format) +
        " (written before checkpoints carried content hashes): file sizes are checked, contents are not");
  }
  if (m.scaler != (scaler() != nullptr)) {
    detail::runtime_log().info(quoted(dir) +
                               (m.scaler ? " holds an fp16 loss scaler, this run has none"
                                         : " holds no fp16 loss scaler: this run's starts afresh") +
                               " (mixed precision " + std::string(mixed_precision()) + ")");
  }
  if (m.num_processes != num_processes()) {
    detail::runtime_log().info(
        quoted(dir) + " was saved by " + std::to_string(m.num_processes) + " processes, this run has " +
        std::to_string(num_processes()) +
        ": models, optimizers, schedulers and registered objects load as saved, data "
        "loaders resume at the same global position, random generators are restored for processes 0.." +
        std::to_string(std::min(m.num_processes, num_processes()) - 1) + " only; the run will not repeat the " +
        std::to_string(m.num_processes) + "-process run bit for bit");
  }
  const Parts parts = checkpoint_parts();
  together(*this, "load_state: restoring from " + dir.string(), [&] { restore(dir, m, parts); });
  if (auto n = ckpt::checkpoint_number(dir.filename().string())) {
    const auto& project = reg.project;
    if (!project.project_dir().empty() && fs::weakly_canonical(dir.parent_path()) ==
                                              fs::weakly_canonical(fs::path(project.project_dir()) / "checkpoints")) {
      // The next save continues the numbering after every numbered directory there: one
      // that latest_checkpoint() skipped as damaged stays as it is, for inspection.
      int64_t next = *n + 1;
      for (const auto& entry : ckpt::numbered_checkpoints(dir.parent_path())) next = std::max(next, entry.first + 1);
      reg.project.iteration(next);
    }
  }
  return dir.string();
}

}  // namespace accelerate
