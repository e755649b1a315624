#include "launch_args.h"

#include <accelerate/fsdp_options.h>
#include <accelerate/precision_type.h>

#include <cctype>
#include <set>

#include "compat_flags.h"

namespace accelerate::launcher {

namespace {

std::vector<FlagSpec> build_specs() {
  std::vector<FlagSpec> specs = {
      {"help", Arity::kSwitch, 'h', "show this help and exit"},
      {"config_file", Arity::kValue, 0, "config file (default: $HF_HOME/accelerate/default_config.yaml)"},
      {"quiet", Arity::kSwitch, 'q', "print no notes, only errors"},
      {"cpu", Arity::kSwitch, 0, "run on CPU (ACCELERATE_USE_CPU=true)"},
      {"multi_gpu", Arity::kSwitch, 0, "distributed GPU training (needs at least 2 processes)"},
      {"num_processes", Arity::kValue, 0, "total number of processes, over all machines"},
      {"num_machines", Arity::kValue, 0, "number of machines"},
      {"machine_rank", Arity::kValue, 0, "rank of this machine (0 .. num_machines-1)"},
      {"main_process_ip", Arity::kValue, 0, "address of machine 0 (MASTER_ADDR, default 127.0.0.1)"},
      {"main_process_port", Arity::kValue, 0, "port of machine 0 (MASTER_PORT, default 29500; 0: a free port)"},
      {"rdzv_timeout", Arity::kValue, 0,
       "seconds the machines and processes wait for each other at rendezvous (default 600)"},
      {"job_token_file", Arity::kValue, 0,
       "several machines: file holding the job token every machine proves (machine 0 writes a new one "
       "there when it does not exist; or ACCELERATE_JOB_TOKEN; docs/security.md)"},
      {"network_interface", Arity::kValue, 0,
       "interface the machines talk over, e.g. eth1 (GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME)"},
      {"mixed_precision", Arity::kValue, 0, precision_choices(false)},
      {"gpu_ids", Arity::kValue, 0, "GPUs to use on this machine: 'all' or e.g. 0,1 (CUDA_VISIBLE_DEVICES)"},
      {"gradient_accumulation_steps", Arity::kValue, 0, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS"},
      {"num_cpu_threads_per_process", Arity::kValue, 0, "OMP_NUM_THREADS of each process"},
      {"enable_cpu_affinity", Arity::kSwitch, 0, "ACCELERATE_CPU_AFFINITY=1"},
      {"no_python", Arity::kSwitch, 0, "run the program directly (always the case for non-.py programs)"},
      {"module", Arity::kSwitch, 'm', "run the program as 'python3 -m <module>'"},
      {"tee", Arity::kValue, 't', "with --log_dir: 1 stdout, 2 stderr, 3 both into per-rank logs"},
      {"log_dir", Arity::kValue, 0, "directory for per-rank logs (rank<N>.stdout.log, rank<N>.stderr.log)"},
      {"rank_prefix", Arity::kSwitch, 0,
       "prefix output lines with [rankN]: (default: when >1 process writes to a terminal)"},
      {"no_rank_prefix", Arity::kSwitch, 0, "never prefix output lines"},
      {"debug", Arity::kSwitch, 0, "ACCELERATE_DEBUG_MODE=true"},
      {"split_batches", Arity::kSwitch, 0,
       "each loader batch is the global batch, split across processes (ACCELERATE_SPLIT_BATCHES=true)"},
      {"max_restarts", Arity::kValue, 0, "when a process fails, restart every process up to N times (default 0)"},
      {"monitor_interval", Arity::kValue, 0, "seconds between checks of the processes' state (default 1)"},
      {"project_dir", Arity::kValue, 0, "where save_state()/load_state() keep checkpoints (ACCELERATE_PROJECT_DIR)"},
      {"log_with", Arity::kValue, 0,
       "trackers init_trackers() starts: csv, jsonl, tensorboard (comma-separated) or all (ACCELERATE_LOG_WITH)"},
      {"use_fsdp", Arity::kSwitch, 0, "sharded data parallel (ACCELERATE_USE_FSDP=true, docs/fsdp.md)"},
      {"fsdp_sharding_strategy", Arity::kValue, 0, "FULL_SHARD (default), SHARD_GRAD_OP or NO_SHARD (or 1, 2, 3)"},
      {"fsdp_auto_wrap_policy", Arity::kValue, 0,
       "units: NO_WRAP (default), SIZE_BASED_WRAP or TRANSFORMER_BASED_WRAP"},
      {"fsdp_min_num_params", Arity::kValue, 0, "SIZE_BASED_WRAP: parameters per unit at least (default 1e8)"},
      {"fsdp_transformer_layer_cls_to_wrap", Arity::kValue, 0,
       "TRANSFORMER_BASED_WRAP: comma-separated class names of the layers to wrap"},
      {"fsdp_offload_params", Arity::kValue, 0, "true|false: parameter shards in CPU memory (default false)"},
      {"fsdp_state_dict_type", Arity::kValue, 0, "FULL_STATE_DICT (default) or SHARDED_STATE_DICT"},
  };
  // The reference's other flags: listed in --help by what happens to them (compat_flags.h).
  for (const auto& flag : compat_flags()) specs.push_back({flag.name, flag.arity, 0, ""});
  return specs;
}

// Checks the values with the runtime's own parsers (so both say the same) and keeps their
// canonical spelling.
void parse_fsdp_args(const ParsedArgs& parsed, LaunchArgs& out) {
  auto text = [&](const char* name) -> std::optional<std::string> {
    auto it = parsed.values.find(name);
    if (it == parsed.values.end()) return std::nullopt;
    return it->second;
  };
  out.use_fsdp = parsed.has("use_fsdp");
  try {
    if (auto v = text("fsdp_sharding_strategy")) {
      out.fsdp_sharding_strategy = to_string(parse_sharding_strategy(*v, "--fsdp_sharding_strategy"));
    }
    if (auto v = text("fsdp_auto_wrap_policy")) {
      out.fsdp_auto_wrap_policy = to_string(parse_auto_wrap_policy(*v, "--fsdp_auto_wrap_policy"));
    }
    if (auto v = text("fsdp_min_num_params")) {
      out.fsdp_min_num_params = std::to_string(parse_min_num_params(*v, "--fsdp_min_num_params"));
    }
    if (auto v = text("fsdp_state_dict_type")) {
      out.fsdp_state_dict_type = to_string(parse_state_dict_type(*v, "--fsdp_state_dict_type"));
    }
  } catch (const FsdpConfigError& e) {
    std::string message = e.what();
    const std::string prefix = "accelerate: ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw UsageError(message);
  }
  if (auto v = text("fsdp_offload_params")) {
    std::string b = *v;
    for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (b != "true" && b != "false") {
      throw UsageError("--fsdp_offload_params: expected true or false, got '" + *v + "'");
    }
    out.fsdp_offload_params = b;
  }
  out.fsdp_transformer_layer_cls_to_wrap = text("fsdp_transformer_layer_cls_to_wrap");
}

}  // namespace

const std::vector<FlagSpec>& launch_flag_specs() {
  static const std::vector<FlagSpec> specs = build_specs();
  return specs;
}

std::string launch_usage() {
  std::string text =
      "usage: accelerate launch [flags] <program> [program args...]\n\n"
      "Starts <program> on every process of this machine with the environment torchrun and\n"
      "Hugging Face Accelerate set (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...).\n"
      "Flags accept '_' or '-' and '--flag value' or '--flag=value'; everything after the\n"
      "program is passed to it unchanged.\n\nflags:\n";
  for (const auto& spec : launch_flag_specs()) {
    if (spec.help.empty()) continue;
    std::string left = "  ";
    if (spec.short_name) left += std::string("-") + spec.short_name + ", ";
    left += "--" + spec.name + (spec.arity == Arity::kValue ? " VALUE" : "");
    if (left.size() < 40) left.resize(40, ' ');
    text += left + " " + spec.help + "\n";
  }
  text += "\nHugging Face Accelerate's other flags, by what they do here (docs/launcher.md):\n";
  const std::pair<CompatKind, const char*> kinds[] = {
      {CompatKind::kDeepSpeed, "mapped onto FSDP and the runtime's settings (one line says how)"},
      {CompatKind::kTuning, "accepted; they tune Python or speed only, and one warning names them"},
      {CompatKind::kRefused, "refused with an error (a value such as false or none is accepted)"}};
  for (const auto& [kind, what] : kinds) {
    std::string line = "  " + std::string(what) + ":\n   ";
    for (const auto& flag : compat_flags()) {
      if (flag.kind != kind) continue;
      const std::string item = std::string(" --") + flag.name;
      if (line.size() - line.rfind('\n') + item.size() > 90) line += "\n   ";
      line += item;
    }
    text += line + "\n";
  }
  return text;
}

namespace {

double parse_monitor_interval(const std::string& v) {
  size_t used = 0;
  double seconds = -1;
  try {
    seconds = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || !(seconds > 0) || seconds > 3600) {
    throw UsageError("--monitor_interval: expected seconds between 0 and 3600 (e.g. 0.5), got '" + v + "'");
  }
  return seconds;
}

void check_choices(const LaunchArgs& out) {
  if (out.mixed_precision) {
    // fp8 passes, to be refused with its reason by the plan (as from a config file).
    const std::optional<PrecisionType> type = precision_from_string(*out.mixed_precision);
    if (!type) {
      throw UsageError("--mixed_precision: expected one of " + precision_choices(true) + ", got '" +
                       *out.mixed_precision + "'");
    }
  }
  if (out.tee && *out.tee != "0" && *out.tee != "1" && *out.tee != "2" && *out.tee != "3") {
    throw UsageError("--tee: expected 0, 1, 2 or 3, got '" + *out.tee + "'");
  }
}

// The reference's flags without a field here (compat_flags.h): DeepSpeed's are kept for
// the mapping, tuning-only ones for the warning, refused ones fail unless their value asks
// for nothing.
void sort_compat_flags(const ParsedArgs& parsed, LaunchArgs& out) {
  for (const auto& [name, value] : parsed.values) {
    const CompatFlag* flag = find_compat_flag(name);
    if (!flag) continue;
    switch (flag->kind) {
      case CompatKind::kDeepSpeed:
        if (name == "use_deepspeed") {
          out.use_deepspeed = true;
        } else {
          out.deepspeed[name] = value;
        }
        break;
      case CompatKind::kTuning:
        out.tuning_flags.push_back(name);
        break;
      case CompatKind::kRefused:
        if (flag->arity == Arity::kSwitch || !asks_for_nothing(value)) throw UsageError(refusal(*flag));
        break;
    }
  }
}

}  // namespace

LaunchArgs parse_launch_args(const std::vector<std::string>& args, bool allow_no_program) {
  ParsedArgs parsed = parse_args(args, launch_flag_specs(), /*stop_at_positional=*/true);
  LaunchArgs out;
  auto text = [&](const char* name) -> std::optional<std::string> {
    auto it = parsed.values.find(name);
    if (it == parsed.values.end()) return std::nullopt;
    return it->second;
  };
  auto integer = [&](const char* name) -> std::optional<int> {
    auto v = text(name);
    if (!v) return std::nullopt;
    return parse_int(*v, flag_text(name));
  };
  out.config_file = text("config_file");
  out.quiet = parsed.has("quiet");
  out.cpu = parsed.has("cpu");
  out.multi_gpu = parsed.has("multi_gpu");
  out.no_python = parsed.has("no_python");
  out.module = parsed.has("module");
  out.debug = parsed.has("debug");
  out.split_batches = parsed.has("split_batches");
  out.enable_cpu_affinity = parsed.has("enable_cpu_affinity");
  out.num_processes = integer("num_processes");
  out.num_machines = integer("num_machines");
  out.machine_rank = integer("machine_rank");
  out.main_process_port = integer("main_process_port");
  out.gradient_accumulation_steps = integer("gradient_accumulation_steps");
  out.num_cpu_threads_per_process = integer("num_cpu_threads_per_process");
  out.main_process_ip = text("main_process_ip");
  out.rdzv_timeout = integer("rdzv_timeout");
  if (out.rdzv_timeout && *out.rdzv_timeout < 1) {
    throw UsageError("--rdzv_timeout: expected seconds (1 or more), got " + std::to_string(*out.rdzv_timeout));
  }
  out.network_interface = text("network_interface");
  out.job_token_file = text("job_token_file");
  if (out.job_token_file && out.job_token_file->empty()) throw UsageError("--job_token_file: expected a path, got ''");
  if (out.network_interface && out.network_interface->empty()) {
    throw UsageError("--network_interface: expected an interface name such as eth0, got ''");
  }
  out.mixed_precision = text("mixed_precision");
  out.gpu_ids = text("gpu_ids");
  out.tee = text("tee");
  out.log_dir = text("log_dir");
  out.max_restarts = integer("max_restarts");
  if (out.max_restarts && *out.max_restarts < 0) {
    throw UsageError("--max_restarts: expected 0 or more restarts, got " + std::to_string(*out.max_restarts));
  }
  if (auto v = text("monitor_interval")) out.monitor_interval = parse_monitor_interval(*v);
  out.project_dir = text("project_dir");
  if (out.project_dir && out.project_dir->empty()) throw UsageError("--project_dir: expected a directory, got ''");
  out.log_with = text("log_with");
  parse_fsdp_args(parsed, out);
  if (parsed.has("rank_prefix") && parsed.has("no_rank_prefix")) {
    throw UsageError("--rank_prefix and --no_rank_prefix contradict each other");
  }
  if (parsed.has("rank_prefix")) out.rank_prefix = true;
  if (parsed.has("no_rank_prefix")) out.rank_prefix = false;
  sort_compat_flags(parsed, out);
  if (parsed.has("help")) throw UsageError("");  // caller prints usage
  if (out.no_python && out.module) throw UsageError("--module and --no_python cannot be used together");
  check_choices(out);
  out.command = parsed.positional;
  if (out.command.empty() && !allow_no_program) {
    throw UsageError("the following arguments are required: <program>");
  }
  return out;
}

}  // namespace accelerate::launcher
