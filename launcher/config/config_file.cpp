#include "config/config_file.h"

#include <accelerate/core/fsdp_options.h>
#include <accelerate/core/precision_type.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "base/cli_args.h"
#include "base/compat_flags.h"

namespace accelerate::launcher {
namespace fs = std::filesystem;

namespace {

const std::set<std::string> kComputeEnvironments = {"LOCAL_MACHINE", "AMAZON_SAGEMAKER"};
const std::set<std::string> kDistributedTypes = {
    "NO",        "MULTI_CPU",    "MULTI_GPU", "MULTI_XPU", "MULTI_NPU", "MULTI_MLU",   "MULTI_MUSA", "MULTI_SDAA",
    "MULTI_HPU", "MULTI_NEURON", "DEEPSPEED", "FSDP",      "TP",        "MEGATRON_LM", "XLA",        "TPU"};
// Paradigm sections: accepted, honoured only where stated (see docs/launcher.md).
const std::set<std::string> kSections = {"fp8_config",    "deepspeed_config",   "fsdp_config",
                                         "tp_config",     "megatron_lm_config", "ipex_config",
                                         "mpirun_config", "dynamo_config",      "parallelism_config"};
// Keys the reference knows that do not change how we launch.
const std::set<std::string> kAcceptedOther = {
    "tpu_name", "tpu_zone", "command_file", "commands", "tpu_vm", "tpu_env", "fp16", "dynamo_backend",
    "use_mps_device",  // older reference versions
    // Amazon SageMaker keys, so that the error says "SageMaker" rather than "unknown key".
    "ec2_instance_type", "iam_role_name", "image_uri", "profile", "region", "base_job_name", "pytorch_version",
    "transformers_version", "py_version", "sagemaker_inputs_file", "sagemaker_metrics_file", "additional_args"};

// "config file P: unknown key 'K' (did you mean 'N'?)": the nearest known key is named when
// it is within a third of the key's length, else the error says where the keys are listed.
std::string unknown_key_message(const std::string& path, const std::string& section, const std::string& key,
                                const std::vector<std::string>& known) {
  const std::string nearest = nearest_name(key, known, key.size() / 3 + 1);
  std::string text = "config file " + path + ": unknown key '" + section + key + "'";
  if (!nearest.empty()) return text + " (did you mean '" + section + nearest + "'?)";
  return text + ": not a key of Hugging Face Accelerate's config (docs/launcher.md lists them); remove it";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class KeyReader {
 public:
  // `section` ("fsdp_config." for that block) prefixes the key in messages, so that a bad
  // value inside a section names where it is.
  KeyReader(const YAML::Node& root, const std::string& path, const std::string& section = "")
      : root_(root), path_(path), section_(section) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw ConfigError("config file " + path_ + ": key '" + section_ + key + "': " + why);
  }

  bool present(const std::string& key) const {
    auto node = root_[key];
    return node.IsDefined() && !node.IsNull();
  }

  std::string scalar(const std::string& key) const {
    auto node = root_[key];
    if (!node.IsScalar()) fail(key, "expected a single value");
    return node.Scalar();
  }

  std::string text(const std::string& key) const { return scalar(key); }

  int integer(const std::string& key) const {
    std::string value = scalar(key);
    try {
      size_t used = 0;
      long n = std::stol(value, &used, 10);
      if (used == value.size() && n >= -2147483647L && n <= 2147483647L) return static_cast<int>(n);
    } catch (const std::exception&) {
    }
    fail(key, "expected an integer, got '" + value + "'");
  }

  bool boolean(const std::string& key) const {
    // YAML 1.1 spellings, as PyYAML (which writes the reference's files) reads them.
    std::string value = lower(scalar(key));
    if (value == "true" || value == "yes" || value == "on" || value == "y" || value == "1") return true;
    if (value == "false" || value == "no" || value == "off" || value == "n" || value == "0") return false;
    fail(key, "expected true or false, got '" + scalar(key) + "'");
  }

  // The one parser of the precision values; fp8 passes, and the launch plan refuses it with
  // its reason.
  PrecisionType precision(const std::string& key) const {
    const std::optional<PrecisionType> type = precision_from_string(scalar(key));
    if (!type) fail(key, "'" + scalar(key) + "' is not one of: " + precision_choices(true));
    return *type;
  }

  std::string choice(const std::string& key, const std::set<std::string>& allowed, bool lowercase) const {
    std::string value = scalar(key);
    if (lowercase) value = lower(value);
    if (!allowed.count(value)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(key, "'" + scalar(key) + "' is not one of: " + list);
    }
    return value;
  }

 private:
  const YAML::Node& root_;
  std::string path_;
  std::string section_;
};

// A mapping's key as text. YAML allows a list or a mapping as a key ("? [a, b]: 1"), which
// no config key is: refused here with the file's name rather than by yaml-cpp's bare "bad
// conversion" (found by fuzz/config_file_fuzz.cpp).
std::string key_text(const YAML::Node& key, const std::string& path, const std::string& section) {
  if (key.IsScalar()) return key.Scalar();
  throw ConfigError("config file " + path + ": " + (section.empty() ? "" : "section '" + section + "' has ") +
                    "a key that is not a name (a list or mapping used as a key)");
}

void check_gpu_ids(const KeyReader& reader, const std::string& key, const std::string& ids) {
  if (ids == "all") return;
  std::stringstream in(ids);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty() || !std::all_of(item.begin(), item.end(), ::isdigit)) {
      reader.fail(key, "expected 'all' or a comma-separated list of GPU ids, got '" + ids + "'");
    }
    any = true;
  }
  if (!any) reader.fail(key, "expected 'all' or a comma-separated list of GPU ids, got ''");
}

