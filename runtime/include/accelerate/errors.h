#pragma once
// Exceptions the runtime throws for distributed failures, so callers can tell them apart.
#include <stdexcept>
#include <string>

namespace accelerate {

// The rendezvous or a collective failed or timed out. The message names the operation,
// this process's rank and the world size, e.g.
// "accelerate: all_reduce (gradient bucket 1 of 3) failed on process 1 of 2 (gloo, timeout 30s): ..."
class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace accelerate
