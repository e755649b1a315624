#pragma once
// The launchers of a job that spans machines, joined by one TCP connection from each
// machine_rank > 0 to machine 0, at --main_process_ip and port main_process_port + 1
// (the processes' own rendezvous, the TCPStore of rank 0, is at main_process_port).
//
// Rendezvous: machine 0 listens and waits for every other machine to say hello (same
// --num_machines, --num_processes, --max_restarts; no machine rank twice); the others
// connect, retrying while machine 0 is not there yet. Nothing starts until all have joined;
// after --rdzv_timeout every launcher fails with a message naming the machines that never
// came. A --main_process_ip that is not an address of machine 0, or that does not resolve,
// fails at once.
//
// While the processes run, each side sends a heartbeat every second; a peer silent for 5 s,
// or whose connection closes, is lost. The first failure anywhere (a process exiting
// non-zero or killed, an interrupted launcher, a lost machine) goes to machine 0, which
// tells every machine to stop its processes. When every machine's processes have ended,
// machine 0 decides the attempt's outcome for all: the code of the earliest failure (by
// each launcher's clock, so that a process that failed because its peer died first does
// not take the blame), and whether to restart (--max_restarts). Every launcher exits with
// that code.
//
// With a job token (job_token.h, docs/security.md) machine 0 first sends each connection
// "challenge nonce=N0"; a launcher answers with its hello, which adds "nonce=N1
// proof=HMAC(token, hello N0 machine=R)", and machine 0 proves the token back in "start
// proof=HMAC(token, start N1)". A connection that does not prove the token, says anything
// but hello first, sends a line over 64 KiB or stays silent for 10 s is dropped and logged
// with its address; the job goes on waiting for its machines. Without a token the proofs
// are absent and any launcher that says hello is admitted (as before tokens existed).
//
// Lines of text, one message per line: "challenge nonce=N0", "hello machine=1 machines=2
// processes=4 restarts=0 host=NAME nonce=N1 [proof=P]", "refused reason=...",
// "start [proof=P]", "abort reason=...", "fail attempt=0 rank=3 code=7 time=USEC
// reason=exited with code 7", "stop attempt=0 reason=...", "ended attempt=0 code=0
// failed=0 restartable=1", "verdict attempt=0 code=7 failed=1 restart=0 cause=...", "ping".

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/errors.h"
#include "link/job_token.h"
#include "system/supervisor.h"

namespace accelerate::launcher {

struct LinkSettings {
  int num_machines = 1;
  int machine_rank = 0;
  int num_processes = 1;
  int max_restarts = 0;
  std::string main_ip;  // --main_process_ip
  int port = 0;         // main_process_port + 1
  std::chrono::milliseconds rdzv_timeout{std::chrono::seconds(600)};
  std::chrono::milliseconds heartbeat{std::chrono::seconds(1)};
  std::chrono::milliseconds peer_timeout{std::chrono::seconds(5)};
  std::string name = "accelerate launch";  // prefix of messages
  std::optional<JobToken> token;           // every machine proves it holds it
};

class MachineLink : public JobPeers {
 public:
  // Returns once every machine has joined; throws LinkError otherwise.
  explicit MachineLink(const LinkSettings& settings);
  ~MachineLink() override;
  MachineLink(const MachineLink&) = delete;
  MachineLink& operator=(const MachineLink&) = delete;

  int stop_fd() const override;
  std::string stop_reason() override;
  void failed_here(int attempt, int rank, int code, const std::string& what) override;
  AttemptOutcome end_attempt(int attempt, const AttemptOutcome& here) override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace accelerate::launcher
