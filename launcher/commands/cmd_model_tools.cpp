// `accelerate merge-weights`, `accelerate estimate-memory` and `accelerate verify` run a
// helper installed with the launcher: the first two read saved models, which needs LibTorch
// (accelerate-model-tools, launcher/model_tools); verify is scripts/verify/verify.py,
// whose verdict rules (verdicts.py) are the ones the project's own harnesses use. Both are
// found as `accelerate test` finds its self-test.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <accelerate/core/detail/env_names.h>

#include "commands/commands.h"

namespace accelerate::launcher {
namespace {

// Replaces this process with `helper` (searched in `candidates`) run with `args`; returns
// only on failure, with the message printed.
int exec_helper(const std::string& command, const std::string& helper, const std::vector<std::string>& candidates,
                std::vector<std::string> args) {
  const std::string program = find_helper(candidates);
  if (program.empty()) {
    std::string where;
    for (const auto& candidate : candidates) where += "\n    " + candidate;
    return command_failed("accelerate " + command,
                          helper + " (built and installed with the launcher) was not found; looked in:" + where, 1);
  }
  args.insert(args.begin(), program);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  return command_failed("accelerate " + command, "cannot run " + program + ": " + std::strerror(errno), 1);
}

}  // namespace

int run_model_tool_command(const std::string& command, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {command};
  argv.insert(argv.end(), args.begin(), args.end());
  return exec_helper(command, "accelerate-model-tools", helper_candidates("accelerate-model-tools", "model_tools"),
                     argv);
}

int run_verify_command(const std::vector<std::string>& args) {
  // verify.py launches the program through this launcher, not whichever `accelerate` is first
  // on PATH.
  const std::string self = executable_dir() + "/accelerate";
  setenv(env_names::kVerifyLauncher, self.c_str(), 1);
  return exec_helper("verify", "verify.py", helper_candidates("verify.py", "verify"), args);
}

}  // namespace accelerate::launcher
