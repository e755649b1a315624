#pragma once
// The environment each process starts with: the variables torchrun sets (so the runtime
// and any torch.distributed program find their rank and rendezvous) plus the ACCELERATE_*
// variables of Hugging Face Accelerate's launcher.

#include <map>
#include <string>
#include <vector>

#include "plan/launch_plan.h"

namespace accelerate::launcher {

// The variables set (or overridden) for one process, by name, in attempt `restart` (0 first;
// TORCHELASTIC_RESTART_COUNT when plan.max_restarts > 0).
std::map<std::string, std::string> rank_variables(const LaunchPlan& plan, int local_rank, int restart = 0);

// The variables every process of the job gets alike (rank_variables without the ranks and
// the restart count): what `--mpirun_hostfile` passes through mpirun, whose processes read
// their ranks from the MPI's own variables.
std::map<std::string, std::string> job_variables(const LaunchPlan& plan);

// `base` (KEY=VALUE entries, normally the launcher's environ) with `vars` applied. Entries
// of an elastic agent's store (TORCHELASTIC_*) are dropped: no agent store runs here.
std::vector<std::string> merge_environment(const std::vector<std::string>& base,
                                           const std::map<std::string, std::string>& vars);

std::vector<std::string> current_environment();

}  // namespace accelerate::launcher