// A section key that has no field here, by the table `accelerate launch` uses for the flags
// of the same names (compat_flags.h): refused unless its value asks for nothing, kept for
// the warning when it only tunes; DeepSpeed's are kept for the mapping (deepspeed_map.h).
// Returns false for a key the table does not know.
bool read_compat_key(const KeyReader& r, const std::string& key, const std::string& where, LoadedConfig& out) {
  const CompatFlag* flag = find_compat_flag(key);
  if (!flag) return false;
  const std::string value = r.scalar(key);
  switch (flag->kind) {
    case CompatKind::kRefused:
      if (!asks_for_nothing(*flag, value))
        throw ConfigError(refusal(*flag, "config file " + out.path + ": key '" + where + "'"));
      break;
    case CompatKind::kTuning:
      if (!asks_for_nothing(*flag, value)) out.config.tuning_keys.push_back(key);
      break;
    case CompatKind::kDeepSpeed:
      out.config.deepspeed[key] = value;
      break;
  }
  return true;
}

// The reference renamed fsdp_backward_prefetch_policy to fsdp_backward_prefetch and reads
// both; a file with the two must give one value, else one would be dropped unseen.
void read_backward_prefetch(const KeyReader& r, const std::string& key, const std::string& path, ClusterConfig& c) {
  const std::optional<std::string> value = to_string(parse_backward_prefetch(r.scalar(key), "fsdp_config." + key));
  if (c.fsdp_backward_prefetch && *c.fsdp_backward_prefetch != *value) {
    throw ConfigError("config file " + path +
                      ": fsdp_config.fsdp_backward_prefetch and fsdp_config.fsdp_backward_prefetch_policy (its older "
                      "name) contradict each other (" +
                      *c.fsdp_backward_prefetch + ", " + *value + "): keep one");
  }
  c.fsdp_backward_prefetch = value;
}

// The keys a section may hold: its own, and every flag name of the compat table (the
// reference's section keys are its flags' names), for the "did you mean" of an unknown one.
std::vector<std::string> section_keys(std::vector<std::string> own) {
  for (const auto& flag : compat_flags()) own.emplace_back(flag.name);
  return own;
}

const std::vector<std::string> kFsdpKeys = {"fsdp_sharding_strategy",        "fsdp_reshard_after_forward",
                                            "fsdp_auto_wrap_policy",         "fsdp_min_num_params",
                                            "fsdp_state_dict_type",          "fsdp_transformer_layer_cls_to_wrap",
                                            "fsdp_offload_params",           "fsdp_backward_prefetch",
                                            "fsdp_backward_prefetch_policy", "fsdp_forward_prefetch"};

