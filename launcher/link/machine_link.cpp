#include "link/machine_link.h"

#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>

#include <accelerate/core/detail/env_names.h>
#include <accelerate/log/logging.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "link/link_message.h"
#include "link/link_socket.h"

namespace accelerate::launcher {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kHelloWithin{10000};  // a connection that says no hello by then is dropped
// Connections waiting for their hello at once. A machine's launcher says hello within
// milliseconds, so when more arrive (a flood), the oldest is dropped: memory stays bounded
// (each holds at most LineDecoder::kMaxLineBytes) and a real launcher still gets in.
constexpr size_t kMaxPending = 32;
constexpr int kAcceptPerPass = 8;
// A refusal is logged the first time its host gives its reason; repeats are only counted, so
// that a flood of strangers does not flood the log (nor this process's memory).
constexpr size_t kRefusalsShown = 100;
constexpr size_t kNonceBytes = 16;
constexpr milliseconds kRetryConnect{250};
constexpr milliseconds kQuietRetries{3000};  // machine 0 starting a moment later is normal
constexpr milliseconds kPollSlice{250};

long long wall_usec() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<long long>(t.tv_sec) * 1000000 + t.tv_nsec / 1000;
}

std::string seconds_text(milliseconds t) {
  std::ostringstream os;
  os << t.count() / 1000.0 << " s";
  return os.str();
}

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

// Text from the network, for a terminal: control characters (escape sequences) become '?'.
std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

std::string list_text(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// A connection to machine 0 that has not said hello yet.
struct Pending {
  std::unique_ptr<LineConnection> conn;
  std::string peer;   // "address:port", for the log
  std::string nonce;  // of its challenge
  Clock::time_point since;
};

// Where a machine's job token comes from, for the refusals that ask for one.
std::string token_sources() { return std::string("(--job_token_file or ") + env_names::kJobToken + ")"; }

}  // namespace

struct MachineLink::Impl {
  LinkSettings s;
  std::string endpoint;                                // "10.77.0.1:29501"
  std::vector<std::unique_ptr<LineConnection>> peers;  // machine 0: by machine rank; others: [0]
  std::vector<std::string> hosts;                      // host names by machine rank
  std::vector<std::string> nonces;                     // machine 0: each machine's, for its start proof
  std::vector<std::string> challenges;                 // machine 0: the nonce each machine answered
  std::string own_nonce;                               // other machines: the nonce of this one's hello
  int refused = 0;                                     // machine 0: connections dropped at the rendezvous
  std::set<std::string> shown;                         // machine 0: "host reason" already logged
  int stop_pipe[2] = {-1, -1};
  int wake_pipe[2] = {-1, -1};
  std::thread thread;

  std::mutex m;
  std::condition_variable cv;
  bool quit = false;
  bool finished = false;  // the last verdict is out: closed connections are expected
  int attempt = 0;
  bool stop_requested = false;
  std::string stop_reason;
  std::deque<std::pair<int, std::string>> outbox;  // (machine rank, -1: every other machine; line)
  // Machine 0: the attempt's failures and which machines have ended it.
  struct Failure {
    long long time;
    int machine;
    std::string text;
    int code;
  };
  std::vector<Failure> failures;
  std::map<int, AttemptOutcome> ended;
  // Every machine: the attempt's outcome once known.
  std::optional<AttemptOutcome> verdict;
  bool main_lost = false;
  std::string lost_text;

  bool is_main() const { return s.machine_rank == 0; }

  void note(const std::string& text) const { get_logger(s.name).info(text); }

  std::string token_text() const {
    return s.token ? "job token " + s.token->fingerprint() + " from " + s.token->origin : "no job token";
  }

  std::string machine_text(int machine) const {
    const std::string& host = machine < static_cast<int>(hosts.size()) ? hosts[machine] : std::string();
    return "machine " + std::to_string(machine) + (host.empty() ? "" : " (host " + host + ")");
  }

