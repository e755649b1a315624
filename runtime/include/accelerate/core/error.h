#pragma once
// The runtime's one exception family. Everything libaccelerate throws on purpose is an
// accelerate::Error (a std::runtime_error): code() says what kind of failure it is, what()
// says what went wrong and what to do about it. The subclasses below only fix the code, so
// that `catch (const accelerate::CheckpointError&)` keeps working next to
// `catch (const accelerate::Error& e) { if (e.code() == accelerate::ErrorCode::Checkpoint) ... }`.
// No LibTorch here: the launcher uses it too. See docs/runtime-api.md (Errors).

#include <stdexcept>
#include <string>

namespace accelerate {

enum class ErrorCode {
  InvalidArgument,  // an argument of a call is out of range (broadcast from process 5 of 2, ...)
  Config,           // an option or setting given in code has a value the runtime does not accept
  Environment,      // a launch variable (RANK, ACCELERATE_*, FSDP_*, ...) is malformed or inconsistent
  Unsupported,      // valid, but not available on this device, LibTorch or combination of settings
  InvalidState,     // called at the wrong time (before an Accelerator exists, before prepare(), ...)
  Distributed,      // the rendezvous or a collective failed or timed out
  Checkpoint,       // a checkpoint cannot be written or read
  SharedMemory,     // a shared-memory collective within a host failed (dead peer, abort, timeout)
  Internal,         // a bug in the runtime: please report it
};

// "InvalidArgument", "Config", ...: the enumerator's name.
inline const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "InvalidArgument";
    case ErrorCode::Config:
      return "Config";
    case ErrorCode::Environment:
      return "Environment";
    case ErrorCode::Unsupported:
      return "Unsupported";
    case ErrorCode::InvalidState:
      return "InvalidState";
    case ErrorCode::Distributed:
      return "Distributed";
    case ErrorCode::Checkpoint:
      return "Checkpoint";
    case ErrorCode::SharedMemory:
      return "SharedMemory";
    case ErrorCode::Internal:
      return "Internal";
  }
  return "Internal";
}

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// The rendezvous or a collective failed or timed out. The message names the operation,
// this process's rank and the world size, e.g.
// "accelerate: all_reduce (gradient bucket 1 of 3) failed on process 1 of 2 (gloo, timeout 30s): ..."
class DistributedError : public Error {
 public:
  explicit DistributedError(const std::string& message) : Error(ErrorCode::Distributed, message) {}
};

// An inconsistent or malformed launch environment; the message names the variable.
class LaunchEnvError : public Error {
 public:
  explicit LaunchEnvError(const std::string& message) : Error(ErrorCode::Environment, message) {}
};

// Bad FSDP settings (unknown strategy, policy, ...): the message names the setting, where
// it came from and the accepted values. (Read from FSDP_* variables, it is a LaunchEnvError.)
class FsdpConfigError : public Error {
 public:
  explicit FsdpConfigError(const std::string& message) : Error(ErrorCode::Config, message) {}
};

// A checkpoint cannot be written or read: a missing or foreign directory, a missing or
// truncated file, a checkpoint that does not fit what this run prepared. The message
// names the directory and what is wrong.
class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& message) : Error(ErrorCode::Checkpoint, message) {}
};

}  // namespace accelerate
