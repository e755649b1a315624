#pragma once
// The launcher's errors, in one place: each room throws these and the commands turn them into
// a message and an exit code (commands/main.cpp, command_failed). They are the runtime's error
// family (<accelerate/error.h>, no LibTorch), so a caller may catch accelerate::Error and read
// code(). Kept in the lowest room so that a low room (config, link) never includes a higher one
// only to throw its error type.

#include <accelerate/core/error.h>

#include <string>

namespace accelerate::launcher {

// A mistake on the command line: printed with the usage hint, exit code 2 (as argparse).
struct UsageError : Error {
  explicit UsageError(const std::string& message) : Error(ErrorCode::InvalidArgument, message) {}
};

// An invalid config file; the message names the file and the key.
struct ConfigError : Error {
  explicit ConfigError(const std::string& message) : Error(ErrorCode::Config, message) {}
};

// A launch that cannot work as asked (bad combination of flags/config values, an unusable job
// token or DeepSpeed file).
struct PlanError : Error {
  explicit PlanError(const std::string& message) : Error(ErrorCode::Config, message) {}
};

// The machines could not meet (missing machine, wrong address, mismatched flags).
struct LinkError : Error {
  explicit LinkError(const std::string& message) : Error(ErrorCode::Distributed, message) {}
};

}  // namespace accelerate::launcher
