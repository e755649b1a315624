#pragma once
// The subcommands of the `accelerate` executable; each returns the process exit code.

#include <string>
#include <vector>

namespace accelerate::launcher {

int run_launch_command(const std::vector<std::string>& args);
int run_config_command(const std::vector<std::string>& args);
int run_env_command(const std::vector<std::string>& args);
int run_test_command(const std::vector<std::string>& args);

struct LaunchArgs;
// Launches with parsed arguments; `name` prefixes the launcher's messages.
int launch(const LaunchArgs& args, const std::string& name);

// Directory of the running executable (from /proc/self/exe).
std::string executable_dir();

// Where `accelerate test` looks for accelerate-selftest, in order.
std::vector<std::string> selftest_candidates();
// The first executable candidate, "" when none.
std::string find_selftest();

}  // namespace accelerate::launcher
