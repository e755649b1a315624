#pragma once
// Which local address a process gives Gloo, so that processes on other machines can reach
// it. Gloo binds its device to one address and tells every peer that address through the
// store; a loopback address there breaks every run that spans machines ("connect
// [127.0.0.1]:...: Connection refused" on the other machines).
//
// The rules, first match wins:
//   1. GLOO_SOCKET_IFNAME (one name, or several separated by commas): one device per
//      interface, as PyTorch does; an interface that does not exist or has no address is an
//      error that lists the interfaces there are.
//   2. MASTER_ADDR resolves to a loopback address and every process runs on this machine:
//      127.0.0.1.
//   3. MASTER_ADDR is not loopback here: the local address the kernel would send from to
//      reach MASTER_ADDR (a UDP socket connected to it, then getsockname; no packet is sent).
//   4. MASTER_ADDR is loopback here but the job spans machines (e.g. Debian's
//      "127.0.1.1 <hostname>" line and MASTER_ADDR=<hostname> on the main machine): the one
//      non-loopback address of this machine; with several, an error that asks for
//      GLOO_SOCKET_IFNAME.
// The choice and its reason travel with the process state, for errors and debug output.
//
// No LibTorch here: the decision is a pure function of gathered facts (unit-tested), and
// gathering them is a few socket calls.

#include <optional>
#include <string>
#include <vector>

namespace accelerate {
namespace detail {

// One address of one interface of this machine.
struct InterfaceAddress {
  std::string interface;
  std::string address;  // numeric, "10.77.0.1" or "fe80::1"
  bool loopback = false;
};

// What the rules look at, gathered from the system by gather_endpoint_facts().
struct EndpointFacts {
  std::string master_addr;                   // as given
  std::vector<std::string> master_resolved;  // its numeric addresses here (empty: does not resolve)
  std::string resolve_error;                 // why it does not resolve
  std::optional<std::string> route_source;   // rule 3's local address
  std::string route_error;                   // why there is none
  bool spans_machines = false;               // LOCAL_WORLD_SIZE < WORLD_SIZE
  std::string socket_ifname;                 // GLOO_SOCKET_IFNAME ("" when unset)
  std::vector<InterfaceAddress> interfaces;  // every address of every interface that is up
};

struct GlooEndpoint {
  std::vector<std::string> interfaces;  // rule 1: a device per interface
  std::string address;                  // rules 2-4: the address to bind and advertise
  std::string reason;                   // one phrase: why this choice
  // "10.77.0.2", or "mnet0 (10.77.0.2)" for an interface.
  std::string describe() const;
};

// Applies the rules; throws DistributedError (a sentence without the "accelerate: " prefix,
// which the caller adds with its rank) saying what to do when none gives an address.
GlooEndpoint choose_gloo_endpoint(const EndpointFacts& facts);

// Gathers the facts: resolves MASTER_ADDR, asks the kernel for its route, lists interfaces.
EndpointFacts gather_endpoint_facts(const std::string& master_addr, int master_port, bool spans_machines,
                                    const std::string& socket_ifname);

// Every address of every interface that is up (getifaddrs), IPv4 before IPv6.
std::vector<InterfaceAddress> interface_addresses();

bool is_loopback_address(const std::string& numeric);

}  // namespace detail
}  // namespace accelerate
