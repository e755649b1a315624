#include "core/socket_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace accelerate {
namespace detail {

std::string numeric_address(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof(text));
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof(text));
  }
  return text;
}

}  // namespace detail
}  // namespace accelerate
