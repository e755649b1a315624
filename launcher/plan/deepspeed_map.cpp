#include "plan/deepspeed_map.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "plan/launch_plan.h"

namespace accelerate::launcher {

namespace {

using json = nlohmann::json;

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

// Copies one JSON value into `values` unless it is "auto" (left to the flags, as the
// reference fills "auto" from its own settings).
void take(const json& v, const std::string& key, std::map<std::string, std::string>& values) {
  if (v.is_string() && v.get<std::string>() == "auto") return;
  if (!v.is_primitive()) throw PlanError("expected a single value for " + key);
  values[key] = scalar_text(v);
}

bool enabled(const json& section) {
  if (!section.is_object() || !section.contains("enabled")) return false;
  const json& e = section["enabled"];
  return e.is_boolean() ? e.get<bool>() : (e.is_string() && e.get<std::string>() == "true");
}

void read_zero(const json& zero, std::map<std::string, std::string>& values, std::vector<std::string>& unused) {
  if (!zero.is_object()) throw PlanError("zero_optimization: expected an object");
  for (const auto& [key, v] : zero.items()) {
    if (key == "stage") {
      take(v, "zero_stage", values);
    } else if (key == "offload_param" || key == "offload_optimizer") {
      if (v.is_object() && v.contains("device")) take(v["device"], key + "_device", values);
      if (v.is_object() && v.contains("nvme_path")) values[key + "_nvme"] = scalar_text(v["nvme_path"]);
    } else {
      unused.push_back("zero_optimization." + key);  // buckets, overlap: speed only
    }
  }
}

int parse_count(const std::string& text, const std::string& what, int low) {
  size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || n < low) {
    throw PlanError(what + ": expected an integer of at least " + std::to_string(low) + ", got '" + text + "'");
  }
  return n;
}

// Offload: "none" or "cpu" map; "nvme" (and anything else) has no equivalent.
bool parse_offload(const std::map<std::string, std::string>& v, const std::string& key) {
  auto it = v.find(key);
  if (it == v.end() || it->second == "none") return false;
  if (it->second == "cpu") return true;
  throw PlanError(key + "=" + it->second + ": only none and cpu map onto FSDP (offloading to NVMe is not available)");
}

}  // namespace

std::vector<std::string> read_deepspeed_json(const std::string& path, std::map<std::string, std::string>& values) {
  std::ifstream in(path);
  if (!in) throw PlanError("deepspeed_config_file " + path + ": cannot be read");
  json root = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    throw PlanError("deepspeed_config_file " + path + ": not a JSON object");
  }
  std::vector<std::string> unused;
  try {
    for (const auto& [key, v] : root.items()) {
      if (key == "zero_optimization") {
        read_zero(v, values, unused);
      } else if (key == "gradient_accumulation_steps" || key == "gradient_clipping") {
        take(v, key, values);
      } else if (key == "bf16" || key == "fp16") {
        if (enabled(v)) values["mixed_precision"] = key;
      } else if (key == "optimizer" || key == "scheduler") {
        throw PlanError(key + ": DeepSpeed's own " + key +
                        " is not available; the program's own is used: remove the section");
      } else {
        unused.push_back(key);  // batch sizes (the program's loader decides), logging, ...
      }
    }
  } catch (const PlanError& e) {
    throw PlanError("deepspeed_config_file " + path + ": " + e.what());
  }
  return unused;
}

std::string apply_deepspeed(const DeepSpeedRequest& request, LaunchPlan& plan) {
  if (!request.enabled) return "";
  const auto& v = request.values;
  auto get = [&](const char* key) -> const std::string* {
    auto it = v.find(key);
    return it == v.end() ? nullptr : &it->second;
  };
  if (plan.use_fsdp) throw PlanError("--use_deepspeed and --use_fsdp (or distributed_type FSDP): choose one");
  // The reference's default stage when none is given.
  const int stage = get("zero_stage") ? parse_count(*get("zero_stage"), "zero_stage", 0) : 2;
  if (stage > 3) throw PlanError("zero_stage: expected 0, 1, 2 or 3, got " + std::to_string(stage));
  const bool offload = parse_offload(v, "offload_param_device") || parse_offload(v, "offload_optimizer_device");
  if (get("offload_param_nvme") || get("offload_optimizer_nvme")) {
    throw PlanError("nvme_path: offloading to NVMe is not available (cpu is)");
  }
  std::ostringstream line;
  line << "DeepSpeed ZeRO-" << stage << " -> ";
  if (stage == 0) {
    if (offload) throw PlanError("offload needs zero_stage 1, 2 or 3 (stage 0 is plain data parallel)");
    line << "data parallel (every process holds the whole model)";
  } else {
    plan.use_fsdp = true;
    plan.fsdp_sharding_strategy = stage == 3 ? "FULL_SHARD" : "SHARD_GRAD_OP";
    plan.fsdp_offload_params = offload ? "true" : "false";
    line << "FSDP " << plan.fsdp_sharding_strategy << (stage == 1 ? " (gradients sharded too; same results)" : "");
    if (offload) line << ", parameters offloaded to CPU";
  }
  if (const auto* clip = get("gradient_clipping")) {
    double c = -1;
    try {
      c = std::stod(*clip);
    } catch (const std::exception&) {
    }
    if (!(c >= 0)) throw PlanError("gradient_clipping: expected a norm of at least 0, got '" + *clip + "'");
    if (c > 0) {
      plan.gradient_clipping = *clip;
      line << ", gradient norm clipped to " << *clip << " at optimizer_step()";
    }
  }
  if (const auto* steps = get("gradient_accumulation_steps"); steps && !request.accumulation_given) {
    plan.gradient_accumulation_steps = parse_count(*steps, "gradient_accumulation_steps", 1);
    line << ", gradient accumulation " << *plan.gradient_accumulation_steps;
  }
  if (const auto* mp = get("mixed_precision")) {
    // *mp is the name of the JSON file's enabled section, bf16 or fp16: read here, on its way in.
    const std::optional<PrecisionType> enabled = precision_from_string(*mp);
    const PrecisionType asked = plan.settings.mixed_precision.value_or(PrecisionType::No);
    if (request.precision_given && asked != enabled) {
      throw PlanError("deepspeed_config_file enables " + *mp + " but mixed precision " + to_string(asked) +
                      " was asked for: make them agree");
    }
    plan.settings.mixed_precision = enabled;
    line << ", " << *mp;
  }
  line << " (docs/launcher.md, DeepSpeed)";
  return line.str();
}

}  // namespace accelerate::launcher
