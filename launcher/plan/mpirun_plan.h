#pragma once
// `accelerate launch --mpirun_hostfile FILE` (or a config's mpirun_config.mpirun_hostfile), as
// the reference's launcher does it: the installed mpirun starts every process on the hosts of
// FILE, with the launch's settings passed to each (-x for Open MPI, -genvlist for MPICH and
// Intel MPI); the processes read their ranks from the MPI's own variables
// (OMPI_COMM_WORLD_*, PMI_*: docs/runtime-api.md) and meet at MASTER_ADDR, by default the
// first host of FILE.

#include <string>
#include <vector>

#include "plan/launch_plan.h"

namespace accelerate::launcher {

// The first host a hostfile names (Open MPI's "host slots=N", MPICH's "host:N"; comments and
// blank lines skipped). PlanError naming `origin` (the flag, or the config key) when the file
// cannot be read or names none.
std::string first_mpirun_host(const std::string& hostfile, const std::string& origin = "--mpirun_hostfile");

// mpirun's command line for the plan. `mpi_version` is `mpirun --version`'s output: Open
// MPI's flags (--hostfile, --npernode, -n, -x NAME) when it names Open MPI, else MPICH's and
// Intel MPI's (-f, -ppn, -n, -genvlist NAMES). `exported`: the variables each process must
// get, already set in this process's environment.
std::vector<std::string> mpirun_command(const LaunchPlan& plan, const std::string& mpi_version,
                                        const std::vector<std::string>& exported);

}  // namespace accelerate::launcher
