#include "config/launch_args.h"

#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/fsdp_options.h>
#include <accelerate/core/precision_type.h>
#include <accelerate/tracking/tracking.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <utility>
#include <variant>

#include "base/compat_flags.h"

namespace accelerate::launcher {

namespace {

// Each flag the launcher honours is declared once, in kFlags below: its name, short name,
// help line and the LaunchArgs field it sets. The kind of binding gives the flag's arity (a
// bool field: a switch; an optional value: a flag with a value), and a value flag's reader
// checks its text and returns it in the field's type, so that the parser, --help and the
// field cannot disagree.

// Reads a value flag's text into its field's type; `flag` ("--name") is for the message.
// Throws UsageError.
template <typename T>
using Read = T (*)(const std::string& flag, const std::string& text);

template <typename T>
struct Value {
  std::optional<T> LaunchArgs::*field;
  Read<T> read;
};

struct Switch {
  bool LaunchArgs::*field;
};

// One of the switches that set a yes/no field to opposite values (--rank_prefix and
// --no_rank_prefix); given together they contradict each other.
struct Choice {
  std::optional<bool> LaunchArgs::*field;
  bool value;
};

using Binding = std::variant<Switch, Choice, Value<int>, Value<double>, Value<std::string>, Value<PrecisionType>>;

// When a flag is read. Most values are read, and checked, before the reference's other
// flags and --help; --mixed_precision and --tee are read after them and after the
// --module/--no_python check, as before this table, so that `--help` with a wrong choice
// still prints the usage.
enum class Pass { kFirst, kAfterHelp };

struct LaunchFlag {
  const char* name;  // canonical: underscores
  char short_name;   // 0: none
  Binding binding;
  std::string help;
  Pass pass = Pass::kFirst;
};

int read_int(const std::string& flag, const std::string& text) { return parse_int(text, flag); }

std::string read_text(const std::string& /*flag*/, const std::string& text) { return text; }

Switch bind(bool LaunchArgs::*field) { return {field}; }
Choice bind(std::optional<bool> LaunchArgs::*field, bool value) { return {field, value}; }
Value<int> bind(std::optional<int> LaunchArgs::*field) { return {field, read_int}; }
Value<std::string> bind(std::optional<std::string> LaunchArgs::*field) { return {field, read_text}; }
template <typename T>
Value<T> bind(std::optional<T> LaunchArgs::*field, Read<T> read) {
  return {field, read};
}

int read_rendezvous_seconds(const std::string& flag, const std::string& text) {
  const int seconds = parse_int(text, flag);
  if (seconds < 1) throw UsageError(flag + ": expected seconds (1 or more), got " + std::to_string(seconds));
  return seconds;
}

int read_restarts(const std::string& flag, const std::string& text) {
  const int restarts = parse_int(text, flag);
  if (restarts < 0) throw UsageError(flag + ": expected 0 or more restarts, got " + std::to_string(restarts));
  return restarts;
}

double read_interval(const std::string& flag, const std::string& text) {
  size_t used = 0;
  double seconds = -1;
  try {
    seconds = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(seconds > 0) || seconds > 3600) {
    throw UsageError(flag + ": expected seconds between 0 and 3600 (e.g. 0.5), got '" + text + "'");
  }
  return seconds;
}

// An empty path or name would only fail later, far from the flag that gave it.
std::string non_empty(const std::string& flag, const std::string& text, const char* expected) {
  if (text.empty()) throw UsageError(flag + ": expected " + expected + ", got ''");
  return text;
}
std::string read_path(const std::string& flag, const std::string& text) { return non_empty(flag, text, "a path"); }
std::string read_directory(const std::string& flag, const std::string& text) {
  return non_empty(flag, text, "a directory");
}
std::string read_interface(const std::string& flag, const std::string& text) {
  return non_empty(flag, text, "an interface name such as eth0");
}

// Checked at launch, so that a tracker the runtime does not have fails now, not when the
// program calls init_trackers (the runtime's parse_log_with is the same check).
std::string read_log_with(const std::string& flag, const std::string& text) {
  static const std::set<std::string> kPythonOnly = {"aim",    "wandb",   "trackio", "comet_ml",
                                                    "mlflow", "clearml", "dvclive", "swanlab"};
  const std::vector<std::string> builtin = builtin_trackers();
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty() || name == "all" || std::find(builtin.begin(), builtin.end(), name) != builtin.end()) continue;
    throw UsageError(flag + ": '" + name + "' " +
                     (kPythonOnly.count(name) ? "is one of Hugging Face Accelerate's Python trackers, which the "
                                                "LibTorch runtime does not have"
                                              : "is not a tracker") +
                     ": csv, jsonl, tensorboard (comma-separated) or all; a program adds others in code "
                     "(Accelerator::add_tracker, docs/tracking.md)");
  }
  return text;
}