// FSDP2 configs name the strategy by fsdp_reshard_after_forward; a file with both keys must
// mean one strategy, else one would be dropped unseen.
void fold_reshard_after_forward(const std::optional<std::string>& reshard, const std::string& path, ClusterConfig& c) {
  if (!reshard) return;
  if (c.fsdp_sharding_strategy && *c.fsdp_sharding_strategy != *reshard) {
    throw ConfigError("config file " + path + ": fsdp_config.fsdp_sharding_strategy (" + *c.fsdp_sharding_strategy +
                      ") and fsdp_config.fsdp_reshard_after_forward (" + *reshard +
                      ") contradict each other: keep one");
  }
  c.fsdp_sharding_strategy = reshard;
}

// The honoured keys are checked with the runtime's own parsers and kept in canonical spelling.
void read_fsdp_config(const YAML::Node& node, const std::string& path, LoadedConfig& out) {
  ClusterConfig& c = out.config;
  KeyReader r(node, path, "fsdp_config.");
  auto where = [](const std::string& key) { return "fsdp_config." + key; };
  std::optional<std::string> reshard;
  try {
    for (const auto& entry : node) {
      const std::string key = key_text(entry.first, path, "fsdp_config");
      if (!r.present(key)) continue;
      if (key == "fsdp_sharding_strategy") {
        c.fsdp_sharding_strategy = to_string(parse_sharding_strategy(r.scalar(key), where(key)));
      } else if (key == "fsdp_reshard_after_forward") {
        reshard = to_string(parse_reshard_after_forward(r.scalar(key), where(key)));
      } else if (key == "fsdp_auto_wrap_policy") {
        c.fsdp_auto_wrap_policy = to_string(parse_auto_wrap_policy(r.scalar(key), where(key)));
      } else if (key == "fsdp_min_num_params") {
        c.fsdp_min_num_params = std::to_string(parse_min_num_params(r.scalar(key), where(key)));
      } else if (key == "fsdp_state_dict_type") {
        c.fsdp_state_dict_type = to_string(parse_state_dict_type(r.scalar(key), where(key)));
      } else if (key == "fsdp_transformer_layer_cls_to_wrap") {
        c.fsdp_transformer_layer_cls_to_wrap = r.scalar(key);
      } else if (key == "fsdp_offload_params") {
        c.fsdp_offload_params = r.boolean(key);
      } else if (key == "fsdp_backward_prefetch" || key == "fsdp_backward_prefetch_policy") {
        read_backward_prefetch(r, key, path, c);
      } else if (key == "fsdp_forward_prefetch") {
        c.fsdp_forward_prefetch = r.boolean(key);
      } else if (!read_compat_key(r, key, where(key), out)) {
        throw ConfigError(unknown_key_message(path, "fsdp_config.", key, section_keys(kFsdpKeys)));
      }
    }
    fold_reshard_after_forward(reshard, path, c);
  } catch (const FsdpConfigError& e) {
    std::string message = e.what();
    const std::string prefix = "accelerate: ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw ConfigError("config file " + path + ": " + message);
  }
}

}  // namespace

std::string default_config_path() {
  std::string hf_home;
  if (const char* v = std::getenv("HF_HOME"); v && *v) {
    hf_home = v;
  } else {
    std::string cache;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
      cache = x;
    } else {
      const char* home = std::getenv("HOME");
      cache = std::string(home ? home : "") + "/.cache";
    }
    hf_home = cache + "/huggingface";
  }
  if (hf_home.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    hf_home = std::string(home ? home : "") + hf_home.substr(1);
  }
  return hf_home + "/accelerate/default_config.yaml";
}

