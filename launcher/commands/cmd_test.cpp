// `accelerate test`: runs the self-test program on the configured setup.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "commands/commands.h"
#include "config/launch_args.h"

namespace accelerate::launcher {

namespace fs = std::filesystem;

std::vector<std::string> helper_candidates(const std::string& program, const std::string& build_subdir) {
  std::string dir = executable_dir();
  return {dir + "/" + program, dir + "/" + build_subdir + "/" + program, dir + "/../libexec/accelerate/" + program,
          dir + "/../libexec/" + program};
}

std::string find_helper(const std::vector<std::string>& candidates) {
  for (const auto& candidate : candidates) {
    if (access(candidate.c_str(), X_OK) == 0) return fs::weakly_canonical(candidate).string();
  }
  return "";
}

std::vector<std::string> selftest_candidates() { return helper_candidates("accelerate-selftest", "selftest"); }

std::string find_selftest() { return find_helper(selftest_candidates()); }

int run_test_command(const std::vector<std::string>& args) {
  LaunchArgs launch_args;
  try {
    launch_args = parse_launch_args(args, /*allow_no_program=*/true);
    if (!launch_args.command.empty()) {
      throw UsageError("unexpected argument '" + launch_args.command.front() +
                       "' (accelerate test runs its own program)");
    }
  } catch (const UsageError& e) {
    if (std::string(e.what()).empty()) {
      std::cout << "usage: accelerate test [--config_file PATH] [launch flags...]\n"
                   "Runs the self-test program with the configured setup (the same flags as\n"
                   "`accelerate launch`) and says whether distributed training works here.\n";
      return 0;
    }
    return command_failed("accelerate test", e.what(), 2);
  }
  std::string program = find_selftest();
  if (program.empty()) {
    std::string where;
    for (const auto& candidate : selftest_candidates()) where += "\n    " + candidate;
    return command_failed("accelerate test",
                          "the self-test program (accelerate-selftest) is not built or not installed; looked in:" +
                              where + "\nTest FAILED: cannot check this setup.",
                          1);
  }
  launch_args.command = {program};
  launch_args.no_python = true;
  std::cout << "Running: accelerate launch ... " << program << "\n" << std::flush;
  int code;
  try {
    code = launch(launch_args, "accelerate test");
  } catch (const std::exception& e) {
    return command_failed("accelerate test", e.what(), 1);
  }
  if (code == 0) {
    std::cout << "Test is a success! You are ready for your distributed training!\n";
  } else {
    std::cout << "Test FAILED (exit code " << code << "): see the output above.\n";
  }
  return code;
}

}  // namespace accelerate::launcher