// fp8 passes, to be refused with its reason by the plan (as from a config file).
PrecisionType read_precision(const std::string& flag, const std::string& text) {
  const std::optional<PrecisionType> type = precision_from_string(text);
  if (!type) throw UsageError(flag + ": expected one of " + precision_choices(true) + ", got '" + text + "'");
  return *type;
}

std::string read_tee(const std::string& flag, const std::string& text) {
  if (text != "0" && text != "1" && text != "2" && text != "3") {
    throw UsageError(flag + ": expected 0, 1, 2 or 3, got '" + text + "'");
  }
  return text;
}

// The FSDP values are checked by the runtime's own parsers (so both say the same) and kept
// in their canonical spelling; their error is a command-line mistake here.
template <typename Parse>
std::string fsdp_value(const Parse& parse) {
  try {
    return parse();
  } catch (const FsdpConfigError& e) {
    std::string message = e.what();
    const std::string prefix = "accelerate: ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw UsageError(message);
  }
}
std::string read_sharding_strategy(const std::string& flag, const std::string& text) {
  return fsdp_value([&] { return std::string(to_string(parse_sharding_strategy(text, flag))); });
}
std::string read_reshard_after_forward(const std::string& flag, const std::string& text) {
  return fsdp_value([&] { return std::string(to_string(parse_reshard_after_forward(text, flag))); });
}
std::string read_auto_wrap_policy(const std::string& flag, const std::string& text) {
  return fsdp_value([&] { return std::string(to_string(parse_auto_wrap_policy(text, flag))); });
}
std::string read_min_num_params(const std::string& flag, const std::string& text) {
  return fsdp_value([&] { return std::to_string(parse_min_num_params(text, flag)); });
}
std::string read_state_dict_type(const std::string& flag, const std::string& text) {
  return fsdp_value([&] { return std::string(to_string(parse_state_dict_type(text, flag))); });
}

std::string read_backward_prefetch(const std::string& flag, const std::string& text) {
  return fsdp_value([&] { return std::string(to_string(parse_backward_prefetch(text, flag))); });
}

std::string read_true_false(const std::string& flag, const std::string& text) {
  std::string b = text;
  for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (b != "true" && b != "false") throw UsageError(flag + ": expected true or false, got '" + text + "'");
  return b;
}

using A = LaunchArgs;  // short, so that most entries fit on one line

// A help line naming the variable the flag sets: the name from the contract (env_names.h).
std::string naming(const char* before, const char* name, const char* after) {
  return std::string(before) + name + after;
}

