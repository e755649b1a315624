#pragma once
// The processes' store of a job with a token (docs/security.md), served by machine 0's
// launcher at --main_process_port in place of rank 0's TCPStore: every connection must prove
// the store key (derived from the job token) before it is read; a stranger is dropped and
// logged with its address, and cannot hold the store up (it is served by poll(), one frame at
// a time, never blocking on a peer). Wire format: runtime/src/core/store_wire.h; client:
// runtime/src/comm/token_store.h.

#include <memory>
#include <string>

#include "link/job_token.h"

namespace accelerate::launcher {

// The key the processes prove to the store: derived from the job token, so that the
// processes never hold the token itself.
std::string processes_store_key(const JobToken& token);

class StoreServer {
 public:
  // Listens on `port` (every address of this machine; 0: a free one) and serves from a thread until
  // destroyed; throws LinkError when the port cannot be bound. `name` prefixes the log.
  StoreServer(int port, const std::string& key, const std::string& name);
  ~StoreServer();
  // The port it listens on (the one given; the kernel's choice for 0).
  int port() const;
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accelerate::launcher