namespace {

// The top-level keys of the reference's BaseConfig and ClusterConfig (v1.14,
// test/expected/hf-accelerate.txt), and of its older releases.
const std::set<std::string> kCoreKeys = {"compute_environment",
                                         "distributed_type",
                                         "mixed_precision",
                                         "use_cpu",
                                         "debug",
                                         "num_processes",
                                         "machine_rank",
                                         "num_machines",
                                         "gpu_ids",
                                         "main_process_ip",
                                         "main_process_port",
                                         "rdzv_backend",
                                         "same_network",
                                         "main_training_function",
                                         "enable_cpu_affinity",
                                         "downcast_bf16",
                                         "tpu_use_cluster",
                                         "tpu_use_sudo"};

// Unknown keys are refused, as the reference refuses them: a misspelt key (mixed_precison)
// would otherwise do nothing unseen. The error names the nearest known key.
void refuse_unknown_keys(const YAML::Node& root, const std::string& path) {
  std::vector<std::string> known(kCoreKeys.begin(), kCoreKeys.end());
  known.insert(known.end(), kSections.begin(), kSections.end());
  known.insert(known.end(), kAcceptedOther.begin(), kAcceptedOther.end());
  for (const auto& entry : root) {
    const std::string key = key_text(entry.first, path, "");
    if (!kCoreKeys.count(key) && !kSections.count(key) && !kAcceptedOther.count(key)) {
      throw ConfigError(unknown_key_message(path, "", key, known));
    }
  }
}

void read_core_keys(const KeyReader& r, ClusterConfig& c) {
  if (r.present("compute_environment")) {
    c.compute_environment = r.choice("compute_environment", kComputeEnvironments, false);
  }
  if (c.compute_environment == "AMAZON_SAGEMAKER") {
    r.fail("compute_environment",
           "AMAZON_SAGEMAKER is not supported by the LibTorch launcher; "
           "use LOCAL_MACHINE");
  }
  if (!r.present("distributed_type")) r.fail("distributed_type", "missing (the reference requires it too)");
  c.distributed_type = r.choice("distributed_type", kDistributedTypes, false);
  if (r.present("mixed_precision")) {
    c.mixed_precision = r.precision("mixed_precision");
  } else if (r.present("fp16") && r.boolean("fp16")) {
    c.mixed_precision = PrecisionType::FP16;  // the reference's older format
  }
  if (r.present("use_cpu")) c.use_cpu = r.boolean("use_cpu");
  if (r.present("debug")) c.debug = r.boolean("debug");
  if (r.present("num_processes")) {
    c.num_processes = r.integer("num_processes");
    if (c.num_processes < 1 && c.num_processes != -1) r.fail("num_processes", "must be at least 1");
  } else if (c.distributed_type == "NO") {
    c.num_processes = 1;
  }
  if (r.present("num_machines")) {
    c.num_machines = r.integer("num_machines");
    if (c.num_machines < 1) r.fail("num_machines", "must be at least 1");
  }
  if (r.present("machine_rank")) {
    c.machine_rank = r.integer("machine_rank");
    if (c.machine_rank < 0 || c.machine_rank >= c.num_machines) {
      r.fail("machine_rank", "must be between 0 and num_machines - 1 (" + std::to_string(c.num_machines - 1) + ")");
    }
  }
  if (r.present("gpu_ids")) {
    c.gpu_ids = r.text("gpu_ids");
    check_gpu_ids(r, "gpu_ids", *c.gpu_ids);
  }
  if (r.present("main_process_ip")) c.main_process_ip = r.text("main_process_ip");
  if (r.present("main_process_port")) {
    c.main_process_port = r.integer("main_process_port");
    if (*c.main_process_port < 0 || *c.main_process_port > 65535) {
      r.fail("main_process_port", "must be between 0 and 65535");
    }
  }
  if (r.present("rdzv_backend")) c.rdzv_backend = r.text("rdzv_backend");
  if (r.present("same_network")) c.same_network = r.boolean("same_network");
  if (r.present("main_training_function")) c.main_training_function = r.text("main_training_function");
  if (r.present("enable_cpu_affinity")) c.enable_cpu_affinity = r.boolean("enable_cpu_affinity");
  // The reference's `accelerate config` writes downcast_bf16 as the string 'no'.
  if (r.present("downcast_bf16")) c.downcast_bf16 = r.boolean("downcast_bf16");
  if (r.present("tpu_use_cluster")) c.tpu_use_cluster = r.boolean("tpu_use_cluster");
  if (r.present("tpu_use_sudo")) c.tpu_use_sudo = r.boolean("tpu_use_sudo");
}

// deepspeed_config: its keys have the names of the reference's flags (compat_flags.h);
// gradient_accumulation_steps is honoured whatever the distributed_type, as before.
void read_deepspeed_config(const YAML::Node& node, const std::string& path, LoadedConfig& out) {
  KeyReader sub(node, path);
  for (const auto& entry : node) {
    const std::string key = key_text(entry.first, path, "deepspeed_config");
    if (!sub.present(key)) continue;
    if (key == "gradient_accumulation_steps") {
      out.config.gradient_accumulation_steps = sub.integer(key);
      if (*out.config.gradient_accumulation_steps < 1) sub.fail("deepspeed_config." + key, "must be at least 1");
      out.config.deepspeed[key] = sub.scalar(key);
    } else if (!read_compat_key(sub, key, "deepspeed_config." + key, out)) {
      throw ConfigError(
          unknown_key_message(path, "deepspeed_config.", key, section_keys({"gradient_accumulation_steps"})));
    }
  }
}

// A section whose keys are the reference's flag names and none of them a field here
// (parallelism_config, mpirun_config): each key is refused, tuning or mapped by the compat
// table, so that a size above 1 or a hostfile is refused before anything waits for it.
void read_compat_section(const YAML::Node& node, const std::string& section, const std::string& path,
                         LoadedConfig& out) {
  KeyReader sub(node, path);
  for (const auto& entry : node) {
    const std::string key = key_text(entry.first, path, section);
    if (!sub.present(key)) continue;
    if (section == "mpirun_config" && key == "mpirun_hostfile") {
      out.config.mpirun_hostfile = sub.text(key);
    } else if (!read_compat_key(sub, key, section + "." + key, out)) {
      throw ConfigError(unknown_key_message(path, section + ".", key, section_keys({"mpirun_hostfile"})));
    }
  }
}

void read_sections(const YAML::Node& root, const KeyReader& r, const std::string& path, LoadedConfig& out) {
  ClusterConfig& c = out.config;
  for (const auto& section : kSections) {
    if (!r.present(section)) continue;
    auto node = root[section];
    if (!node.IsMap()) r.fail(section, "expected a mapping");
    if (node.size() == 0) continue;
    if (section == "fsdp_config") {
      read_fsdp_config(node, path, out);
      continue;
    }
    if (section == "deepspeed_config") {
      read_deepspeed_config(node, path, out);
      continue;
    }
    if (section == "parallelism_config" || section == "mpirun_config") {
      read_compat_section(node, section, path, out);
      continue;
    }
    c.unsupported_sections.push_back(section);
  }
}

}  // namespace

