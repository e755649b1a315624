// The address a process gives Gloo (see gloo_endpoint.h for the rules).
#include "comm/gloo_endpoint.h"

#include "core/socket_address.h"

#include <accelerate/core/error.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace accelerate {
namespace detail {
namespace {

bool is_ipv4(const std::string& a) { return a.find(':') == std::string::npos; }
bool is_link_local(const std::string& a) { return a.rfind("fe80:", 0) == 0; }

std::string list_interfaces(const std::vector<InterfaceAddress>& all) {
  std::string out;
  for (const auto& a : all) {
    if (is_link_local(a.address)) continue;
    out += (out.empty() ? "" : ", ") + a.interface + " (" + a.address + ")";
  }
  return out.empty() ? "none" : out;
}

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) names.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

GlooEndpoint by_interface(const EndpointFacts& f) {
  GlooEndpoint e;
  e.reason = "GLOO_SOCKET_IFNAME=" + f.socket_ifname;
  for (const auto& name : split_names(f.socket_ifname)) {
    const bool has_address = std::any_of(f.interfaces.begin(), f.interfaces.end(), [&](const InterfaceAddress& a) {
      return a.interface == name && !is_link_local(a.address);
    });
    if (!has_address) {
      throw DistributedError(
          "GLOO_SOCKET_IFNAME=" + f.socket_ifname + " names interface '" + name +
          "', which is not up with an address on this machine (its interfaces: " + list_interfaces(f.interfaces) +
          "). Name the interface that connects the machines (`ip -brief address`), "
          "or unset GLOO_SOCKET_IFNAME to use the one that routes to MASTER_ADDR.");
    }
    e.interfaces.push_back(name);
  }
  if (e.interfaces.empty()) {
    throw DistributedError("GLOO_SOCKET_IFNAME='" + f.socket_ifname + "' names no interface");
  }
  return e;
}

// Rule 4: MASTER_ADDR is loopback here, yet processes elsewhere must reach this one.
GlooEndpoint only_external_address(const EndpointFacts& f, const std::string& loopback) {
  std::vector<const InterfaceAddress*> v4, v6;
  for (const auto& a : f.interfaces) {
    if (a.loopback || is_link_local(a.address)) continue;
    (is_ipv4(a.address) ? v4 : v6).push_back(&a);
  }
  const auto& candidates = !v4.empty() ? v4 : v6;
  const std::string why = "MASTER_ADDR=" + f.master_addr + " is " + loopback +
                          " (a loopback address) on this machine, but the job spans several machines";
  if (candidates.size() != 1) {
    throw DistributedError(
        "cannot choose the address other machines reach this process at: " + why + ", and this machine has " +
        (candidates.empty() ? std::string("no other address") : "several (" + list_interfaces(f.interfaces) + ")") +
        ". Set GLOO_SOCKET_IFNAME (or `accelerate launch --network_interface`) to the interface that connects the "
        "machines, or set MASTER_ADDR to an address of this machine that the others reach (not a name that resolves "
        "to 127.x here, e.g. through Debian's '127.0.1.1 <hostname>' line in /etc/hosts).");
  }
  GlooEndpoint e;
  e.address = candidates.front()->address;
  e.reason = why + ": the only other address of this machine (" + candidates.front()->interface + ")";
  return e;
}

}  // namespace

std::string GlooEndpoint::describe() const {
  if (interfaces.empty()) return address;
  std::string out;
  for (const auto& name : interfaces) out += (out.empty() ? "" : ",") + name;
  return out;
}

bool is_loopback_address(const std::string& a) {
  return a.rfind("127.", 0) == 0 || a == "::1" || a.rfind("::ffff:127.", 0) == 0;
}

GlooEndpoint choose_gloo_endpoint(const EndpointFacts& f) {
  if (!f.socket_ifname.empty()) return by_interface(f);
  if (f.master_resolved.empty()) {
    throw DistributedError("MASTER_ADDR=" + f.master_addr + " does not resolve on this machine (" + f.resolve_error +
                           "): set it (or --main_process_ip) to the address of the machine that runs process 0, "
                           "or to a name that resolves here");
  }
  const auto loopback = std::find_if(f.master_resolved.begin(), f.master_resolved.end(), is_loopback_address);
  if (loopback != f.master_resolved.end()) {
    if (f.spans_machines) return only_external_address(f, *loopback);
    GlooEndpoint e;
    e.address = "127.0.0.1";
    e.reason = "MASTER_ADDR=" + f.master_addr + " is loopback and every process runs on this machine";
    return e;
  }
  if (!f.route_source) {
    throw DistributedError("this machine has no route to MASTER_ADDR=" + f.master_addr + " (" + f.route_error +
                           "): check MASTER_ADDR / --main_process_ip, or name the interface that connects the machines "
                           "with GLOO_SOCKET_IFNAME / --network_interface");
  }
  GlooEndpoint e;
  e.address = *f.route_source;
  e.reason = "the local address that routes to MASTER_ADDR=" + f.master_addr;
  return e;
}

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> v4, v6;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceAddress a;
    a.interface = i->ifa_name;
    a.address = numeric_address(i->ifa_addr);
    a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0 || is_loopback_address(a.address);
    (family == AF_INET ? v4 : v6).push_back(std::move(a));
  }
  freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

EndpointFacts gather_endpoint_facts(const std::string& master_addr, int master_port, bool spans_machines,
                                    const std::string& socket_ifname) {
  EndpointFacts f;
  f.master_addr = master_addr;
  f.spans_machines = spans_machines;
  f.socket_ifname = socket_ifname;
  f.interfaces = interface_addresses();
  if (!socket_ifname.empty()) return f;

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(master_addr.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    f.resolve_error = gai_strerror(rc);
    return f;
  }
  // IPv4 first, as the TCPStore client tries them.
  std::vector<const addrinfo*> order;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) order.push_back(a);
  }
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET6) order.push_back(a);
  }
  for (const addrinfo* a : order) f.master_resolved.push_back(numeric_address(a->ai_addr));
  if (!order.empty()) {
    // Connecting a UDP socket only selects the route and the source address.
    const addrinfo* target = order.front();
    sockaddr_storage dest{};
    std::memcpy(&dest, target->ai_addr, target->ai_addrlen);
    const auto port = htons(static_cast<uint16_t>(master_port > 0 ? master_port : 9));
    if (target->ai_family == AF_INET)
      reinterpret_cast<sockaddr_in*>(&dest)->sin_port = port;
    else
      reinterpret_cast<sockaddr_in6*>(&dest)->sin6_port = port;
    const int fd = socket(target->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (fd < 0) {
      f.route_error = std::string("socket: ") + std::strerror(errno);
    } else if (connect(fd, reinterpret_cast<const sockaddr*>(&dest), target->ai_addrlen) != 0) {
      f.route_error = "connect to " + f.master_resolved.front() + ": " + std::strerror(errno);
    } else if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      f.route_error = std::string("getsockname: ") + std::strerror(errno);
    } else {
      f.route_source = numeric_address(reinterpret_cast<const sockaddr*>(&local));
    }
    if (fd >= 0) close(fd);
  }
  freeaddrinfo(found);
  return f;
}

}  // namespace detail
}  // namespace accelerate