  std::string failure_text(int machine, int rank, const std::string& what) const {
    if (rank == -1) return "the launcher of " + machine_text(machine) + " " + what;
    return "rank " + std::to_string(rank) + " on " + machine_text(machine) + " " + what;
  }

  // ---- rendezvous ----------------------------------------------------------------------
  void rendezvous_main();
  void accept_pending(int listen_fd, std::vector<Pending>& pending);
  void screen(Pending& p);
  std::string check_hello(const Pending& p, const std::string& covered, const std::string& proof) const;
  std::string proven(const std::string& kind, const std::string& nonce, const std::string& reason) const;
  void seal(LineConnection& conn, int machine, const std::string& challenge, const std::string& nonce) const;
  void drop(Pending& p, const std::string& why);
  void admit(std::unique_ptr<LineConnection>& conn, const Message& hello, const std::string& nonce);
  void abort_all(const std::string& reason);
  void rendezvous_member();
  // Thrown by await when machine 0 closes the connection before the awaited message.
  struct Dropped {};
  Message await(const std::string& kind, Clock::time_point deadline, const std::string& late);
  int connect_to_main(const std::vector<SocketAddress>& addresses, Clock::time_point deadline);
  void join_main(Clock::time_point deadline);

  // ---- while the processes run (the link thread, under `m`) ---------------------------
  void serve();
  void handle(int machine, const Message& msg);
  void lost(int machine, const std::string& why);
  void record_failure(int machine, int rank, int code, long long time, const std::string& what);
  void request_stop(const std::string& reason);
  void maybe_verdict();
  void flush_outbox();
  void wake() const { (void)!write(wake_pipe[1], "w", 1); }
};

// ---- rendezvous: machine 0 ---------------------------------------------------------------

void MachineLink::Impl::abort_all(const std::string& reason) {
  for (size_t r = 1; r < peers.size(); ++r) {
    if (peers[r]) peers[r]->send("abort" + proven("abort", nonces[r], reason) + " reason=" + reason);
  }
}

// " proof=..." that this job's machine 0 sent `kind` with `reason` to the machine whose hello
// had `nonce` (so that it is not replayed to another); "" without a token or a nonce.
std::string MachineLink::Impl::proven(const std::string& kind, const std::string& nonce,
                                      const std::string& reason) const {
  if (!s.token || nonce.empty()) return "";
  return " proof=" + prove(*s.token, kind + " " + nonce + " " + reason);
}

// After the rendezvous every message on the connection to `machine` carries a MAC, with a key
// both sides derive from the token and the two nonces of this connection's exchange.
void MachineLink::Impl::seal(LineConnection& conn, int machine, const std::string& challenge,
                             const std::string& nonce) const {
  if (!s.token) return;
  const JobToken key{prove(*s.token, "link " + challenge + " " + nonce), "the link key"};
  const std::string to_machine = "0>" + std::to_string(machine), to_main = std::to_string(machine) + ">0";
  if (is_main()) {
    conn.seal(key, to_machine, to_main);
  } else {
    conn.seal(key, to_main, to_machine);
  }
}

void MachineLink::Impl::accept_pending(int listen_fd, std::vector<Pending>& pending) {
  std::string peer;
  // A few per pass, then the waiting ones are screened: a burst of connections cannot push
  // a launcher whose hello is already here out before it is read.
  int fd = -1;
  for (int n = 0; n < kAcceptPerPass && (fd = accept_connection(listen_fd, &peer)) >= 0; ++n) {
    if (pending.size() >= kMaxPending) {
      drop(pending.front(), "more than " + std::to_string(kMaxPending) + " connections at once without a hello");
      pending.erase(pending.begin());
    }
    Pending p{std::make_unique<LineConnection>(fd), peer, random_hex(kNonceBytes), Clock::now()};
    p.conn->send("challenge nonce=" + p.nonce);
    pending.push_back(std::move(p));
  }
}

