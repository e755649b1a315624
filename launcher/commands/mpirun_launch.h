#pragma once
// `accelerate launch --mpirun_hostfile FILE`: the launcher hands the processes to the installed
// mpirun (its command line from plan/mpirun_plan.h) instead of starting them itself.

#include <string>

#include "plan/launch_plan.h"

namespace accelerate::launcher {

// Sets the job's variables (env_contract.h, job_variables) here and replaces this process
// with mpirun; returns only on failure (the exit code to use, after a message).
int launch_with_mpirun(const LaunchPlan& plan, const std::string& name);

}  // namespace accelerate::launcher
