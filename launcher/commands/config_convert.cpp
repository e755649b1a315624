#include "commands/config_convert.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <accelerate/log/logging.h>

#include "base/cli_args.h"
#include "commands/commands.h"
#include "config/config_file.h"

namespace accelerate::launcher {
namespace fs = std::filesystem;

namespace {

// A scalar quoted in the file (yaml-cpp's tag "!") is written quoted again, a plain one
// plain, so that each value reads back with the type it had: `'no'` stays a string and
// `false` a boolean, whatever PyYAML or yaml-cpp would guess.
bool was_quoted(const YAML::Node& node) { return node.Tag() == "!"; }

// Writes `node` with every mapping's keys sorted (yaml.safe_dump's order); JSON when `json`
// (flow style, strings double-quoted), for the reference's .json config files.
void emit(YAML::Emitter& out, const YAML::Node& node, bool json) {
  if (node.IsMap()) {
    std::vector<std::string> keys;
    for (const auto& entry : node) keys.push_back(entry.first.Scalar());
    std::sort(keys.begin(), keys.end());
    out << YAML::BeginMap;
    for (const auto& key : keys) {
      out << YAML::Key;
      if (json) out << YAML::DoubleQuoted;
      out << key << YAML::Value;
      emit(out, node[key], json);
    }
    out << YAML::EndMap;
  } else if (node.IsSequence()) {
    out << YAML::BeginSeq;
    for (const auto& item : node) emit(out, item, json);
    out << YAML::EndSeq;
  } else if (node.IsNull()) {
    out << YAML::Null;
  } else if (was_quoted(node)) {
    out << (json ? YAML::DoubleQuoted : YAML::SingleQuoted) << node.Scalar();
  } else {
    out << node.Scalar();
  }
}

bool is_json(const std::string& path) { return fs::path(path).extension() == ".json"; }

std::string write_text(const YAML::Node& root, bool json) {
  YAML::Emitter out;
  if (json) out << YAML::Flow;
  emit(out, root, json);
  return std::string(out.c_str()) + "\n";
}

YAML::Node load_node(const std::string& path) {
  load_config(path);  // refuses what a launch would refuse, naming the key
  return YAML::LoadFile(path);
}

bool yes(const YAML::Node& node) {
  if (!node.IsDefined() || !node.IsScalar()) return false;
  std::string v = node.Scalar();
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "true" || v == "yes" || v == "on" || v == "y" || v == "1";
}

// Writes beside the target and renames into place: a failed write leaves the old file whole.
void replace_file(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial-" + std::to_string(getpid());
  {
    std::ofstream file(partial, std::ios::binary | std::ios::trunc);
    file << text;
    file.flush();
    if (!file) {
      std::error_code ec;
      fs::remove(partial, ec);
      throw ConfigError("cannot write " + partial);
    }
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) {
    fs::remove(partial, ec);
    throw ConfigError("cannot replace " + path + ": " + ec.message());
  }
}

}  // namespace

ConvertedConfig updated_config(const std::string& path) {
  YAML::Node root = load_node(path);
  ConvertedConfig result;
  auto add_default = [&](const std::string& key, const std::string& value) {
    if (root[key].IsDefined()) return;
    root[key] = value;
    result.notes.push_back(key + ": " + value + " (the reference's default, now written)");
  };
  add_default("compute_environment", "LOCAL_MACHINE");
  if (root["distributed_type"].Scalar() == "NO") add_default("num_processes", "1");
  if (!root["mixed_precision"].IsDefined() && yes(root["fp16"])) {
    root["mixed_precision"] = "fp16";
    result.notes.push_back("fp16: true -> mixed_precision: fp16 (the reference's newer key)");
  }
  if (root["fp16"].IsDefined()) root.remove("fp16");
  if (root["dynamo_backend"].IsDefined()) {
    const std::string backend = root["dynamo_backend"].Scalar();
    root.remove("dynamo_backend");
    YAML::Node dynamo(YAML::NodeType::Map);
    if (backend != "NO") dynamo["dynamo_backend"] = backend;
    root["dynamo_config"] = dynamo;
    result.notes.push_back("dynamo_backend -> dynamo_config (the reference's newer key)");
  }
  add_default("use_cpu", "false");
  add_default("debug", "false");
  add_default("enable_cpu_affinity", "false");
  result.text = write_text(root, is_json(path));
  return result;
}

namespace {

// The reference's to-fsdp2 tables (commands/to_fsdp2.py, v1.14): the FSDP1 keys FSDP2 drops,
// and the strategy each sharding strategy becomes.
const std::set<std::string> kDroppedInFsdp2 = {"fsdp_backward_prefetch", "fsdp_backward_prefetch_policy",
                                               "fsdp_forward_prefetch", "fsdp_sync_module_states",
                                               "fsdp_use_orig_params"};

// FULL_SHARD and HYBRID_SHARD free the gathered parameters after the forward pass (true);
// SHARD_GRAD_OP, HYBRID_SHARD_ZERO2 and NO_SHARD keep them (false). Numbers as the strategies'.
std::string reshard_value(const std::string& strategy, ConvertedConfig& result) {
  std::string v = strategy;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  if (v == "FULL_SHARD" || v == "HYBRID_SHARD" || v == "1" || v == "4") return "true";
  if (v == "NO_SHARD" || v == "3") {
    result.notes.push_back(
        "fsdp_sharding_strategy NO_SHARD -> fsdp_reshard_after_forward: false, which is "
        "SHARD_GRAD_OP here: FSDP2 has no unsharded mode (the same numbers, more communication)");
  }
  if (v == "SHARD_GRAD_OP" || v == "HYBRID_SHARD_ZERO2" || v == "NO_SHARD" || v == "2" || v == "3" || v == "5") {
    return "false";
  }
  throw ConfigError("fsdp_config.fsdp_sharding_strategy '" + strategy + "' is not a sharding strategy");
}

}  // namespace

ConvertedConfig fsdp2_config(const std::string& path) {
  YAML::Node root = load_node(path);
  ConvertedConfig result;
  YAML::Node fsdp = root["fsdp_config"];
  if (!fsdp.IsDefined() || !fsdp.IsMap() || fsdp.size() == 0) {
    result.notes.push_back("no fsdp_config in " + path + ": nothing to convert");
  } else if (fsdp["fsdp_version"].IsDefined() && fsdp["fsdp_version"].Scalar() == "2") {
    result.notes.push_back(path + " is FSDP2 already (fsdp_version: 2): nothing to convert");
  } else {
    YAML::Node converted(YAML::NodeType::Map);
    for (const auto& entry : fsdp) {
      const std::string key = entry.first.Scalar();
      if (kDroppedInFsdp2.count(key)) {
        result.notes.push_back(key + " removed: FSDP2 has no such setting (with this runtime it tuned speed only)");
      } else if (key == "fsdp_sharding_strategy" || key == "fsdp_reshard_after_forward") {
        converted["fsdp_reshard_after_forward"] = reshard_value(entry.second.Scalar(), result);
      } else {
        converted[key] = entry.second;
      }
    }
    converted["fsdp_version"] = "2";
    root["fsdp_config"] = converted;
  }
  result.text = write_text(root, is_json(path));
  return result;
}

namespace {

const char* const kUpdateUsage =
    "usage: accelerate config update [--config_file PATH]\n"
    "Rewrites a config file with the reference's defaults added and its older keys in their\n"
    "newer spelling; every other key is kept (default path: the default config).\n";
const char* const kToFsdp2Usage =
    "usage: accelerate to-fsdp2 --config_file PATH [--output_file PATH] [--overwrite]\n"
    "Converts a config's FSDP1 fsdp_config to FSDP2's keys (fsdp_version: 2). Without\n"
    "--overwrite the result goes to --output_file, which must not exist.\n";

// Runs one config command body with the launcher's exit codes: 2 for usage, 1 for the rest.
template <typename Body>
int guarded(const char* name, Body body) {
  try {
    return body();
  } catch (const UsageError& e) {
    return command_failed(std::string("accelerate ") + name, e.what(), 2);
  } catch (const std::exception& e) {
    return command_failed(std::string("accelerate ") + name, e.what(), 1);
  }
}

void print_notes(const char* name, const ConvertedConfig& converted) {
  const Logger log = get_logger(std::string("accelerate ") + name);
  for (const auto& note : converted.notes) log.info(note);
}

}  // namespace

int run_config_update_command(const std::vector<std::string>& args) {
  return guarded("config update", [&] {
    ParsedArgs parsed =
        parse_args(args, {{"config_file", Arity::kValue, 0, ""}, {"help", Arity::kSwitch, 'h', ""}}, false);
    if (parsed.has("help")) {
      std::cout << kUpdateUsage;
      return 0;
    }
    if (!parsed.positional.empty()) throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
    const std::string path = parsed.has("config_file") ? parsed.values["config_file"] : default_config_path();
    if (!fs::is_regular_file(path)) throw ConfigError("config file " + path + " does not exist");
    const ConvertedConfig converted = updated_config(path);
    replace_file(path, converted.text);
    print_notes("config update", converted);
    std::cout << "Successfully updated the configuration file at " << path << ".\n";
    return 0;
  });
}

int run_to_fsdp2_command(const std::vector<std::string>& args) {
  return guarded("to-fsdp2", [&] {
    ParsedArgs parsed = parse_args(args,
                                   {{"config_file", Arity::kValue, 0, ""},
                                    {"output_file", Arity::kValue, 0, ""},
                                    {"overwrite", Arity::kSwitch, 0, ""},
                                    {"help", Arity::kSwitch, 'h', ""}},
                                   false);
    if (parsed.has("help")) {
      std::cout << kToFsdp2Usage;
      return 0;
    }
    if (!parsed.positional.empty()) throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
    if (!parsed.has("config_file")) throw UsageError("--config_file is required\n" + std::string(kToFsdp2Usage));
    const std::string path = parsed.values["config_file"];
    if (!fs::is_regular_file(path)) throw ConfigError("config file " + path + " not found");
    const bool overwrite = parsed.has("overwrite");
    if (!overwrite && !parsed.has("output_file")) throw UsageError("without --overwrite, give --output_file");
    const std::string output = parsed.has("output_file") ? parsed.values["output_file"] : path;
    if (!overwrite && fs::exists(output)) {
      throw UsageError("--output_file " + output + " exists: pass --overwrite to replace it, or another name");
    }
    const ConvertedConfig converted = fsdp2_config(path);
    replace_file(output, converted.text);
    print_notes("to-fsdp2", converted);
    std::cout << "FSDP2 config written to " << output << ".\n";
    return 0;
  });
}

int run_tpu_config_command(const std::vector<std::string>& args) {
  const bool help = !args.empty() && (args.front() == "--help" || args.front() == "-h");
  const std::string why =
      "TPUs are not supported by the LibTorch launcher: tpu-config runs commands on the VMs of a TPU pod. "
      "Run the commands on each machine yourself; multi-machine training is accelerate launch "
      "--num_machines (docs/multi-node.md).";
  if (!help) return command_failed("accelerate tpu-config", why, 1);
  std::cout << "usage: accelerate tpu-config ...\n" << why << "\n";
  return 0;
}

}  // namespace accelerate::launcher