void MachineLink::Impl::drop(Pending& p, const std::string& why) {
  ++refused;
  const std::string host = p.peer.substr(0, p.peer.rfind(':'));
  if (shown.size() < kRefusalsShown && shown.insert(host + " " + why).second) {
    get_logger(s.name).warning("refused a connection from " + p.peer + ": " + why +
                               " (the same from this host again is only counted)");
  }
  p.conn.reset();
}

// "" when `hello` proves this job's token (or neither side has one); otherwise why not. The
// proof covers the whole hello (`line` up to its proof, the last field): the machine's flags
// cannot be changed on the way.
std::string MachineLink::Impl::check_hello(const Pending& p, const std::string& covered,
                                           const std::string& proof) const {
  if (!s.token) {
    return proof.empty()
               ? ""
               : "it has a job token and machine 0 has none: give every machine the same token " + token_sources();
  }
  if (proof.empty()) {
    return "it has no job token and this job has one: give every machine the same token " + token_sources();
  }
  if (!proof_matches(*s.token, p.nonce + " " + covered, proof)) {
    return "its job token is not this job's (or its hello was altered on the way)";
  }
  if (parse_message(covered).text("nonce").size() != 2 * kNonceBytes) return "its hello has no nonce";
  return "";
}

// A connection becomes one of the job's machines only by a hello that passes check_hello;
// anything else drops it, and the job goes on waiting for its machines.
void MachineLink::Impl::screen(Pending& p) {
  bool closed = false;
  const auto lines = p.conn->receive(&closed);
  if (p.conn->overflowed()) return drop(p, "not a launcher (a line over 64 KiB)");
  for (const auto& line : lines) {
    // The proof is the last field and covers everything before it; the flags are read from
    // that part only (fields a relay appended after the proof make the proof wrong).
    const size_t at = line.rfind(" proof=");
    const std::string covered = at == std::string::npos ? line : line.substr(0, at);
    const std::string proof = at == std::string::npos ? "" : line.substr(at + 7);
    const Message msg = parse_message(covered);
    if (msg.kind != "hello") return drop(p, "not a launcher (its first message was not a hello)");
    const std::string why = check_hello(p, covered, proof);
    const std::string nonce = msg.text("nonce");
    if (!why.empty()) {
      // Not proven: a proof for a nonce the peer chose would give a stranger an HMAC of the
      // token to guess against offline. The launcher says the refusal is not proven.
      p.conn->send("refused reason=" + why);
      return drop(p, why);
    }
    admit(p.conn, msg, nonce);  // throws (ending the job) only for a machine that proved the token
    nonces[static_cast<int>(msg.number("machine"))] = nonce;
    challenges[static_cast<int>(msg.number("machine"))] = p.nonce;
    return;
  }
  if (closed) return drop(p, "it closed the connection without a hello");
  if (Clock::now() - p.since > kHelloWithin) drop(p, "no hello within " + seconds_text(kHelloWithin));
}

void MachineLink::Impl::admit(std::unique_ptr<LineConnection>& conn, const Message& hello, const std::string& nonce) {
  const int r = static_cast<int>(hello.number("machine"));
  const std::string host = hello.text("host");
  auto refuse = [&](const std::string& why) {
    conn->send("abort" + proven("abort", nonce, why) + " reason=" + why);
    abort_all(why);
    throw LinkError(why);
  };
  if (r < 1 || r >= s.num_machines) {
    refuse("a launcher on host " + host + " joined as --machine_rank " + hello.text("machine") +
           ", which is not in 1.." + std::to_string(s.num_machines - 1) + " (--num_machines " +
           std::to_string(s.num_machines) + " on machine 0)");
  }
  if (hello.number("machines") != s.num_machines || hello.number("processes") != s.num_processes ||
      hello.number("restarts") != s.max_restarts) {
    refuse("machine " + std::to_string(r) + " (host " + host + ") was started with --num_machines " +
           hello.text("machines") + " --num_processes " + hello.text("processes") + " --max_restarts " +
           hello.text("restarts") + ", machine 0 with " + std::to_string(s.num_machines) + ", " +
           std::to_string(s.num_processes) + ", " + std::to_string(s.max_restarts) +
           ": every machine's launcher needs the same values");
  }
  if (peers[r]) {
    refuse("two launchers joined as --machine_rank " + std::to_string(r) + " (hosts " + hosts[r] + " and " + host +
           "): give each machine its own rank");
  }
  hosts[r] = host;
  peers[r] = std::move(conn);
}

