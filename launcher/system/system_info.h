#pragma once
// What the machine offers, found without LibTorch so that the launcher starts fast:
// CPU count from the scheduler affinity mask, GPUs from nvidia-smi or /proc.

#include <string>
#include <vector>

namespace accelerate::launcher {

// CPUs this process may run on (respects taskset/cgroup cpusets), at least 1.
int usable_cpu_count();

struct GpuInfo {
  std::string index;
  std::string name;
  std::string memory;  // as nvidia-smi prints it, may be empty
};

// GPUs visible to programs started from here: nvidia-smi's list (or
// /proc/driver/nvidia/gpus), narrowed by CUDA_VISIBLE_DEVICES when that is set.
std::vector<GpuInfo> visible_gpus();

// nvidia-smi's driver and CUDA versions ("" when unavailable).
std::string nvidia_driver_summary();

// Total memory in GiB from /proc/meminfo, 0 if unknown.
double total_memory_gib();

// `uname -srm`.
std::string platform_description();

// Output of a shell command (stderr discarded), "" when it cannot run.
std::string run_capture(const std::string& command);

}  // namespace accelerate::launcher
