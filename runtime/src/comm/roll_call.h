#pragma once
// The processes' roll call at rendezvous: each one signs in through the store with its host
// name and the address it gives Gloo, then waits until every process has. When the wait
// runs out, the error names the processes that never signed in and where the others are,
// instead of a bare "wait timeout" from the middle of Gloo's set-up.

#include <accelerate/core/detail/torch_compat.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

struct Attendee {
  int64_t rank = 0;
  std::string host;     // gethostname() of its machine
  std::string address;  // what it gives Gloo ("" for NCCL)
};

// Signs in as `me` and waits up to `timeout` for all `world_size` processes. Returns every
// process's entry, by rank, when `list_everyone` (one store read per process: the others
// skip it). Throws DistributedError naming the missing ranks; `where` is the rendezvous
// endpoint for the message, `what_to_do` its last sentence.
std::vector<Attendee> roll_call(c10d::Store& store, const Attendee& me, int64_t world_size,
                                std::chrono::milliseconds timeout, const std::string& where, bool list_everyone,
                                const std::string& what_to_do);

// "0-1 on host-a (10.77.0.1), 2-3 on host-b (10.77.0.2)": who is where, for messages.
std::string describe_attendees(const std::vector<Attendee>& attendees);

// This machine's host name.
std::string host_name();

}  // namespace detail
}  // namespace accelerate
