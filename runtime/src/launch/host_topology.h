#pragma once
// Which processes of a job share a host, decided through the c10d store: every process
// publishes an identity that is equal exactly when two processes can share memory (the
// kernel's boot id, the /dev/shm file system, the pid namespace and the host name), and
// processes with equal identities form a host. ACCELERATE_TEST_HOST_ID replaces the
// identity (tests make several "hosts" on one machine with it).

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

struct HostTopology {
  int num_hosts = 1;
  int host_index = 0;                // hosts are numbered by their lowest rank
  std::vector<int64_t> local_ranks;  // global ranks on this host, ascending
  int local_rank = 0;                // index of this process in local_ranks
  std::vector<int64_t> leaders;      // lowest rank of every host, by host index
  bool enabled = true;               // false when any process opted out of shared memory

  int local_size() const { return static_cast<int>(local_ranks.size()); }
  bool leader() const { return local_rank == 0; }
  // Shared memory helps only when some host has several processes.
  bool worth_it(int64_t world_size) const { return enabled && num_hosts < world_size; }
};

// This process's host identity (see above).
std::string host_identity();

// Collective over all `world_size` processes: each publishes its identity (or that it opted
// out, `enabled` false) and reads everyone's.
HostTopology discover_hosts(c10d::Store& store, int64_t rank, int64_t world_size, bool enabled);

}  // namespace detail
}  // namespace accelerate
