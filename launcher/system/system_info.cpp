#include "system/system_info.h"

#include <sched.h>
#include <sys/utsname.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace accelerate::launcher {

int usable_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  if (pclose(pipe) != 0) return "";
  return out;
}

namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

std::vector<GpuInfo> all_gpus() {
  std::vector<GpuInfo> gpus;
  std::string listing = run_capture(
      "command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total "
      "--format=csv,noheader");
  std::istringstream in(listing);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    GpuInfo gpu;
    std::getline(fields, gpu.index, ',');
    std::getline(fields, gpu.name, ',');
    std::getline(fields, gpu.memory);
    gpu.index = trim(gpu.index);
    gpu.name = trim(gpu.name);
    gpu.memory = trim(gpu.memory);
    if (!gpu.index.empty()) gpus.push_back(gpu);
  }
  if (!gpus.empty()) return gpus;
  // Without nvidia-smi, the driver still lists its GPUs under /proc.
  std::error_code ec;
  int index = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    GpuInfo gpu;
    gpu.index = std::to_string(index++);
    std::ifstream info(entry.path() / "information");
    std::string l;
    while (std::getline(info, l)) {
      if (l.rfind("Model:", 0) == 0) gpu.name = trim(l.substr(6));
    }
    gpus.push_back(gpu);
  }
  return gpus;
}

}  // namespace

std::vector<GpuInfo> visible_gpus() {
  std::vector<GpuInfo> gpus = all_gpus();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible) return gpus;
  std::vector<GpuInfo> chosen;
  std::istringstream in(visible);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trim(item);
    for (const auto& gpu : gpus) {
      if (gpu.index == item) chosen.push_back(gpu);
    }
  }
  return chosen;
}

std::string nvidia_driver_summary() {
  std::string version = trim(
      run_capture("command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=driver_version --format=csv,noheader "
                  "| head -n1"));
  if (version.empty()) return "";
  std::string header = run_capture("nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | head -n1");
  return "driver " + version + (header.empty() ? "" : ", " + trim(header));
}

double total_memory_gib() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") return kib / (1024.0 * 1024.0);
    meminfo.ignore(1 << 16, '\n');
  }
  return 0;
}

std::string platform_description() {
  struct utsname u {};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

}  // namespace accelerate::launcher