void MachineLink::Impl::rendezvous_main() {
  const auto addresses = resolve_host(s.main_ip, s.port, "--main_process_ip");
  if (!is_local(addresses)) {
    throw LinkError("--main_process_ip " + s.main_ip +
                    " is not an address of this machine, but this is machine 0 "
                    "(--machine_rank 0), where the other machines join: give every machine the address of machine 0 "
                    "that they reach (this machine has: " +
                    local_interfaces_text() + ")");
  }
  std::string error;
  const int listen_fd = listen_on_port(s.port, &error);
  if (listen_fd < 0) {
    throw LinkError("machine 0 cannot listen for the other machines on port " + std::to_string(s.port) +
                    " (--main_process_port + 1): " + error + "; choose another --main_process_port on every machine");
  }
  LineConnection listener(listen_fd);
  note("waiting up to " + seconds_text(s.rdzv_timeout) + " (--rdzv_timeout) for machine" +
       (s.num_machines > 2 ? "s 1.." : " ") + std::to_string(s.num_machines - 1) + " to join at " + endpoint + " (" +
       token_text() + (s.token ? "" : ": any host that reaches this port can join, see docs/security.md") + ")");
  const auto deadline = Clock::now() + s.rdzv_timeout;
  std::vector<Pending> pending;
  auto joined = [&] { return std::count_if(peers.begin() + 1, peers.end(), [](auto& p) { return p != nullptr; }); };
  while (joined() < s.num_machines - 1) {
    const auto now = Clock::now();
    if (now >= deadline) {
      std::vector<int> missing;
      std::string present = "0 (this machine, host " + hosts[0] + ")";
      for (int r = 1; r < s.num_machines; ++r) {
        if (!peers[r])
          missing.push_back(r);
        else
          present += ", " + std::to_string(r) + " (host " + hosts[r] + ")";
      }
      const std::string why =
          "rendezvous timed out after " + seconds_text(s.rdzv_timeout) + " (--rdzv_timeout): machine" +
          (missing.size() > 1 ? "s " : " ") + list_text(missing) + " never joined at " + endpoint +
          " (joined: " + present +
          (refused ? "; refused: " + std::to_string(refused) + " connections, see the warnings above" : std::string()) +
          "). Start `accelerate launch --machine_rank N` on every machine "
          "with --main_process_ip " +
          s.main_ip +
          ", check that they reach it, or wait longer with "
          "--rdzv_timeout";
      abort_all(why);
      throw LinkError(why);
    }
    std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
    for (auto& p : pending) fds.push_back({p.conn->fd(), POLLIN, 0});
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
    poll(fds.data(), fds.size(), static_cast<int>(std::min(left, kPollSlice).count()) + 1);
    accept_pending(listen_fd, pending);
    for (auto& p : pending) screen(p);
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return !p.conn; }),
                  pending.end());
    for (int r = 1; r < s.num_machines; ++r) {  // a joined launcher that gives up leaves a hole
      bool closed = false;
      if (peers[r]) peers[r]->receive(&closed);
      if (closed) {
        note(machine_text(r) + " left during the rendezvous");
        peers[r].reset();
      }
    }
  }
  if (refused) note("refused " + std::to_string(refused) + " connection(s) during the rendezvous (warnings above)");
  for (int r = 1; r < s.num_machines; ++r) {
    peers[r]->send("start" + (s.token ? " proof=" + prove(*s.token, "start " + nonces[r]) : std::string()));
    seal(*peers[r], r, challenges[r], nonces[r]);
  }
}