bool is_multi_process_type(const std::string& t) { return t != "NO" && t != "XLA" && t != "TPU"; }

LoadedConfig load_config(const std::string& path) {
  if (!fs::is_regular_file(path)) {
    throw ConfigError("config file " + path +
                      " does not exist. Pass an existing file to --config_file, "
                      "or create the default one with `accelerate config`.");
  }
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file) throw ConfigError("config file " + path + " cannot be read");
  return parse_config(text.str(), path);
}

LoadedConfig parse_config(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError("config file " + path + " is not valid YAML: " + e.what());
  }
  if (root.IsNull()) throw ConfigError("config file " + path + " is empty");
  if (!root.IsMap()) throw ConfigError("config file " + path + " must be a mapping of keys to values");

  LoadedConfig out;
  out.path = path;
  KeyReader r(root, path);
  refuse_unknown_keys(root, path);
  read_core_keys(r, out.config);
  read_sections(root, r, path, out);
  return out;
}

// PyYAML (which reads these files for the reference) takes YAML 1.1 words such as NO or
// no as booleans: quote them, as PyYAML itself does when it writes the file.
struct Quoted {
  const std::string& text;
};

YAML::Emitter& operator<<(YAML::Emitter& out, const Quoted& q) {
  static const std::set<std::string> kAmbiguous = {"yes", "no", "true", "false", "on", "off",
                                                   "y",   "n",  "null", "~",     ""};
  if (kAmbiguous.count(lower(q.text))) return out << YAML::SingleQuoted << q.text;
  return out << q.text;
}

