// The `accelerate` command: launch, config, env, test (as Hugging Face Accelerate's CLI).
#include <unistd.h>

#include <climits>
#include <iostream>
#include <string>
#include <vector>

#include <accelerate/core/error.h>
#include <accelerate/core/version.h>
#include <accelerate/log/logging.h>

#include "commands/commands.h"
#include "commands/config_convert.h"

namespace accelerate::launcher {

std::string executable_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

int command_failed(const std::string& command, const std::string& message, int code) {
  get_logger(command).error(message);
  return code;
}

}  // namespace accelerate::launcher

namespace {

const char* kUsage =
    "usage: accelerate <command> [<args>]\n\n"
    "commands:\n"
    "  launch   run a program on several processes / machines\n"
    "  config   ask how training runs here and save the answers ('config default': no questions;\n"
    "           'config update': rewrite a config with the current defaults)\n"
    "  to-fsdp2 convert a config's FSDP1 settings to FSDP2's keys\n"
    "  tpu-config       refused: TPUs are not supported\n"
    "  env      print versions, devices and the config, for bug reports\n"
    "  test     check that distributed training works with the config\n"
    "  merge-weights    a sharded (SHARDED_STATE_DICT) model into one file\n"
    "  estimate-memory  memory a saved model needs to train, per dtype and FSDP strategy\n"
    "  verify   does a migrated program train on N processes as on 1? (step by step)\n\n"
    "Run 'accelerate <command> --help' for the flags of a command. See docs/launcher.md.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace accelerate::launcher;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "-v") {
    std::cout << "accelerate (LibTorch) " << ACCELERATE_VERSION << "\n";
    return 0;
  }
  // Every message goes through a logger at ACCELERATE_LOG_LEVEL: a bad value is said once, here,
  // rather than thrown by the first message (and the processes would refuse it the same way).
  try {
    accelerate::get_logger("accelerate");
  } catch (const accelerate::Error& e) {
    const std::string what = e.what();  // "accelerate: ..." (error.h)
    std::cerr << "accelerate: error: " << what.substr(what.rfind("accelerate: ", 0) == 0 ? 12 : 0) << "\n";
    return 2;
  }
  std::string command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "launch") return run_launch_command(rest);
  if (command == "config") return run_config_command(rest);
  if (command == "env") return run_env_command(rest);
  if (command == "test") return run_test_command(rest);
  if (command == "merge-weights" || command == "estimate-memory") return run_model_tool_command(command, rest);
  if (command == "verify") return run_verify_command(rest);
  if (command == "to-fsdp2") return run_to_fsdp2_command(rest);
  if (command == "tpu-config") return run_tpu_config_command(rest);
  return command_failed("accelerate", "unknown command '" + command + "'\n" + kUsage, 2);
}