// ---- rendezvous: the other machines ------------------------------------------------------

int MachineLink::Impl::connect_to_main(const std::vector<SocketAddress>& addresses, Clock::time_point deadline) {
  int fd = -1, error = 0;
  bool noted = false;
  const auto began = Clock::now();
  for (;;) {
    for (const auto& a : addresses) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      fd = connect_within(a, std::clamp(left, milliseconds(1), milliseconds(2000)), &error);
      if (fd >= 0) return fd;
      if (error == ENETUNREACH) {
        throw LinkError("this machine has no route to --main_process_ip " + s.main_ip + " (" + a.text +
                        "): give the address of machine 0 that this machine reaches (this machine has: " +
                        local_interfaces_text() + ")");
      }
    }
    if (Clock::now() >= deadline) {
      throw LinkError("machine 0 never answered at " + endpoint + " within " + seconds_text(s.rdzv_timeout) +
                      " (--rdzv_timeout; last error: " + std::strerror(error) +
                      "): is `accelerate launch --machine_rank 0` running there, is --main_process_ip " + s.main_ip +
                      " its address, and is the port open between the machines?");
    }
    if (!noted && Clock::now() - began > kQuietRetries) {
      note("machine 0 does not answer at " + endpoint + " yet (" + std::strerror(error) + "): retrying for up to " +
           seconds_text(s.rdzv_timeout) + " (--rdzv_timeout)");
      noted = true;
    }
    std::this_thread::sleep_for(kRetryConnect);
  }
}

// Challenge, hello, start over the connection peers[0]; throws Dropped when machine 0 closes
// it before answering.
void MachineLink::Impl::join_main(Clock::time_point deadline) {
  const Message challenge =
      await("challenge", Clock::now() + kHelloWithin,
            "accepted the connection but sent no challenge within " + seconds_text(kHelloWithin) +
                ": is something other than `accelerate launch --machine_rank 0` listening there?");
  const std::string rank = std::to_string(s.machine_rank), nonce = random_hex(kNonceBytes);
  own_nonce = nonce;
  std::string hello = "hello machine=" + rank + " machines=" + std::to_string(s.num_machines) +
                      " processes=" + std::to_string(s.num_processes) + " restarts=" + std::to_string(s.max_restarts) +
                      " host=" + hosts[s.machine_rank] + " nonce=" + nonce;
  // The proof covers the whole hello, so nobody on the way can change this machine's flags.
  if (s.token) hello += " proof=" + prove(*s.token, challenge.text("nonce") + " " + hello);
  peers[0]->send(hello);
  // Machine 0 may still wait for others: it says when (or why not); a little longer than
  // our own timeout, so that its message, which names who is missing, comes first.
  const Message start = await("start", deadline + milliseconds(5000),
                              "did not start the job within " + seconds_text(s.rdzv_timeout) +
                                  " (--rdzv_timeout): it is still waiting for other machines (see its output)");
  if (s.token && !proof_matches(*s.token, "start " + nonce, start.text("proof"))) {
    throw LinkError("the launcher at " + endpoint +
                    " did not prove that it holds this job's token: it is not this job's machine 0 (another job "
                    "on the same port?). Nothing was started");
  }
  seal(*peers[0], s.machine_rank, challenge.text("nonce"), nonce);
}

