// Accelerator under SHARD_GRAD_OP / FULL_SHARD: preparing a sharded model, and clipping
// gradients that live in shards (docs/fsdp.md). State dicts: fsdp_state_dict.cpp.
#include "accelerator/prepared_objects.h"
#include "comm/gradient_state.h"
#include "fsdp/fsdp_state_dict.h"
#include "fsdp/sharded_models.h"

#include <accelerate/accelerator/accelerator.h>
#include <accelerate/comm/detail/process_state.h>
#include <accelerate/precision/precision.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

namespace accelerate {

const FsdpSettings& Accelerator::fsdp_settings() const { return sharded_models().settings(); }

void Accelerator::prepare_sharded_model(torch::nn::Module& module, const std::vector<torch::Tensor>& buffers) {
  if (precision().uses_loss_scaling()) {
    throw Error(ErrorCode::Unsupported,
                "accelerate: fp16 mixed precision (loss scaling) is not supported with FSDP sharding (SHARD_GRAD_OP / "
                "FULL_SHARD); use --mixed_precision bf16, or --fsdp_sharding_strategy NO_SHARD");
  }
  auto& sharded = sharded_models();
  // bf16 mixed precision under FULL_SHARD: the gathered parameters (and so the compute and
  // the gradients) are bf16; the shards the optimizer updates stay fp32.
  const bool bf16 =
      precision().type() == PrecisionType::BF16 && sharded.settings().sharding_strategy == ShardingStrategy::FULL_SHARD;
  const c10::ScalarType compute = bf16 ? torch::kBFloat16 : c10::ScalarType::Undefined;
  auto model = std::make_unique<detail::ShardedModel>(
      process(), module, sharded.settings(), compute,
      options().broadcast_buffers() ? buffers : std::vector<torch::Tensor>{}, gradient_state().communicate_flag());
  // An optimizer prepared before its model: re-point it now.
  for (auto* optimizer : prepared_objects().optimizers()) model->shard_optimizer(*optimizer);
  // The loss scaler (fp16) unscales what holds the gradients: the shards.
  precision().track_parameters(model->pieces());
  sharded.add(std::move(model));
}

// What holds the gradients of `parameters` (ShardedModels::grad_targets).
std::vector<torch::Tensor> Accelerator::sharded_grad_targets(const std::vector<torch::Tensor>& parameters,
                                                             bool* replicated_only) {
  return sharded_models().grad_targets(parameters, replicated_only);
}

// torch::nn::utils::clip_grad_norm_ over the whole model: each process adds |g|^p over its
// shards (and, on process 0 only, over replicated parameters, which every process holds),
// one all-reduce makes the global norm, and every process scales what it holds.
double Accelerator::clip_sharded_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm,
                                           double norm_type) {
  const std::set<const void*> pieces = sharded_models().pieces();
  std::vector<torch::Tensor> grads;
  const bool inf = std::isinf(norm_type);
  double local = 0;
  for (const auto& target : sharded_grad_targets(parameters, nullptr)) {
    const torch::Tensor& g = target.grad();
    if (!g.defined()) continue;
    grads.push_back(g);
    const bool shard = pieces.count(target.unsafeGetTensorImpl()) != 0;
    if (g.numel() == 0 || (!shard && !inf && process_index() != 0)) continue;
    const double n = g.detach().to(torch::kDouble).norm(norm_type).item<double>();
    local = inf ? std::max(local, n) : local + std::pow(n, norm_type);
  }
  const auto& ps = process();
  double total = local;
  if (ps.distributed()) {
    detail::CommScope scope;
    std::vector<torch::Tensor> t{torch::tensor({local}, torch::TensorOptions(torch::kDouble).device(ps.device))};
    c10d::AllreduceOptions opts;
    opts.reduceOp = inf ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
    ps.run("all_reduce of the gradient norm (clip_grad_norm_)",
           [&](detail::CommGroup& g) { return g.allreduce(t, opts); });
    total = t[0].cpu().item<double>();
  }
  if (!inf) total = std::pow(total, 1.0 / norm_type);
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1) {
    torch::NoGradGuard no_grad;
    for (auto& g : grads) g.mul_(coef);
  }
  return total;
}

}  // namespace accelerate

