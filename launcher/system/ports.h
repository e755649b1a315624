#pragma once
// TCP ports for the rendezvous (MASTER_PORT).

namespace accelerate::launcher {

// A port the kernel reports free right now (bind to port 0). The kernel hands out
// ephemeral ports in a spread order, so two launchers started together get different ones.
int pick_free_port();

// True when nothing listens on `port` on any local address.
bool port_is_free(int port);

}  // namespace accelerate::launcher
