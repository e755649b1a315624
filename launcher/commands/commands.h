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

// A command's failure, through its logger ("accelerate NAME: error: MESSAGE", accelerate/logging.h);
// returns `code`, the exit code.
int command_failed(const std::string& command, const std::string& message, int code);

// Directory of the running executable (from /proc/self/exe).
std::string executable_dir();

// Where the launcher looks for a helper program that links the runtime (accelerate-selftest,
// accelerate-model-tools), in order: beside itself, in its build folder `build_subdir`,
// then in ../libexec/accelerate/ (where it is installed).
std::vector<std::string> helper_candidates(const std::string& program, const std::string& build_subdir);
// The first executable candidate, "" when none.
std::string find_helper(const std::vector<std::string>& candidates);
// Where `accelerate test` looks for accelerate-selftest, in order.
std::vector<std::string> selftest_candidates();
std::string find_selftest();

// `accelerate merge-weights` and `accelerate estimate-memory`: run accelerate-model-tools.
int run_model_tool_command(const std::string& command, const std::vector<std::string>& args);
// `accelerate verify`: runs verify.py (scripts/verify, docs/verify.md).
int run_verify_command(const std::vector<std::string>& args);

}  // namespace accelerate::launcher