// In --help's order. Help lines name the variable a flag sets where it sets one.
const std::vector<LaunchFlag> kFlags = {
    {"help", 'h', bind(&A::help), "show this help and exit"},
    {"config_file", 0, bind(&A::config_file), "config file (default: $HF_HOME/accelerate/default_config.yaml)"},
    {"quiet", 'q', bind(&A::quiet), "print no notes, only errors"},
    {"cpu", 0, bind(&A::cpu), naming("run on CPU (", env_names::kUseCpu, "=true)")},
    {"multi_gpu", 0, bind(&A::multi_gpu), "distributed GPU training (needs at least 2 processes)"},
    {"num_processes", 0, bind(&A::num_processes), "total number of processes, over all machines"},
    {"num_machines", 0, bind(&A::num_machines), "number of machines"},
    {"machine_rank", 0, bind(&A::machine_rank), "rank of this machine (0 .. num_machines-1)"},
    {"main_process_ip", 0, bind(&A::main_process_ip), "address of machine 0 (MASTER_ADDR, default 127.0.0.1)"},
    {"main_process_port", 0, bind(&A::main_process_port),
     "port of machine 0 (MASTER_PORT, default 29500; 0: a free port)"},
    {"rdzv_timeout", 0, bind(&A::rdzv_timeout, read_rendezvous_seconds),
     "seconds the machines and processes wait for each other at rendezvous (default 600)"},
    {"job_token_file", 0, bind(&A::job_token_file, read_path),
     naming("several machines: file holding the job token every machine proves (machine 0 writes a new one "
            "there when it does not exist; or ",
            env_names::kJobToken, "; docs/security.md)")},
    {"network_interface", 0, bind(&A::network_interface, read_interface),
     "interface the machines talk over, e.g. eth1 (GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME)"},
    {"mixed_precision", 0, bind(&A::mixed_precision, read_precision), precision_choices(false), Pass::kAfterHelp},
    {"gpu_ids", 0, bind(&A::gpu_ids), "GPUs to use on this machine: 'all' or e.g. 0,1 (CUDA_VISIBLE_DEVICES)"},
    {"gradient_accumulation_steps", 0, bind(&A::gradient_accumulation_steps), env_names::kGradientAccumulationSteps},
    {"num_cpu_threads_per_process", 0, bind(&A::num_cpu_threads_per_process), "OMP_NUM_THREADS of each process"},
    {"enable_cpu_affinity", 0, bind(&A::enable_cpu_affinity), naming("", env_names::kCpuAffinity, "=1")},
    {"no_python", 0, bind(&A::no_python), "run the program directly (always the case for non-.py programs)"},
    {"module", 'm', bind(&A::module), "run the program as 'python3 -m <module>'"},
    {"tee", 't', bind(&A::tee, read_tee), "with --log_dir: 1 stdout, 2 stderr, 3 both into per-rank logs",
     Pass::kAfterHelp},
    {"log_dir", 0, bind(&A::log_dir), "directory for per-rank logs (rank<N>.stdout.log, rank<N>.stderr.log)"},
    {"rank_prefix", 0, bind(&A::rank_prefix, true),
     "prefix output lines with [rankN]: (default: when >1 process writes to a terminal)"},
    {"no_rank_prefix", 0, bind(&A::rank_prefix, false), "never prefix output lines"},
    {"debug", 0, bind(&A::debug), naming("", env_names::kDebugMode, "=true")},
    {"split_batches", 0, bind(&A::split_batches),
     naming("each loader batch is the global batch, split across processes (", env_names::kSplitBatches, "=true)")},
    {"max_restarts", 0, bind(&A::max_restarts, read_restarts),
     "when a process fails, restart every process up to N times (default 0)"},
    {"monitor_interval", 0, bind(&A::monitor_interval, read_interval),
     "seconds between checks of the processes' state (default 1)"},
    {"project_dir", 0, bind(&A::project_dir, read_directory),
     naming("where save_state()/load_state() keep checkpoints (", env_names::kProjectDir, ")")},
    {"trace", 0, bind(&A::trace, read_directory),
     naming("each process writes its step trace to DIR/trace-rank<N>.jsonl (", env_names::kTrace,
            ", docs/runtime-api.md)")},
    {"mpirun_hostfile", 0, bind(&A::mpirun_hostfile, read_path),
     "start the processes with the installed mpirun (Open MPI, MPICH, Intel MPI) on the hosts of FILE"},
    {"log_with", 0, bind(&A::log_with, read_log_with),
     naming("trackers init_trackers() starts: csv, jsonl, tensorboard (comma-separated) or all (", env_names::kLogWith,
            ")")},
    {"use_fsdp", 0, bind(&A::use_fsdp), naming("sharded data parallel (", env_names::kUseFsdp, "=true, docs/fsdp.md)")},
    {"fsdp_sharding_strategy", 0, bind(&A::fsdp_sharding_strategy, read_sharding_strategy),
     "FULL_SHARD (default), SHARD_GRAD_OP or NO_SHARD (or 1, 2, 3)"},
    {"fsdp_reshard_after_forward", 0, bind(&A::fsdp_reshard_after_forward, read_reshard_after_forward),
     "FSDP2's spelling of the strategy: true (FULL_SHARD) or false (SHARD_GRAD_OP), or a strategy as above"},
    {"fsdp_auto_wrap_policy", 0, bind(&A::fsdp_auto_wrap_policy, read_auto_wrap_policy),
     "units: NO_WRAP (default), SIZE_BASED_WRAP or TRANSFORMER_BASED_WRAP"},
    {"fsdp_min_num_params", 0, bind(&A::fsdp_min_num_params, read_min_num_params),
     "SIZE_BASED_WRAP: parameters per unit at least (default 1e8)"},
    {"fsdp_transformer_layer_cls_to_wrap", 0, bind(&A::fsdp_transformer_layer_cls_to_wrap),
     "TRANSFORMER_BASED_WRAP: comma-separated class names of the layers to wrap"},
    {"fsdp_offload_params", 0, bind(&A::fsdp_offload_params, read_true_false),
     "true|false: parameter shards in CPU memory (default false)"},
    {"fsdp_state_dict_type", 0, bind(&A::fsdp_state_dict_type, read_state_dict_type),
     "FULL_STATE_DICT (default) or SHARDED_STATE_DICT"},
    {"fsdp_backward_prefetch", 0, bind(&A::fsdp_backward_prefetch, read_backward_prefetch),
     naming("BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH (", env_names::kFsdpBackwardPrefetch,
            "; default NO_PREFETCH)")},
    {"fsdp_backward_prefetch_policy", 0, bind(&A::fsdp_backward_prefetch_policy, read_backward_prefetch),
     "older name of --fsdp_backward_prefetch"},
    {"fsdp_forward_prefetch", 0, bind(&A::fsdp_forward_prefetch, read_true_false),
     naming("true|false: gather the next unit during the forward pass (", env_names::kFsdpForwardPrefetch,
            "; default false)")},
};

