#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <accelerate/core/detail/env_names.h>
#include <accelerate/log/logging.h>

#include "commands/commands.h"
#include "commands/mpirun_launch.h"
#include "config/config_file.h"
#include "config/launch_args.h"
#include "link/link_socket.h"
#include "link/machine_link.h"
#include "link/store_server.h"
#include "plan/env_contract.h"
#include "plan/launch_plan.h"
#include "system/ports.h"
#include "system/shm_cleanup.h"
#include "system/supervisor.h"
#include "system/system_info.h"

namespace accelerate::launcher {

namespace {

// --network_interface must name an interface of this machine (each machine checks its own).
void check_network_interface(const LaunchPlan& plan, const std::string& name) {
  if (!plan.network_interface) return;
  if (if_nametoindex(plan.network_interface->c_str()) == 0) {
    throw PlanError("--network_interface " + *plan.network_interface +
                    ": no such interface on this machine (it has: " + local_interfaces_text() + ")");
  }
  for (const char* var : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"}) {
    const char* set = std::getenv(var);
    if (set && *set && *plan.network_interface != set) {
      get_logger(name).info("--network_interface " + *plan.network_interface + " replaces " + var + "=" + set);
    }
  }
}

// Several machines: this launcher joins the others before anything starts (machine_link.h).
std::unique_ptr<MachineLink> join_machines(const LaunchPlan& plan, const std::string& name,
                                           const std::optional<JobToken>& token) {
  if (plan.num_machines <= 1) return nullptr;
  LinkSettings s;
  s.num_machines = plan.num_machines;
  s.machine_rank = plan.machine_rank;
  s.num_processes = plan.num_processes;
  s.max_restarts = plan.max_restarts;
  s.main_ip = plan.master_addr;
  s.port = plan.master_port + 1;
  s.rdzv_timeout = std::chrono::seconds(plan.rdzv_timeout);
  s.name = name;
  s.token = token;
  return std::make_unique<MachineLink>(s);
}

// Several machines: the job token, when one is given (docs/security.md).
std::optional<JobToken> job_token(const LaunchPlan& plan, const std::string& name) {
  if (plan.num_machines <= 1) {
    if (plan.job_token_file) {
      get_logger(name).info(
          "one machine: --job_token_file is not used (it guards the launchers' link and the processes' store "
          "between machines)");
    }
    return std::nullopt;
  }
  std::vector<std::string> notes;
  auto token = load_job_token(plan.job_token_file, std::getenv(env_names::kJobToken), plan.machine_rank == 0, &notes);
  for (const auto& note : notes) get_logger(name).info(note);
  return token;
}

// The plan's warnings and notes, and which ranks start here.
void print_plan(const LaunchPlan& plan, const std::string& name) {
  const Logger log = get_logger(name);
  for (const auto& warning : plan.warnings) log.warning(warning);
  for (const auto& note : plan.notes) log.info(note);
  if (plan.omp_defaulted) {
    log.info("setting OMP_NUM_THREADS for each process to " + std::to_string(*plan.omp_num_threads) + " (" +
             std::to_string(usable_cpu_count()) + " cores / " + std::to_string(plan.local_processes) +
             " processes) to avoid overloading the machine; set OMP_NUM_THREADS or "
             "--num_cpu_threads_per_process to tune it");
  }
  if (plan.num_processes > 1 && !plan.mpirun_hostfile) {  // under mpirun: its own line (mpirun_launch.cpp)
    const int first = plan.machine_rank * plan.local_processes;
    log.info("starting ranks " + std::to_string(first) + ".." + std::to_string(first + plan.local_processes - 1) +
             " of " + std::to_string(plan.num_processes) + " (MASTER_ADDR=" + plan.master_addr +
             " MASTER_PORT=" + std::to_string(plan.master_port) + ", mixed precision " +
             to_string(plan.settings.mixed_precision.value_or(PrecisionType::No)) + (plan.use_cpu ? ", cpu" : "") +
             ")");
  }
}

// The launcher's environment for its processes, less what they must not inherit.
std::vector<std::string> children_base_environment() {
  std::vector<std::string> base = current_environment();
  // The processes do not need the job token: a program that prints its environment, or a
  // crash report that includes it, would show it. Nor an outer job's store key (a launch
  // from inside a job's process): this job's processes get their own, or none, and would
  // otherwise look for a store nobody serves.
  base.erase(std::remove_if(base.begin(), base.end(),
                            [](const std::string& kv) {
                              return kv.rfind(std::string(env_names::kJobToken) + "=", 0) == 0 ||
                                     kv.rfind(std::string(env_names::kStoreKey) + "=", 0) == 0;
                            }),
             base.end());
  return base;
}

}  // namespace

int launch(const LaunchArgs& args, const std::string& name) {
  LaunchPlan plan = make_launch_plan(args, std::getenv("OMP_NUM_THREADS"), usable_cpu_count(),
                                     [] { return static_cast<int>(visible_gpus().size()); });
  // -q: this launcher's notes (its own, its link's, its store's: one logger) are not printed.
  if (plan.quiet) get_logger(name, LogLevel::warning);
  print_plan(plan, name);
  check_network_interface(plan, name);
  if (plan.mpirun_hostfile) return launch_with_mpirun(plan, name);  // mpirun starts and supervises them
  const std::optional<JobToken> token = job_token(plan, name);
  // With a token, machine 0's launcher serves the processes' store (in place of rank 0's
  // TCPStore, which admits anyone), from before the machines meet: strangers at the port
  // meet a store that asks for a proof.
  std::unique_ptr<StoreServer> store;
  if (token && plan.machine_rank == 0)
    store = std::make_unique<StoreServer>(plan.master_port, processes_store_key(*token), name);
  const std::unique_ptr<MachineLink> link = join_machines(plan, name, token);
  const std::vector<std::string> base = children_base_environment();
  // Each attempt starts every process afresh. On one machine a restart also gets a fresh
  // rendezvous port (rank 0's new TCPStore never meets a connection of the failed attempt);
  // several machines meet again at the port they all know.
  const std::string shm_prefix = make_shm_prefix();
  const std::string store_key = token ? processes_store_key(*token) : "";
  auto make_children = [&plan, &base, &name, &shm_prefix, &store_key](int restart) {
    if (restart > 0 && plan.num_machines == 1 && plan.num_processes > 1) {
      plan.master_port = pick_free_port();
      get_logger(name).info("restart " + std::to_string(restart) + ": MASTER_PORT=" + std::to_string(plan.master_port));
    }
    std::vector<ChildSpec> children;
    for (int local = 0; local < plan.local_processes; ++local) {
      ChildSpec spec;
      spec.argv = plan.command;
      auto vars = rank_variables(plan, local, restart);
      vars[env_names::kShmPrefix] = shm_prefix;                        // removed by the supervisor when the job ends
      if (!store_key.empty()) vars[env_names::kStoreKey] = store_key;  // machine 0's launcher serves the store
      // The processes write into pipes; this tells accelerate::ProgressBar that a person
      // reads the launcher's stderr, so it redraws with '\r' (forwarded as it comes).
      if (isatty(STDERR_FILENO)) vars[env_names::kTty] = "1";
      spec.env = merge_environment(base, vars);
      spec.local_rank = local;
      spec.rank = plan.machine_rank * plan.local_processes + local;
      children.push_back(std::move(spec));
    }
    return children;
  };
  SupervisorOptions options;
  // By default a stream gets rank prefixes when several processes share it and a person
  // reads it (a terminal); output captured by scripts stays as the program wrote it.
  const bool several = plan.local_processes > 1;
  options.prefix_stdout = plan.rank_prefix ? *plan.rank_prefix : several && isatty(STDOUT_FILENO);
  options.prefix_stderr = plan.rank_prefix ? *plan.rank_prefix : several && isatty(STDERR_FILENO);
  options.tee = plan.tee;
  options.log_dir = plan.log_dir;
  options.name = name;
  options.max_restarts = plan.max_restarts;
  options.shm_prefix = shm_prefix;
  options.peers = link.get();
  options.monitor_interval = std::chrono::milliseconds(static_cast<long>(plan.monitor_interval * 1000));
  if (const char* grace = std::getenv(env_names::kLaunchGraceSeconds)) {
    options.grace = std::chrono::milliseconds(static_cast<long>(std::atof(grace) * 1000));
  }
  return supervise(std::function<std::vector<ChildSpec>(int)>(make_children), options);
}

int run_launch_command(const std::vector<std::string>& args) {
  try {
    return launch(parse_launch_args(args), "accelerate launch");
  } catch (const UsageError& e) {
    if (std::string(e.what()).empty()) {
      std::cout << launch_usage();
      return 0;
    }
    return command_failed("accelerate launch",
                          std::string(e.what()) + "\nRun 'accelerate launch --help' for the list of flags.", 2);
  } catch (const std::exception& e) {
    return command_failed("accelerate launch", e.what(), 1);
  }
}

}  // namespace accelerate::launcher
