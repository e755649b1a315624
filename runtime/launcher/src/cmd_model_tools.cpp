// `accelerate merge-weights` and `accelerate estimate-memory`: they read saved models, which
// needs LibTorch, so they run accelerate-model-tools (runtime/launcher/model_tools), found
// as `accelerate test` finds its self-test.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "commands.h"

namespace accelerate::launcher {

int run_model_tool_command(const std::string& command, const std::vector<std::string>& args) {
  const auto candidates = helper_candidates("accelerate-model-tools", "model_tools");
  const std::string program = find_helper(candidates);
  if (program.empty()) {
    std::cerr << "accelerate " << command
              << ": error: accelerate-model-tools (built and installed with the runtime) was not found; "
                 "looked in:\n";
    for (const auto& candidate : candidates) std::cerr << "    " << candidate << "\n";
    return 1;
  }
  std::vector<std::string> argv_text = {program, command};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  std::cerr << "accelerate " << command << ": error: cannot run " << program << ": " << std::strerror(errno) << "\n";
  return 1;
}

}  // namespace accelerate::launcher
