#include "system/ports.h"

#include <accelerate/core/error.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace accelerate::launcher {

namespace {

int bind_port(int port, int* bound_port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  // SO_REUSEADDR: a port left in TIME_WAIT by a finished job counts as free, as it does
  // for the TCPStore that will listen on it.
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int err = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    err = errno;
  } else if (bound_port) {
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    *bound_port = ntohs(addr.sin_port);
  }
  close(fd);
  return err;
}

}  // namespace

int pick_free_port() {
  int port = 0;
  int err = bind_port(0, &port);
  if (err != 0 || port == 0) {
    throw Error(ErrorCode::Distributed, std::string("cannot find a free TCP port: ") + std::strerror(err));
  }
  return port;
}

bool port_is_free(int port) { return bind_port(port, nullptr) == 0; }

}  // namespace accelerate::launcher