// ---- model state (fsdp_state_dict.h) -----------------------------------------------------
namespace accelerate {
namespace {

namespace fs = std::filesystem;

std::string shard_file(const fs::path& dir, int64_t rank) {
  return (dir / ("shard_" + std::to_string(rank) + ".pt")).string();
}

constexpr const char* kMetadataFile = "fsdp_metadata.pt";

}  // namespace

torch::OrderedDict<std::string, torch::Tensor> Accelerator::module_state_dict(const torch::nn::Module& model) {
  const auto* sharded = sharded_models().find(model);
  std::map<const void*, torch::Tensor> full;
  if (sharded) full = detail::fsdp_state::gather_full(*sharded, is_main_process());
  torch::OrderedDict<std::string, torch::Tensor> out;
  if (!is_main_process()) return out;
  auto value = [&](const torch::Tensor& t) {
    auto it = full.find(t.unsafeGetTensorImpl());
    return it != full.end() ? it->second : t.detach().to(torch::kCPU).clone();
  };
  for (const auto& p : model.named_parameters(/*recurse=*/true)) out.insert(p.key(), value(p.value()));
  for (const auto& b : model.named_buffers(/*recurse=*/true)) out.insert(b.key(), value(b.value()));
  return out;
}

void Accelerator::save_full_model(const torch::nn::Module& model, const std::string& path) {
  const auto* sharded = sharded_models().find(model);
  std::map<const void*, torch::Tensor> full;
  if (sharded) full = detail::fsdp_state::gather_full(*sharded, is_main_process());  // collective
  if (!is_main_process()) return;
  torch::serialize::OutputArchive archive;
  if (sharded) {
    detail::fsdp_state::write_full(model, full, archive);
  } else {
    model.save(archive);
  }
  const std::string tmp = temp_path_for(path);
  archive.save_to(tmp);
  commit_temp_file(tmp, path);
}

void Accelerator::save_module(const torch::nn::Module& model, const std::string& path) {
  const FsdpSettings& settings = fsdp_settings();
  if (!settings.enabled || settings.state_dict_type != StateDictType::SHARDED_STATE_DICT) {
    save_full_model(model, path);
    return;
  }
  const fs::path dir = fs::absolute(path);
  if (is_main_process()) {
    if (fs::exists(dir) && !fs::is_directory(dir)) {
      throw CheckpointError("accelerate: save_model: '" + dir.string() +
                            "' is a file; a SHARDED_STATE_DICT is a "
                            "directory (one file per process): choose another path");
    }
    fs::create_directories(dir);
  }
  wait_for_everyone();
  detail::fsdp_state::write_sharded(model, sharded_models().find(model), process_index(), num_processes(),
                                    (dir / kMetadataFile).string(), [&](int64_t r) { return shard_file(dir, r); });
  wait_for_everyone();  // the directory is complete on every process's return
}

void Accelerator::load_module(torch::nn::Module& model, const std::string& path) {
  const auto* sharded = sharded_models().find(model);
  if (fs::is_directory(path)) {
    const fs::path dir = fs::absolute(path);
    detail::fsdp_state::read_sharded(model, sharded, (dir / kMetadataFile).string(),
                                     [&](int64_t r) { return shard_file(dir, r); });
    return;
  }
  if (!fs::is_regular_file(path)) {
    throw CheckpointError("accelerate: load_model: '" + path +
                          "' does not exist (expected a file written by "
                          "save_model/save or torch::save, or a directory written by save_model under "
                          "SHARDED_STATE_DICT)");
  }
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, torch::Device(torch::kCPU));
  } catch (const std::exception& e) {
    throw CheckpointError("accelerate: load_model: cannot read '" + path + "': " + e.what());
  }
  detail::fsdp_state::read_full(model, sharded, archive, "'" + path + "'");
}

}  // namespace accelerate

namespace accelerate {

FsdpStats Accelerator::fsdp_stats() const {
  FsdpStats stats;
  for (const auto& model : sharded_models().models()) {
    ++stats.models;
    for (const auto& unit : model->units()) {
      ++stats.units;
      stats.parameters += unit->numel();
      stats.local_parameters += unit->shard_numel();
      stats.gathered_units += unit->present() || unit->fetching() ? 1 : 0;
      stats.largest_unit = std::max(stats.largest_unit, unit->numel());
    }
    stats.gathers += model->stats().gathers;
    stats.reductions += model->stats().reductions;
    stats.prefetches += model->stats().prefetches;
    stats.prefetch_hits += model->stats().prefetch_hits;
    stats.most_gathered = std::max(stats.most_gathered, model->stats().most_gathered);
    stats.overlapped_reductions += model->stats().overlapped_reductions;
  }
  return stats;
}

}  // namespace accelerate
