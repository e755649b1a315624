// Fuzz target: `accelerate launch`'s command line (launcher/base/cli_args.cpp and
// launch_args.cpp). The bytes are an argv: arguments separated by NUL bytes, as the kernel
// hands them over; the first byte says whether a program is required (`accelerate test`
// parses without one). The parser must return LaunchArgs or throw UsageError.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/launch_args.h"

using accelerate::launcher::parse_launch_args;
using accelerate::launcher::UsageError;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool allow_no_program = data[0] & 1;
  std::vector<std::string> args;
  std::string arg;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(arg);
      arg.clear();
    } else {
      arg.push_back(static_cast<char>(data[i]));
    }
  }
  if (size > 1) args.push_back(arg);
  try {
    (void)parse_launch_args(args, allow_no_program);
  } catch (const UsageError&) {
  }
  return 0;
}
