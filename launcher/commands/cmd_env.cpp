// `accelerate env`: what to paste into a bug report.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <accelerate/core/version.h>

#include "base/cli_args.h"
#include "commands/commands.h"
#include "config/config_file.h"
#include "system/system_info.h"

// LibTorch's version header only: the launcher does not link LibTorch.
#if __has_include(<torch/version.h>)
#include <torch/version.h>
#endif

namespace accelerate::launcher {

namespace {

std::string compiler_description() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("g++ ") + __VERSION__;
#else
  return "unknown";
#endif
}

void print_config(const std::string& path) {
  std::cout << "- `Accelerate` config file: " << path << "\n";
  if (!std::filesystem::is_regular_file(path)) {
    std::cout << "- `Accelerate` default config:\n\tNot found\n";
    return;
  }
  std::cout << "- `Accelerate` default config:\n";
  try {
    YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap()) {
      std::cout << "\t(not a mapping)\n";
      return;
    }
    for (const auto& entry : root) {
      YAML::Emitter value;
      value << YAML::Flow << entry.second;
      std::cout << "\t- " << entry.first.as<std::string>() << ": " << value.c_str() << "\n";
    }
    load_config(path);  // an invalid or unknown key is printed below, as the launch would refuse it
  } catch (const std::exception& e) {
    std::cout << "\t! " << e.what() << "\n";
  }
}

}  // namespace

int run_env_command(const std::vector<std::string>& args) {
  ParsedArgs parsed;
  try {
    parsed = parse_args(args, {{"config_file", Arity::kValue, 0, ""}, {"help", Arity::kSwitch, 'h', ""}}, false);
    if (!parsed.positional.empty()) throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
  } catch (const UsageError& e) {
    return command_failed("accelerate env", e.what(), 2);
  }
  if (parsed.has("help")) {
    std::cout << "usage: accelerate env [--config_file PATH]\nPrints versions, devices and the active config.\n";
    return 0;
  }
  std::cout << "\nCopy-and-paste the text below in your GitHub issue\n\n";
  std::cout << "- `Accelerate` (LibTorch) version: " << ACCELERATE_VERSION << "\n";
  std::cout << "- Platform: " << platform_description() << "\n";
  std::cout << "- `accelerate` location: " << executable_dir() << "/accelerate\n";
#ifdef TORCH_VERSION
  std::cout << "- LibTorch version (built against): " << TORCH_VERSION << "\n";
#else
  std::cout << "- LibTorch version (built against): unknown\n";
#endif
  std::cout << "- Compiler: " << compiler_description() << "\n";
  std::cout << "- CPU count (usable): " << usable_cpu_count() << "\n";
  std::ostringstream ram;
  ram << std::fixed << std::setprecision(2) << total_memory_gib();
  std::cout << "- System RAM: " << ram.str() << " GiB\n";
  std::string driver = nvidia_driver_summary();
  std::cout << "- NVIDIA driver: " << (driver.empty() ? "none found" : driver) << "\n";
  auto gpus = visible_gpus();
  if (gpus.empty()) {
    std::cout << "- GPUs: none visible\n";
  } else {
    std::cout << "- GPUs (" << gpus.size() << " visible):\n";
    for (const auto& g : gpus) {
      std::cout << "\t- " << g.index << ": " << g.name << (g.memory.empty() ? "" : ", " + g.memory) << "\n";
    }
  }
  // The runtime's own view (CUDA, cuDNN, NCCL as LibTorch was built), from the self-test
  // program: the launcher itself does not load LibTorch.
  if (std::string selftest = find_selftest(); !selftest.empty()) {
    std::string report = run_capture("'" + selftest + "' --show-config");
    std::cout << "- LibTorch (loaded by the runtime):" << (report.empty() ? " could not be queried\n" : "\n");
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) std::cout << "\t" << line << "\n";
    }
  } else {
    std::cout << "- LibTorch (loaded by the runtime): unknown (accelerate-selftest not built)\n";
  }
  std::cout << "- Another LibTorch: build this project against it (cmake -DCMAKE_PREFIX_PATH=<libtorch or "
               "the wheel's torch.utils.cmake_prefix_path>; 1.13 and 2.x are supported), then your "
               "programs against that install (docs/support-matrix.md)\n";
  for (const char* var : {"CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "HF_HOME", "MASTER_ADDR", "MASTER_PORT"}) {
    if (const char* v = std::getenv(var)) std::cout << "- " << var << "=" << v << "\n";
  }
  print_config(parsed.has("config_file") ? parsed.values["config_file"] : default_config_path());
  return 0;
}

}  // namespace accelerate::launcher
