#include "mpirun_launch.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <accelerate/logging.h>

#include "commands.h"
#include "env_contract.h"

namespace accelerate::launcher {

std::string first_mpirun_host(const std::string& hostfile, const std::string& origin) {
  std::ifstream in(hostfile);
  if (!in) throw PlanError(origin + " " + hostfile + ": cannot read it (" + std::strerror(errno) + ")");
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string host;
    if (!(words >> host)) continue;
    return host.substr(0, host.find(':'));  // MPICH's "host:slots"
  }
  throw PlanError(origin + " " + hostfile + ": names no host");
}

std::vector<std::string> mpirun_command(const LaunchPlan& plan, const std::string& mpi_version,
                                        const std::vector<std::string>& exported) {
  const bool open_mpi = mpi_version.find("Open MPI") != std::string::npos;
  std::vector<std::string> cmd = {"mpirun",
                                  open_mpi ? "--hostfile" : "-f",
                                  *plan.mpirun_hostfile,
                                  open_mpi ? "--npernode" : "-ppn",
                                  std::to_string(plan.local_processes),
                                  "-n",
                                  std::to_string(plan.num_processes)};
  if (open_mpi) {
    for (const auto& name : exported) cmd.insert(cmd.end(), {"-x", name});
  } else if (!exported.empty()) {
    std::string names;
    for (const auto& name : exported) names += (names.empty() ? "" : ",") + name;
    cmd.insert(cmd.end(), {"-genvlist", names});
  }
  cmd.insert(cmd.end(), plan.command.begin(), plan.command.end());
  return cmd;
}

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
                        plan.mixed_precision + (plan.use_cpu ? ", cpu" : "") + "):" + line);
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