namespace {

// The fsdp_config block, its keys sorted as the reference writes them.
void write_fsdp_config(YAML::Emitter& out, const ClusterConfig& c) {
  out << YAML::Key << "fsdp_config" << YAML::Value << YAML::BeginMap;
  if (c.fsdp_auto_wrap_policy) out << YAML::Key << "fsdp_auto_wrap_policy" << YAML::Value << *c.fsdp_auto_wrap_policy;
  if (c.fsdp_backward_prefetch) {
    out << YAML::Key << "fsdp_backward_prefetch" << YAML::Value << *c.fsdp_backward_prefetch;
  }
  if (c.fsdp_forward_prefetch) out << YAML::Key << "fsdp_forward_prefetch" << YAML::Value << *c.fsdp_forward_prefetch;
  if (c.fsdp_min_num_params) out << YAML::Key << "fsdp_min_num_params" << YAML::Value << *c.fsdp_min_num_params;
  if (c.fsdp_offload_params) out << YAML::Key << "fsdp_offload_params" << YAML::Value << *c.fsdp_offload_params;
  if (c.fsdp_sharding_strategy) {
    out << YAML::Key << "fsdp_sharding_strategy" << YAML::Value << *c.fsdp_sharding_strategy;
  }
  if (c.fsdp_state_dict_type) out << YAML::Key << "fsdp_state_dict_type" << YAML::Value << *c.fsdp_state_dict_type;
  if (c.fsdp_transformer_layer_cls_to_wrap) {
    out << YAML::Key << "fsdp_transformer_layer_cls_to_wrap" << YAML::Value << *c.fsdp_transformer_layer_cls_to_wrap;
  }
  out << YAML::EndMap;
}

}  // namespace

std::string config_to_yaml(const ClusterConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  // Sorted keys, as the reference (yaml.safe_dump) writes them; None values are left out.
  out << YAML::Key << "compute_environment" << YAML::Value << Quoted{c.compute_environment};
  out << YAML::Key << "debug" << YAML::Value << c.debug;
  out << YAML::Key << "distributed_type" << YAML::Value << Quoted{c.distributed_type};
  out << YAML::Key << "downcast_bf16" << YAML::Value << c.downcast_bf16;
  out << YAML::Key << "enable_cpu_affinity" << YAML::Value << c.enable_cpu_affinity;
  if (c.distributed_type == "FSDP") write_fsdp_config(out, c);
  if (c.gpu_ids) out << YAML::Key << "gpu_ids" << YAML::Value << Quoted{*c.gpu_ids};
  out << YAML::Key << "machine_rank" << YAML::Value << c.machine_rank;
  if (c.main_process_ip) out << YAML::Key << "main_process_ip" << YAML::Value << Quoted{*c.main_process_ip};
  if (c.main_process_port) out << YAML::Key << "main_process_port" << YAML::Value << *c.main_process_port;
  out << YAML::Key << "main_training_function" << YAML::Value << Quoted{c.main_training_function};
  if (c.mixed_precision) out << YAML::Key << "mixed_precision" << YAML::Value << Quoted{to_string(*c.mixed_precision)};
  if (c.mpirun_hostfile) {  // as the reference writes it: mpirun_config: {mpirun_hostfile: PATH}
    out << YAML::Key << "mpirun_config" << YAML::Value << YAML::BeginMap << YAML::Key << "mpirun_hostfile"
        << YAML::Value << Quoted{*c.mpirun_hostfile} << YAML::EndMap;
  }
  out << YAML::Key << "num_machines" << YAML::Value << c.num_machines;
  out << YAML::Key << "num_processes" << YAML::Value << c.num_processes;
  out << YAML::Key << "rdzv_backend" << YAML::Value << Quoted{c.rdzv_backend};
  out << YAML::Key << "same_network" << YAML::Value << c.same_network;
  out << YAML::Key << "tpu_env" << YAML::Value << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
  out << YAML::Key << "tpu_use_cluster" << YAML::Value << c.tpu_use_cluster;
  out << YAML::Key << "tpu_use_sudo" << YAML::Value << c.tpu_use_sudo;
  out << YAML::Key << "use_cpu" << YAML::Value << c.use_cpu;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void save_config(const ClusterConfig& config, const std::string& path) {
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::ofstream file(path);
  if (!file) throw ConfigError("cannot write config file " + path);
  file << config_to_yaml(config);
  if (!file) throw ConfigError("cannot write config file " + path);
}

}  // namespace accelerate::launcher
