#pragma once
// The job's shared-memory segments (docs/shared-memory.md). The runtime removes a segment's
// name as soon as every process of the host has mapped it; a process killed before that
// (SIGKILL, a crash during set-up) would leave /dev/shm/<prefix>-... behind. The launcher
// gives every process of the job one prefix (ACCELERATE_SHM_PREFIX) and removes whatever
// starts with it when the processes have ended, on every path out of supervision.

#include <string>

namespace accelerate::launcher {

// "<base>-<launcher pid>x<random>", base = ACCELERATE_SHM_PREFIX of the launcher's own
// environment or "accelerate": unique among the jobs of this host.
std::string make_shm_prefix();

// Removes /dev/shm/<prefix>-*; returns how many were removed.
int remove_shm_segments(const std::string& prefix);

}  // namespace accelerate::launcher