void MachineLink::Impl::rendezvous_member() {
  const auto addresses = resolve_host(s.main_ip, s.port, "--main_process_ip");
  const auto deadline = Clock::now() + s.rdzv_timeout;
  // Machine 0 drops the oldest waiting connections when too many wait at once (strangers
  // flooding its port): a launcher dropped before it was answered connects again.
  for (;;) {
    peers.clear();
    peers.push_back(std::make_unique<LineConnection>(connect_to_main(addresses, deadline)));
    try {
      join_main(deadline);
      return;
    } catch (const Dropped&) {
      if (Clock::now() >= deadline) {
        throw LinkError("machine 0 (" + endpoint +
                        ") closed the connection during the rendezvous (its output says why)");
      }
      note("machine 0 (" + endpoint +
           ") closed the connection before answering (it drops the oldest waiting "
           "connections when many arrive at once): connecting again");
      std::this_thread::sleep_for(kRetryConnect);
    }
  }
}

// The next message `kind` from machine 0; "machine 0 (ENDPOINT) " + `late` when it does not
// come by `deadline`.
Message MachineLink::Impl::await(const std::string& kind, Clock::time_point deadline, const std::string& late) {
  for (;;) {
    pollfd p{peers[0]->fd(), POLLIN, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw LinkError("machine 0 (" + endpoint + ") " + late);
    poll(&p, 1, static_cast<int>(std::min(left, kPollSlice).count()) + 1);
    bool closed = false;
    const auto lines = peers[0]->receive(&closed);
    for (size_t i = 0; i < lines.size(); ++i) {
      Message msg = parse_message(lines[i]);
      if (msg.kind == kind) {
        // What machine 0 sent right after (sealed lines after start) is read after the seal.
        peers[0]->unread({lines.begin() + static_cast<std::ptrdiff_t>(i) + 1, lines.end()});
        return msg;
      }
      // With a token, machine 0 proves these for this machine's nonce; one without a valid
      // proof may come from a stranger posing as machine 0: say so.
      const bool is_proven =
          s.token && proof_matches(*s.token, msg.kind + " " + own_nonce + " " + msg.text("reason"), msg.text("proof"));
      const std::string unproven = s.token && !is_proven ? " (not proven to come from this job's machine 0)" : "";
      if (msg.kind == "abort") {
        throw LinkError("machine 0 ended the rendezvous: " + printable(msg.text("reason")) + unproven);
      }
      if (msg.kind == "refused") {
        throw LinkError("machine 0 (" + endpoint + ") refused this machine: " + printable(msg.text("reason")) +
                        " (this machine: " + token_text() + ")" + unproven);
      }
    }
    if (closed) throw Dropped{};
  }
}

// ---- while the processes run ---------------------------------------------------------------

void MachineLink::Impl::flush_outbox() {
  while (!outbox.empty()) {
    const auto [to, line] = outbox.front();
    outbox.pop_front();
    for (size_t r = 0; r < peers.size(); ++r) {
      if (peers[r] && peers[r]->open() && (to < 0 || static_cast<size_t>(to) == r || !is_main())) peers[r]->send(line);
    }
  }
}

void MachineLink::Impl::request_stop(const std::string& reason) {
  if (stop_requested) return;
  stop_requested = true;
  stop_reason = reason;
  (void)!write(stop_pipe[1], "s", 1);
}

void MachineLink::Impl::record_failure(int machine, int rank, int code, long long time, const std::string& what) {
  const std::string text = rank == -2 ? lost_text : failure_text(machine, rank, what);
  failures.push_back({time, machine, text, code});
  if (failures.size() > 1) return;
  outbox.emplace_back(-1, "stop attempt=" + std::to_string(attempt) + " reason=" + text);
  if (machine != 0) request_stop(text);
}

void MachineLink::Impl::maybe_verdict() {
  if (static_cast<int>(ended.size()) < s.num_machines || verdict) return;
  AttemptOutcome v;
  int cause_machine = -1;
  for (const auto& [machine, o] : ended) {
    v.failed |= o.failed;
    v.restartable &= o.restartable;
    if (o.failed && cause_machine < 0) {
      v.code = o.code;
      cause_machine = machine;
    }
  }
  if (!failures.empty()) {
    const auto first = std::min_element(failures.begin(), failures.end(),
                                        [](const Failure& a, const Failure& b) { return a.time < b.time; });
    v.failed = true;
    v.code = first->code;
    v.cause = first->text;
    cause_machine = first->machine;
  }
  outbox.emplace_back(-1, "verdict attempt=" + std::to_string(attempt) + " code=" + std::to_string(v.code) +
                              " failed=" + std::to_string(v.failed) + " restartable=" + std::to_string(v.restartable) +
                              " machine=" + std::to_string(cause_machine) + " cause=" + v.cause);
  if (cause_machine == 0) v.cause.clear();
  verdict = v;
  cv.notify_all();
}

void MachineLink::Impl::handle(int machine, const Message& msg) {
  if (msg.kind == "ping" || msg.number("attempt") != attempt) return;
  if (is_main()) {
    if (msg.kind == "fail") {
      record_failure(machine, static_cast<int>(msg.number("rank")), static_cast<int>(msg.number("code")),
                     msg.number("time"), msg.text("reason"));
    } else if (msg.kind == "ended") {
      AttemptOutcome o;
      o.code = static_cast<int>(msg.number("code"));
      o.failed = msg.number("failed") == 1;
      o.restartable = msg.number("restartable") == 1;
      ended[machine] = o;
      maybe_verdict();
    }
    return;
  }
  if (msg.kind == "stop") {
    request_stop(msg.text("reason"));
  } else if (msg.kind == "verdict") {
    AttemptOutcome v;
    v.code = static_cast<int>(msg.number("code"));
    v.failed = msg.number("failed") == 1;
    v.restartable = msg.number("restartable") == 1;
    if (msg.number("machine") != s.machine_rank) v.cause = msg.text("cause");
    verdict = v;
    cv.notify_all();
  }
}

void MachineLink::Impl::lost(int machine, const std::string& why) {
  if (peers[machine]) peers[machine]->close();
  if (finished) return;
  if (!is_main()) {
    main_lost = true;
    lost_text = "lost contact with machine 0 (" + endpoint + "): " + why;
    request_stop(lost_text);
    cv.notify_all();
    return;
  }
  if (ended.count(machine)) return;
  lost_text = "lost contact with " + machine_text(machine) + ": " + why;
  record_failure(machine, -2, 1, wall_usec(), why);
  AttemptOutcome o;
  o.code = 1;
  o.failed = true;
  o.restartable = false;  // the job cannot start again without that machine
  ended[machine] = o;
  maybe_verdict();
}

void MachineLink::Impl::serve() {
  std::unique_lock<std::mutex> lock(m);
  for (;;) {
    flush_outbox();
    if (quit) return;
    std::vector<pollfd> fds{{wake_pipe[0], POLLIN, 0}};
    std::vector<int> who;
    for (size_t r = 0; r < peers.size(); ++r) {
      if (!peers[r] || !peers[r]->open()) continue;
      fds.push_back({peers[r]->fd(), POLLIN, 0});
      who.push_back(static_cast<int>(r));
    }
    bool unread = false;  // lines that came with start (join_main) are handled at once
    for (int r : who) unread = unread || peers[r]->has_unread();
    lock.unlock();
    poll(fds.data(), fds.size(), unread ? 0 : static_cast<int>(std::min(s.heartbeat / 2, kPollSlice).count()));
    lock.lock();
    char drain[64];
    while (read(wake_pipe[0], drain, sizeof(drain)) > 0) {
    }
    const auto now = Clock::now();
    for (size_t i = 1; i < fds.size(); ++i) {
      auto& conn = peers[who[i - 1]];
      bool closed = false;
      if (fds[i].revents || conn->has_unread()) {
        for (const auto& line : conn->receive(&closed)) handle(who[i - 1], parse_message(line));
      }
      if (closed && conn->tampered()) {
        lost(who[i - 1],
             "a message from its launcher failed its check (altered on the way, or not from this "
             "job's launcher): the link is no longer trusted");
      } else if (closed) {
        lost(who[i - 1], "its launcher closed the connection (it ended, or its machine went down)");
      } else if (now - conn->last_heard > s.peer_timeout) {
        lost(who[i - 1], "no heartbeat for " + seconds_text(s.peer_timeout) + " (machine down or network cut)");
      } else if (now - conn->last_sent >= s.heartbeat && !conn->send("ping")) {
        lost(who[i - 1], "its connection failed");
      }
    }
  }
}

// ---- MachineLink -------------------------------------------------------------------------

MachineLink::MachineLink(const LinkSettings& settings) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.s = settings;
  d.endpoint = settings.main_ip + ":" + std::to_string(settings.port);
  d.hosts.assign(settings.num_machines, "");
  d.hosts[settings.machine_rank] = this_host();
  d.nonces.assign(settings.num_machines, "");
  d.challenges.assign(settings.num_machines, "");
  if (settings.port < 1 || settings.port > 65535) {
    throw LinkError(
        "the launchers of several machines meet at --main_process_port + 1 = " + std::to_string(settings.port) +
        ", which is not a TCP port: choose a --main_process_port below 65535");
  }
  if (pipe2(d.stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(d.wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw LinkError(std::string("cannot create pipes: ") + std::strerror(errno));
  }
  if (d.is_main()) {
    d.peers.resize(settings.num_machines);
    d.rendezvous_main();
  } else {
    d.rendezvous_member();
  }
  d.thread = std::thread([&d] { d.serve(); });
}

MachineLink::~MachineLink() {
  Impl& d = *impl_;
  if (d.thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(d.m);
      d.quit = true;
      d.finished = true;
    }
    d.wake();
    d.thread.join();
  }
  for (int fd : {d.stop_pipe[0], d.stop_pipe[1], d.wake_pipe[0], d.wake_pipe[1]}) {
    if (fd >= 0) close(fd);
  }
}

int MachineLink::stop_fd() const { return impl_->stop_pipe[0]; }

std::string MachineLink::stop_reason() {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->stop_reason;
}

void MachineLink::failed_here(int attempt, int rank, int code, const std::string& what) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.m);
  if (attempt != d.attempt) return;
  if (d.is_main()) {
    d.record_failure(0, rank, code, wall_usec(), what);
  } else {
    d.outbox.emplace_back(0, "fail attempt=" + std::to_string(attempt) + " rank=" + std::to_string(rank) + " code=" +
                                 std::to_string(code) + " time=" + std::to_string(wall_usec()) + " reason=" + what);
  }
  d.wake();
}

