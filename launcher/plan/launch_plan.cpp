#include "plan/launch_plan.h"

#include <accelerate/core/precision_type.h>

#include <algorithm>
#include <filesystem>

#include "base/compat_flags.h"
#include "config/config_file.h"
#include "plan/deepspeed_map.h"
#include "plan/mpirun_plan.h"
#include "system/ports.h"

namespace accelerate::launcher {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> build_command(const LaunchArgs& args) {
  std::vector<std::string> cmd;
  // Programs run directly. Like the reference, a Python script (or -m module) without
  // --no_python runs under the interpreter.
  if (args.module) {
    cmd = {"python3", "-m"};
  } else if (!args.no_python && ends_with(args.command.front(), ".py")) {
    cmd = {"python3"};
  }
  cmd.insert(cmd.end(), args.command.begin(), args.command.end());
  return cmd;
}

void validate_gpu_ids(const std::string& ids) {
  if (ids == "all") return;
  bool ok = !ids.empty();
  bool digit_seen = false;
  for (char c : ids) {
    if (c == ',') {
      ok = ok && digit_seen;
      digit_seen = false;
    } else if (c >= '0' && c <= '9') {
      digit_seen = true;
    } else if (c != ' ') {
      ok = false;
    }
  }
  if (!ok || !digit_seen) {
    throw PlanError("--gpu_ids: expected 'all' or a comma-separated list of GPU ids, got '" + ids + "'");
  }
}

void plan_fsdp(const LaunchArgs& args, const std::optional<ClusterConfig>& config, LaunchPlan& plan) {
  plan.use_fsdp = args.use_fsdp || (config && config->distributed_type == "FSDP");
  if (!plan.use_fsdp) return;
  auto pick = [](const std::optional<std::string>& flag, const std::optional<std::string>& file) {
    return flag ? flag : file;
  };
  const ClusterConfig none;
  const ClusterConfig& c = config ? *config : none;
  if (auto v = pick(args.fsdp_sharding_strategy, c.fsdp_sharding_strategy)) plan.fsdp_sharding_strategy = *v;
  if (auto v = pick(args.fsdp_min_num_params, c.fsdp_min_num_params)) plan.fsdp_min_num_params = *v;
  if (args.fsdp_offload_params) {
    plan.fsdp_offload_params = *args.fsdp_offload_params;
  } else if (c.fsdp_offload_params) {
    plan.fsdp_offload_params = *c.fsdp_offload_params ? "true" : "false";
  }
  plan.fsdp_auto_wrap_policy = pick(args.fsdp_auto_wrap_policy, c.fsdp_auto_wrap_policy);
  plan.fsdp_state_dict_type = pick(args.fsdp_state_dict_type, c.fsdp_state_dict_type);
  plan.fsdp_transformer_layer_cls_to_wrap =
      pick(args.fsdp_transformer_layer_cls_to_wrap, c.fsdp_transformer_layer_cls_to_wrap);
  plan.fsdp_backward_prefetch = pick(args.fsdp_backward_prefetch, c.fsdp_backward_prefetch);
  if (args.fsdp_forward_prefetch) {
    plan.fsdp_forward_prefetch = *args.fsdp_forward_prefetch;
  } else if (c.fsdp_forward_prefetch) {
    plan.fsdp_forward_prefetch = *c.fsdp_forward_prefetch ? "true" : "false";
  }
}

void plan_flag_notes(const LaunchArgs& args, LaunchPlan& plan) {
  if (args.cpu && args.multi_gpu) throw PlanError("you can only use one of --cpu and --multi_gpu at a time");
  if (!args.tuning_flags.empty()) plan.warnings.push_back(tuning_warning(args.tuning_flags, "--"));
}

// The config file: the one named, else the default one when it exists. Unlike the
// reference, --cpu does not skip the default file: flags override it key by key.
std::optional<ClusterConfig> plan_config(const LaunchArgs& args, LaunchPlan& plan) {
  std::optional<ClusterConfig> config;
  std::string path = args.config_file ? *args.config_file : default_config_path();
  if (args.config_file || std::filesystem::is_regular_file(path)) {
    LoadedConfig loaded = load_config(path);
    config = loaded.config;
    plan.config_path = loaded.path;
    const std::string& type = config->distributed_type;
    if (type == "XLA" || type == "TPU") {
      throw PlanError("config file " + path + ": key 'distributed_type': " + type +
                      " (TPU) is not supported by the LibTorch launcher");
    }
    if (type.rfind("MULTI_", 0) == 0 && type != "MULTI_CPU" && type != "MULTI_GPU") {
      throw PlanError("config file " + path + ": key 'distributed_type': " + type +
                      " asks for devices the LibTorch runtime does not support (it has CPUs and CUDA GPUs): use "
                      "MULTI_CPU or MULTI_GPU");
    }
    if (type == "MEGATRON_LM" || type == "TP") {
      throw PlanError("config file " + path + ": key 'distributed_type': " + type +
                      " (tensor or pipeline parallelism) is not available in the LibTorch runtime; data parallel "
                      "(MULTI_CPU, MULTI_GPU), FSDP and DEEPSPEED (mapped onto FSDP) are");
    }
    if (!config->tuning_keys.empty()) {
      plan.warnings.push_back("config file " + path + ": " + tuning_warning(config->tuning_keys, ""));
    }
    for (const auto& section : config->unsupported_sections) {
      if (section == "dynamo_config") continue;  // no torch.compile in C++: nothing to say
      plan.warnings.push_back("config file " + path + ": " + section + " is not used by the LibTorch runtime");
    }
  }

  return config;
}

// Returns the notes of the values that were defaulted.
std::vector<std::string> plan_processes(const LaunchArgs& args, const std::optional<ClusterConfig>& config,
                                        const std::function<int()>& gpu_count, LaunchPlan& plan) {
  std::vector<std::string> defaulted;
  if (args.num_processes) {
    plan.num_processes = *args.num_processes;
  } else if (config && config->num_processes != -1) {
    plan.num_processes = config->num_processes;
  } else {
    plan.num_processes = args.cpu ? 1 : std::max(1, gpu_count());
    defaulted.push_back("--num_processes was set to " + std::to_string(plan.num_processes));
  }
  if (plan.num_processes < 1) throw PlanError("--num_processes must be at least 1");
  if (args.multi_gpu && plan.num_processes < 2) {
    throw PlanError("you need to use at least 2 processes to use --multi_gpu");
  }
  plan.num_machines = args.num_machines ? *args.num_machines : (config ? config->num_machines : 1);
  plan.machine_rank = args.machine_rank ? *args.machine_rank : (config ? config->machine_rank : 0);
  if (plan.num_machines < 1) throw PlanError("--num_machines must be at least 1");
  if (plan.machine_rank < 0 || plan.machine_rank >= plan.num_machines) {
    throw PlanError("--machine_rank must be between 0 and num_machines - 1 (" + std::to_string(plan.num_machines - 1) +
                    "), got " + std::to_string(plan.machine_rank));
  }
  if (plan.num_processes % plan.num_machines != 0) {
    throw PlanError("--num_processes (" + std::to_string(plan.num_processes) +
                    ") is the total over all machines and must be a multiple of --num_machines (" +
                    std::to_string(plan.num_machines) + ")");
  }
  plan.local_processes = plan.num_processes / plan.num_machines;

  return defaulted;
}

void plan_rendezvous(const LaunchArgs& args, const std::optional<ClusterConfig>& config, LaunchPlan& plan) {
  std::optional<std::string> ip = args.main_process_ip;
  if (!ip && config) ip = config->main_process_ip;
  if (!ip && plan.mpirun_hostfile) ip = first_mpirun_host(*plan.mpirun_hostfile);
  std::optional<int> port = args.main_process_port;
  if (!port && config) port = config->main_process_port;
  if (plan.num_machines > 1) {
    if (!ip) throw PlanError("with several machines, --main_process_ip (the address of machine 0) is required");
    if (port && *port == 0) {
      throw PlanError(
          "--main_process_port 0 (pick a free port) only works on one machine: the other "
          "machines could not know the port. Choose a port.");
    }
  }
  if (ip) plan.master_addr = *ip;
  if (args.rdzv_timeout) {
    plan.rdzv_timeout = *args.rdzv_timeout;
    plan.rdzv_timeout_set = true;
  }
  plan.network_interface = args.network_interface;
  plan.job_token_file = args.job_token_file;
  if (plan.num_machines > 1 && port && *port >= 65535) {
    throw PlanError("--main_process_port " + std::to_string(*port) +
                    ": with several machines the launchers also use "
                    "the next port, so choose a port below 65535");
  }
  if (port && (*port < 0 || *port > 65535)) throw PlanError("--main_process_port must be between 0 and 65535");
  plan.master_port = port ? *port : 29500;
  if (plan.master_port == 0) {
    plan.master_port = pick_free_port();
  } else if (plan.num_machines == 1 && plan.num_processes > 1 && !port_is_free(plan.master_port)) {
    // As the reference: a busy default port on one machine is replaced by a free one.
    int chosen = pick_free_port();
    plan.notes.push_back("port " + std::to_string(plan.master_port) + " is already in use: using free port " +
                         std::to_string(chosen) + " instead (pass --main_process_port to choose)");
    plan.master_port = chosen;
  }
}

// What each process computes with.
void plan_compute(const LaunchArgs& args, const std::optional<ClusterConfig>& config, LaunchPlan& plan) {
  if (args.mixed_precision) {
    plan.settings.mixed_precision = args.mixed_precision;
  } else if (config && config->mixed_precision) {
    plan.settings.mixed_precision = config->mixed_precision;
  }
  if (plan.settings.mixed_precision == PrecisionType::FP8) {
    throw PlanError("mixed precision fp8 is not supported by the LibTorch runtime (use one of " +
                    precision_choices(false) + ")");
  }
  plan.use_cpu = args.cpu || (config && (config->use_cpu || config->distributed_type == "MULTI_CPU"));
  plan.debug = args.debug || (config && config->debug);
  plan.settings.split_batches = args.split_batches;
  plan.enable_cpu_affinity = args.enable_cpu_affinity || (config && config->enable_cpu_affinity);
  plan.gradient_accumulation_steps = args.gradient_accumulation_steps;
  if (!plan.gradient_accumulation_steps && config) {
    plan.gradient_accumulation_steps = config->gradient_accumulation_steps;
  }
  if (plan.gradient_accumulation_steps && *plan.gradient_accumulation_steps < 1) {
    throw PlanError("--gradient_accumulation_steps must be at least 1");
  }
  std::optional<std::string> gpu_ids = args.gpu_ids;
  if (!gpu_ids && config) gpu_ids = config->gpu_ids;
  if (gpu_ids) {
    validate_gpu_ids(*gpu_ids);
    if (*gpu_ids != "all") {
      plan.cuda_visible_devices = *gpu_ids;
      int listed = 1 + static_cast<int>(std::count(gpu_ids->begin(), gpu_ids->end(), ','));
      if (args.multi_gpu && listed < 2 && plan.num_machines <= 1) {
        throw PlanError("less than two GPU ids were given for --multi_gpu: pass at least two to --gpu_ids, or 'all'");
      }
    }
  }
}

void plan_threads_and_output(const LaunchArgs& args, const char* environ_omp, int cpu_count, LaunchPlan& plan) {
  // Threads: several processes on one machine would each start one thread per core.
  if (args.num_cpu_threads_per_process) {
    if (*args.num_cpu_threads_per_process < 1) throw PlanError("--num_cpu_threads_per_process must be at least 1");
    plan.omp_num_threads = *args.num_cpu_threads_per_process;
  } else if (!environ_omp && plan.local_processes > 1) {
    plan.omp_num_threads = std::max(1, cpu_count / plan.local_processes);
    plan.omp_defaulted = true;
  }

  // Output.
  plan.rank_prefix = args.rank_prefix;
  plan.log_dir = args.log_dir;
  if (args.tee) plan.tee = std::stoi(*args.tee);
  if (plan.log_dir && !args.tee) plan.tee = 3;
  if (plan.tee != 0 && !plan.log_dir) throw PlanError("--tee needs --log_dir (the directory of the per-rank logs)");

  // Restarts and checkpoints.
  if (args.max_restarts) plan.max_restarts = *args.max_restarts;
  if (args.monitor_interval) plan.monitor_interval = *args.monitor_interval;
  if (args.project_dir) {
    // Absolute, so that every process (and a restarted one) finds the same directory.
    plan.project_dir = std::filesystem::absolute(*args.project_dir).lexically_normal().string();
  }
  if (args.trace) plan.trace_dir = std::filesystem::absolute(*args.trace).lexically_normal().string();  // likewise
  plan.log_with = args.log_with;
}

// DeepSpeed from the flags over the config file's deepspeed_config (deepspeed_map.h).
void plan_deepspeed(const LaunchArgs& args, const std::optional<ClusterConfig>& config, LaunchPlan& plan) {
  DeepSpeedRequest request;
  request.enabled = args.use_deepspeed || (config && config->distributed_type == "DEEPSPEED");
  if (!request.enabled) {
    // As the reference: DeepSpeed's settings are read only with DeepSpeed on.
    std::string given;
    for (const auto& [flag, value] : args.deepspeed) given += " --" + flag;
    if (!given.empty()) plan.warnings.push_back("without --use_deepspeed these flags change nothing:" + given);
    return;
  }
  if (config) {
    request.values = config->deepspeed;
    request.config_path = plan.config_path.value_or("");
  }
  for (const auto& [key, value] : args.deepspeed) request.values[key] = value;
  // The file's `mixed_precision: 'no'` is what `accelerate config` writes by default: only a
  // flag or another value in the file contradicts the JSON file's bf16/fp16.
  request.precision_given =
      args.mixed_precision || (config && config->mixed_precision.value_or(PrecisionType::No) != PrecisionType::No);
  request.accumulation_given = args.gradient_accumulation_steps.has_value();
  auto file = request.values.find("deepspeed_config_file");
  if (file != request.values.end()) {
    std::map<std::string, std::string> from_file;
    const std::vector<std::string> unused = read_deepspeed_json(file->second, from_file);
    for (const auto& [key, value] : from_file) {
      auto given = request.values.find(key);
      if (given != request.values.end() && given->second != value) {
        throw PlanError(key + "=" + given->second + " but deepspeed_config_file " + file->second + " says " + value +
                        ": set it in one place");
      }
      request.values[key] = value;
    }
    if (!unused.empty()) {
      std::string list;
      for (const auto& key : unused) list += (list.empty() ? "" : ", ") + key;
      plan.warnings.push_back("deepspeed_config_file " + file->second +
                              ": these keys tune DeepSpeed only and change nothing here: " + list);
    }
  }
  if (config && config->distributed_type == "DEEPSPEED" && !args.use_deepspeed && args.use_fsdp) {
    throw PlanError("--use_fsdp with a DEEPSPEED config file: choose one");
  }
  plan.warnings.push_back(apply_deepspeed(request, plan));
}

// --mpirun_hostfile (or mpirun_config.mpirun_hostfile): mpirun starts every process, from
// this machine, so this launcher is machine 0 and supervises nothing of its own.
void plan_mpirun(const LaunchArgs& args, const std::optional<ClusterConfig>& config, LaunchPlan& plan) {
  plan.mpirun_hostfile =
      args.mpirun_hostfile ? args.mpirun_hostfile : (config ? config->mpirun_hostfile : std::nullopt);
  if (!plan.mpirun_hostfile) return;
  const std::string why = "--mpirun_hostfile: mpirun starts every process from this one launcher";
  if (plan.machine_rank != 0) throw PlanError(why + ", so run it on machine 0 only (--machine_rank 0)");
  if (args.max_restarts && *args.max_restarts > 0) throw PlanError(why + ": restarts (--max_restarts) are mpirun's");
  if (args.job_token_file) throw PlanError(why + ": no launcher store runs to check a job token (--job_token_file)");
  const std::string origin =
      args.mpirun_hostfile ? "--mpirun_hostfile"
                           : "config file " + plan.config_path.value_or("") + ": key 'mpirun_config.mpirun_hostfile':";
  first_mpirun_host(*plan.mpirun_hostfile, origin);  // the file exists and names a host, or a clear error now
}

}  // namespace

LaunchPlan make_launch_plan(const LaunchArgs& args, const char* environ_omp, int cpu_count,
                            const std::function<int()>& gpu_count) {
  LaunchPlan plan;
  plan.quiet = args.quiet;
  plan_flag_notes(args, plan);
  const std::optional<ClusterConfig> config = plan_config(args, plan);
  const std::vector<std::string> defaulted = plan_processes(args, config, gpu_count, plan);
  plan_mpirun(args, config, plan);
  plan_rendezvous(args, config, plan);
  plan_compute(args, config, plan);
  plan_threads_and_output(args, environ_omp, cpu_count, plan);
  plan_fsdp(args, config, plan);
  plan_deepspeed(args, config, plan);
  plan.command = build_command(args);

  if (!defaulted.empty() && !config) {
    std::string message = "the following values were not passed to `accelerate launch` and had defaults used instead:";
    for (const auto& d : defaulted) message += "\n\t" + d;
    message += "\nTo avoid this note pass them, or run `accelerate config`.";
    plan.notes.push_back(message);
  }
  return plan;
}

}  // namespace accelerate::launcher
