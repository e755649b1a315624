#include "plan/mpirun_plan.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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

}  // namespace accelerate::launcher
