#pragma once
// A socket address as text, shared by the runtime's Gloo endpoint (comm/gloo_endpoint.cpp) and
// the launcher's machine link (launcher/link/link_socket.cpp) so that both print an address
// alike (object library accelerate_wire; issue 49 item 2).
#include <sys/socket.h>

#include <string>

namespace accelerate {
namespace detail {

// The numeric host of an IPv4 or IPv6 address ("10.0.0.2", "fe80::1"); "" for another family.
std::string numeric_address(const sockaddr* sa);

}  // namespace detail
}  // namespace accelerate
