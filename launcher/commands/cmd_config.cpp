// `accelerate config`: the reference's questionnaire, and `accelerate config default`.
#include <unistd.h>

#include <accelerate/core/error.h>
#include <accelerate/core/fsdp_options.h>
#include <accelerate/core/precision_type.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "base/cli_args.h"
#include "commands/commands.h"
#include "commands/config_convert.h"
#include "config/config_file.h"
#include "system/prompter.h"
#include "system/system_info.h"

namespace accelerate::launcher {

namespace {

const char* kUnsupportedNote =
    "  -> not available with the LibTorch runtime: the setting is not saved and "
    "training runs plain data parallel.\n";

void ask_machines(Prompter& p, ClusterConfig& c) {
  c.num_machines =
      p.ask_int("How many different machines will you use (use more than 1 for multi-node training)? [1]: ", 1);
  if (c.num_machines < 1) throw Error(ErrorCode::Config, "the number of machines must be at least 1");
  if (c.num_machines > 1) {
    std::vector<std::string> ranks;
    for (int i = 0; i < c.num_machines; ++i) ranks.push_back(std::to_string(i));
    c.machine_rank = static_cast<int>(p.ask_option("What is the rank of this machine?", ranks));
    c.main_process_ip = p.ask_text("What is the IP address of the machine that will host the main process? ", "");
    if (c.main_process_ip->empty())
      throw Error(ErrorCode::Config, "several machines need the main process's IP address");
    c.main_process_port = p.ask_int("What is the port you will use to communicate with the main process? ", 29500);
    c.same_network = p.ask_yes_no(
        "Are all the machines on the same local network? Answer `no` if nodes are on the "
        "cloud and/or on different network hosts [YES/no]: ",
        true);
    if (!c.same_network) {
      c.rdzv_backend = p.ask_text("What rendezvous backend will you use? ('static', 'c10d', ...): ", "static");
    }
  }
  c.debug = p.ask_yes_no(
      "Should distributed operations be checked while running for errors? This can avoid "
      "timeout issues but will be slower. [yes/NO]: ",
      false);
}

void ask_cpu_features(Prompter& p, ClusterConfig& c) {
  if (c.distributed_type == "NO") {
    c.use_cpu = p.ask_yes_no(
        "Do you want to run your training on CPU only (even if a GPU / Apple Silicon / Ascend "
        "NPU device is available)? [yes/NO]:",
        false);
  } else {
    c.use_cpu = c.distributed_type == "MULTI_CPU";
  }
  if (!c.use_cpu) return;
  if (p.ask_yes_no("Do you want to use Intel PyTorch Extension (IPEX) to speed up training on CPU? [yes/NO]:", false)) {
    std::cout << kUnsupportedNote;
  }
  if (c.distributed_type == "MULTI_CPU" && p.ask_yes_no("Do you want accelerate to launch mpirun? [yes/NO]: ", false)) {
    // As the reference: a hostfile whose hosts mpirun starts the processes on (launcher.md).
    std::string hostfile =
        p.ask_text("Please enter the path to the hostfile to use with mpirun [~/hostfile]: ", "~/hostfile");
    const char* home = std::getenv("HOME");
    if (hostfile.rfind("~/", 0) == 0 && home != nullptr) hostfile = std::string(home) + hostfile.substr(1);
    c.mpirun_hostfile = hostfile;
  }
}

// The fsdp_config keys the runtime honours (docs/fsdp.md), asked in the reference's order
// and with its defaults; its questions about use_orig_params and the like are left out:
// nothing here to tune.
void ask_fsdp(Prompter& p, ClusterConfig& c) {
  c.distributed_type = "FSDP";
  static const std::vector<std::string> kStrategies = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD"};
  c.fsdp_sharding_strategy = kStrategies[p.ask_option("What should be your sharding strategy?", kStrategies)];
  c.fsdp_offload_params = p.ask_yes_no("Do you want to offload parameters and gradients to CPU? [yes/NO]: ", false);
  static const std::vector<std::string> kPolicies = {"TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"};
  c.fsdp_auto_wrap_policy = kPolicies[p.ask_option("What should be your auto wrap policy?", kPolicies)];
  if (*c.fsdp_auto_wrap_policy == "TRANSFORMER_BASED_WRAP") {
    c.fsdp_transformer_layer_cls_to_wrap =
        p.ask_text("Specify the comma-separated list of module class names to wrap (e.g. BlockImpl): ", "");
    if (c.fsdp_transformer_layer_cls_to_wrap->empty()) {
      throw Error(ErrorCode::Config,
                  "TRANSFORMER_BASED_WRAP needs at least one class name (or choose SIZE_BASED_WRAP)");
    }
  } else if (*c.fsdp_auto_wrap_policy == "SIZE_BASED_WRAP") {
    const std::string n =
        p.ask_text("What should be the minimum number of parameters of a unit? [100000000]: ", "100000000");
    c.fsdp_min_num_params = std::to_string(parse_min_num_params(n, "the minimum number of parameters"));
  }
  static const std::vector<std::string> kPrefetches = {"BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"};
  c.fsdp_backward_prefetch =
      kPrefetches[p.ask_option("What should be your FSDP's backward prefetch policy?", kPrefetches)];
  static const std::vector<std::string> kStateDicts = {"FULL_STATE_DICT", "SHARDED_STATE_DICT"};
  c.fsdp_state_dict_type = kStateDicts[p.ask_option("What should be your state dict type?", kStateDicts)];
  c.fsdp_forward_prefetch = p.ask_yes_no("Do you want to enable FSDP's forward prefetch policy? [yes/NO]: ", false);
}

// DeepSpeed, FSDP, tensor parallelism, Megatron-LM: only FSDP exists in the runtime.
void ask_paradigms(Prompter& p, ClusterConfig& c, bool gpu_like) {
  if (p.ask_yes_no("Do you wish to optimize your script with torch dynamo?[yes/NO]:", false)) {
    std::cout << "  -> torch dynamo does not exist in LibTorch: ignored.\n";
  }
  if (gpu_like || c.distributed_type == "NO") {
    if (p.ask_yes_no("Do you want to use DeepSpeed? [yes/NO]: ", false)) std::cout << kUnsupportedNote;
  }
  if (gpu_like) {
    if (p.ask_yes_no("Do you want to use FullyShardedDataParallel? [yes/NO]: ", false)) {
      ask_fsdp(p, c);
    } else if (p.ask_yes_no("Do you want to use TensorParallel? [yes/NO]: ", false)) {
      std::cout << kUnsupportedNote;
    }
  }
  // Asked as the reference does: not after FSDP was chosen (distributed_type is FSDP then).
  if (c.distributed_type == "MULTI_GPU" && p.ask_yes_no("Do you want to use Megatron-LM ? [yes/NO]: ", false)) {
    std::cout << kUnsupportedNote;
  }
}

void ask_processes_and_devices(Prompter& p, ClusterConfig& c, bool multi, bool gpu_like) {
  if (multi) {
    std::string what = c.distributed_type == "MULTI_CPU" ? "processes" : "GPU(s)";
    if (c.distributed_type.rfind("MULTI_", 0) == 0 && c.distributed_type != "MULTI_CPU") {
      what = c.distributed_type.substr(6) + "(s)";
    }
    c.num_processes = p.ask_int("How many " + what + " should be used for distributed training? [1]:", 1);
    if (c.num_processes < 1) throw Error(ErrorCode::Config, "the number of processes must be at least 1");
  } else {
    c.num_processes = 1;
  }
  if (c.distributed_type == "MULTI_GPU" && c.num_machines == 1 && c.num_processes == 1) {
    throw Error(ErrorCode::Config,
                "Specified distributed type MULTI_GPU but only using 1 GPU on a single machine. Please "
                "select `No distributed training` for the type of machine you are using.");
  }
  if ((gpu_like || c.distributed_type == "NO") && !c.use_cpu) {
    c.gpu_ids = p.ask_text(
        "What GPU(s) (by id) should be used for training on this machine as a comma-seperated "
        "list? [all]:",
        "all");
  }
  if ((c.distributed_type == "NO" || c.distributed_type == "MULTI_GPU") && !c.use_cpu) {
    c.enable_cpu_affinity = p.ask_yes_no(
        "Would you like to enable numa efficiency? (Currently only supported on "
        "NVIDIA hardware). [yes/NO]: ",
        false);
  }
}

ClusterConfig ask_cluster_questions(Prompter& p) {
  ClusterConfig c;
  size_t env =
      p.ask_option("In which compute environment are you running?", {"This machine", "AWS (Amazon SageMaker)"});
  if (env == 1) throw Error(ErrorCode::Unsupported, "Amazon SageMaker is not supported by the LibTorch launcher");

  static const std::vector<std::string> kMachineTypes = {
      "No distributed training", "multi-CPU", "multi-XPU", "multi-GPU", "multi-NPU", "multi-MLU", "multi-MUSA", "TPU"};
  static const std::vector<std::string> kTypes = {"NO",        "MULTI_CPU", "MULTI_XPU",  "MULTI_GPU",
                                                  "MULTI_NPU", "MULTI_MLU", "MULTI_MUSA", "XLA"};
  size_t machine = p.ask_option("Which type of machine are you using?", kMachineTypes);
  // The reference's list and numbering are kept, so that answers written for it read the same.
  if (kTypes[machine] == "XLA") throw Error(ErrorCode::Unsupported, "TPUs are not supported by the LibTorch launcher");
  if (kTypes[machine] != "NO" && kTypes[machine] != "MULTI_CPU" && kTypes[machine] != "MULTI_GPU") {
    throw Error(ErrorCode::Unsupported, kMachineTypes[machine] +
                                            " machines are not supported by the LibTorch runtime (it has CPUs and CUDA "
                                            "GPUs): choose multi-CPU or multi-GPU");
  }
  c.distributed_type = kTypes[machine];
  const bool multi = c.distributed_type != "NO";
  const bool gpu_like = multi && c.distributed_type != "MULTI_CPU";

  c.same_network = true;
  if (multi) ask_machines(p, c);
  ask_cpu_features(p, c);
  ask_paradigms(p, c, gpu_like);
  ask_processes_and_devices(p, c, multi, gpu_like);
  // fp8 is left out: the LibTorch runtime has no fp8 training.
  static const std::vector<PrecisionType> kPrecisions = {PrecisionType::No, PrecisionType::FP16, PrecisionType::BF16};
  static const std::vector<std::string> kNames = {to_string(kPrecisions[0]), to_string(kPrecisions[1]),
                                                  to_string(kPrecisions[2])};
  c.mixed_precision = kPrecisions[p.ask_option("Do you wish to use mixed precision?", kNames)];
  return c;
}

int write_default_config(const std::vector<std::string>& args) {
  ParsedArgs parsed = parse_args(args,
                                 {{"config_file", Arity::kValue, 0, ""},
                                  {"mixed_precision", Arity::kValue, 0, ""},
                                  {"help", Arity::kSwitch, 'h', ""}},
                                 false);
  if (parsed.has("help")) {
    std::cout << "usage: accelerate config default [--config_file PATH] [--mixed_precision {"
              << precision_choices(false, ",")
              << "}]\n"
                 "Writes a config for this machine without asking: every visible GPU, or one CPU process.\n";
    return 0;
  }
  if (!parsed.positional.empty()) throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  std::string path = parsed.has("config_file") ? parsed.values["config_file"] : default_config_path();
  const std::string mp = parsed.has("mixed_precision") ? parsed.values["mixed_precision"] : "no";
  const std::optional<PrecisionType> type = precision_from_string(mp);
  if (!type || *type == PrecisionType::FP8) {  // fp8 is not offered: nothing would train with it
    throw UsageError("--mixed_precision: expected one of " + precision_choices(false) + ", got '" + mp + "'");
  }
  if (std::filesystem::exists(path)) {
    std::cout << "Configuration already exists at " << path << ", will not override. Run `accelerate config` "
              << "manually or pass a different --config_file.\n";
    return 0;
  }
  ClusterConfig c;
  c.mixed_precision = type;
  int gpus = static_cast<int>(visible_gpus().size());
  if (gpus > 0) {
    c.num_processes = gpus;
    c.use_cpu = false;
    c.distributed_type = gpus > 1 ? "MULTI_GPU" : "NO";
  } else {
    c.num_processes = 1;
    c.use_cpu = true;
    c.distributed_type = "NO";
  }
  save_config(c, path);
  std::cout << "accelerate configuration saved at " << path << "\n";
  return 0;
}

}  // namespace

int run_config_command(const std::vector<std::string>& args) {
  try {
    if (!args.empty() && args.front() == "default") {
      return write_default_config(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    if (!args.empty() && args.front() == "update") {
      return run_config_update_command(std::vector<std::string>(args.begin() + 1, args.end()));
    }
    ParsedArgs parsed =
        parse_args(args, {{"config_file", Arity::kValue, 0, ""}, {"help", Arity::kSwitch, 'h', ""}}, false);
    if (parsed.has("help")) {
      std::cout << "usage: accelerate config [--config_file PATH]\n"
                   "       accelerate config default [--config_file PATH] [--mixed_precision {"
                << precision_choices(false, ",")
                << "}]\n"
                   "       accelerate config update [--config_file PATH]\n"
                   "Asks how training runs on this machine and saves the answers (default path: "
                << default_config_path() << ").\n";
      return 0;
    }
    if (!parsed.positional.empty()) throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
    std::string path = parsed.has("config_file") ? parsed.values["config_file"] : default_config_path();
    Prompter prompter(std::cin, std::cout, !isatty(STDIN_FILENO));
    ClusterConfig config = ask_cluster_questions(prompter);
    save_config(config, path);
    std::cout << "accelerate configuration saved at " << path << "\n";
    return 0;
  } catch (const UsageError& e) {
    return command_failed("accelerate config", e.what(), 2);
  } catch (const std::exception& e) {
    return command_failed("accelerate config", e.what(), 1);
  }
}

}  // namespace accelerate::launcher
