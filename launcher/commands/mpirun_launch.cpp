#include "commands/mpirun_launch.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <accelerate/log/logging.h>

#include "commands/commands.h"
#include "plan/env_contract.h"
#include "plan/mpirun_plan.h"

namespace accelerate::launcher {

namespace {

// `mpirun --version`'s output ("" when mpirun cannot be run: execvp then says why).
std::string mpirun_version() {
  std::string text;
  FILE* pipe = popen("mpirun --version 2>&1", "r");
  if (pipe == nullptr) return text;
  std::array<char, 256> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) text += buf.data();
  pclose(pipe);
  return text;
}

}  // namespace

int launch_with_mpirun(const LaunchPlan& plan, const std::string& name) {
  std::vector<std::string> exported;
  for (const auto& [key, value] : job_variables(plan)) {
    setenv(key.c_str(), value.c_str(), 1);
    exported.push_back(key);
  }
  const std::vector<std::string> cmd = mpirun_command(plan, mpirun_version(), exported);
  std::string line;
  for (const auto& word : cmd) line += " " + word;
  get_logger(name).info("starting " + std::to_string(plan.num_processes) + " processes with mpirun (MASTER_ADDR=" +
                        plan.master_addr + " MASTER_PORT=" + std::to_string(plan.master_port) + ", mixed precision " +
                        to_string(plan.settings.mixed_precision.value_or(PrecisionType::No)) +
                        (plan.use_cpu ? ", cpu" : "") + "):" + line);
  std::vector<char*> argv;
  for (const auto& word : cmd) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  return command_failed(name,
                        std::string("cannot run mpirun (") + std::strerror(errno) +
                            "): install an MPI (Debian: openmpi-bin), or run the program under your own mpirun",
                        127);
}

}  // namespace accelerate::launcher