AttemptOutcome MachineLink::end_attempt(int attempt, const AttemptOutcome& here) {
  Impl& d = *impl_;
  std::unique_lock<std::mutex> lock(d.m);
  if (d.is_main()) {
    d.ended[0] = here;
    d.maybe_verdict();
  } else {
    d.outbox.emplace_back(0, "ended attempt=" + std::to_string(attempt) + " code=" + std::to_string(here.code) +
                                 " failed=" + std::to_string(here.failed) +
                                 " restartable=" + std::to_string(here.restartable));
  }
  d.wake();
  d.cv.wait(lock, [&d] { return d.verdict.has_value() || d.main_lost; });
  AttemptOutcome out;
  if (d.verdict) {
    out = *d.verdict;
  } else {
    out = here;
    out.failed = true;
    out.code = here.failed ? here.code : 1;
    out.restartable = false;
    out.cause = d.lost_text;
  }
  if (out.failed && out.restartable && attempt < d.s.max_restarts) {
    // The next attempt starts clean on every machine.
    ++d.attempt;
    d.failures.clear();
    d.ended.clear();
    d.verdict.reset();
    d.stop_requested = false;
    d.stop_reason.clear();
    char drain[64];
    while (read(d.stop_pipe[0], drain, sizeof(drain)) > 0) {
    }
  } else {
    d.finished = true;
  }
  d.wake();
  return out;
}

}  // namespace accelerate::launcher