std::vector<FlagSpec> build_specs() {
  std::vector<FlagSpec> specs;
  for (const auto& flag : kFlags) {
    const bool is_switch = std::holds_alternative<Switch>(flag.binding) || std::holds_alternative<Choice>(flag.binding);
    specs.push_back({flag.name, is_switch ? Arity::kSwitch : Arity::kValue, flag.short_name, flag.help});
  }
  // The reference's other flags: listed in --help by what happens to them (compat_flags.h).
  for (const auto& flag : compat_flags()) specs.push_back({flag.name, flag.arity, 0, ""});
  return specs;
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

// The yes/no fields set by a switch, each with the flag that set it.
using Choices = std::vector<std::pair<std::optional<bool> LaunchArgs::*, std::string>>;

// Sets the field of one given flag from its text.
struct SetField {
  const std::string& name;
  const std::string& text;
  LaunchArgs& out;
  Choices& chosen;

  void operator()(const Switch& bound) const { out.*bound.field = true; }
  void operator()(const Choice& bound) const {
    chosen.emplace_back(bound.field, name);
    out.*bound.field = bound.value;
  }
  template <typename T>
  void operator()(const Value<T>& bound) const {
    out.*bound.field = bound.read(flag_text(name), text);
  }
};

// Two switches that set one yes/no field (--rank_prefix, --no_rank_prefix) contradict each
// other: checked after every value, as before this table.
void check_choices(const Choices& chosen) {
  for (size_t i = 0; i < chosen.size(); ++i) {
    for (size_t j = i + 1; j < chosen.size(); ++j) {
      if (chosen[i].first == chosen[j].first) {
        throw UsageError(flag_text(chosen[i].second) + " and " + flag_text(chosen[j].second) +
                         " contradict each other");
      }
    }
  }
}

// Fills the fields of the given flags read in `pass`, checking their values in --help's
// order.
void bind_flags(const ParsedArgs& parsed, Pass pass, LaunchArgs& out) {
  Choices chosen;
  for (const auto& flag : kFlags) {
    const auto given = parsed.values.find(flag.name);
    if (flag.pass != pass || given == parsed.values.end()) continue;
    std::visit(SetField{given->first, given->second, out, chosen}, flag.binding);
  }
  check_choices(chosen);
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
        if (flag->arity == Arity::kSwitch || !asks_for_nothing(*flag, value)) throw UsageError(refusal(*flag));
        break;
    }
  }
}

// The reference renamed --fsdp_backward_prefetch_policy to --fsdp_backward_prefetch and
// still accepts both; given together they must agree, else one would be dropped unseen.
void fold_backward_prefetch_names(LaunchArgs& out) {
  const auto& older = out.fsdp_backward_prefetch_policy;
  if (!older) return;
  if (out.fsdp_backward_prefetch && *out.fsdp_backward_prefetch != *older) {
    throw UsageError("--fsdp_backward_prefetch " + *out.fsdp_backward_prefetch +
                     " and --fsdp_backward_prefetch_policy " + *older +
                     " (its older name) contradict each other: give one");
  }
  out.fsdp_backward_prefetch = older;
}

// Hugging Face Accelerate's FSDP2 names the strategy by --fsdp_reshard_after_forward and
// FSDP1 by --fsdp_sharding_strategy; both set one strategy here, so given together they
// must agree.
void fold_reshard_after_forward(LaunchArgs& out) {
  const auto& reshard = out.fsdp_reshard_after_forward;
  if (!reshard) return;
  if (out.fsdp_sharding_strategy && *out.fsdp_sharding_strategy != *reshard) {
    throw UsageError("--fsdp_sharding_strategy " + *out.fsdp_sharding_strategy + " and --fsdp_reshard_after_forward (" +
                     *reshard + ") contradict each other: give one");
  }
  out.fsdp_sharding_strategy = reshard;
}

}  // namespace

LaunchArgs parse_launch_args(const std::vector<std::string>& args, bool allow_no_program) {
  const ParsedArgs parsed = parse_args(args, launch_flag_specs(), /*stop_at_positional=*/true);
  LaunchArgs out;
  bind_flags(parsed, Pass::kFirst, out);
  fold_backward_prefetch_names(out);
  fold_reshard_after_forward(out);
  sort_compat_flags(parsed, out);
  if (out.help) throw UsageError("");  // caller prints usage
  if (out.no_python && out.module) throw UsageError("--module and --no_python cannot be used together");
  bind_flags(parsed, Pass::kAfterHelp, out);
  out.command = parsed.positional;
  if (out.command.empty() && !allow_no_program) {
    throw UsageError("the following arguments are required: <program>");
  }
  return out;
}

}  // namespace accelerate::launcher
