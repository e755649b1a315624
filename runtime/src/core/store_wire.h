#pragma once
// The wire format of the processes' store when the job has a token (docs/security.md): the
// launcher of machine 0 serves it (launcher/link/store_server.h) and every process is a
// client (comm/token_store.h). No LibTorch and no sockets here, so that both sides share one
// encoder and the decoder is tested on bytes alone.
//
// A connection opens with a challenge and proofs, in lines:
//   server: "accelerate-store 1 challenge=<32 hex>"
//   client: "proof=<HMAC(key, "store-hello " challenge)> nonce=<32 hex>"
//   server: "ok proof=<HMAC(key, "store-ok " nonce)>"            (or it closes the connection)
// Then frames: u32 payload length (little endian), the payload, and 32 bytes of HMAC-SHA256
// with the session key over the direction, a counter and the payload, so a frame cannot be
// altered, forged, replayed or reordered. A payload is one byte (an operation or a status),
// a u32 argument count, and each argument as a u32 length and its bytes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accelerate::detail::store_wire {

enum Op : uint8_t { kSet = 1, kCompareSet, kGetNow, kAdd, kDelete, kCheck, kNumKeys, kWait };
enum Status : uint8_t { kOk = 100, kMissing, kTimeout, kBadRequest };

constexpr size_t kNonceBytes = 16;
constexpr size_t kMaxHandshakeLine = 256;           // longer is not a client
constexpr size_t kMaxPayload = 256u * 1024 * 1024;  // authenticated peers only
constexpr size_t kMacBytes = 32;

struct Frame {
  uint8_t code = 0;
  std::vector<std::string> args;
};

// The three handshake lines (without '\n') and their checks.
std::string challenge_line(const std::string& challenge);
std::string proof_line(const std::string& key, const std::string& challenge, const std::string& nonce);
std::string ok_line(const std::string& key, const std::string& nonce);
// The challenge in a server's first line; nullopt when it is not one.
std::optional<std::string> parse_challenge(const std::string& line);
// The client's nonce when `line` proves `key` for `challenge`; nullopt otherwise.
std::optional<std::string> check_proof(const std::string& key, const std::string& challenge, const std::string& line);
bool check_ok(const std::string& key, const std::string& nonce, const std::string& line);

// The key both sides seal frames with, from the store key and the two nonces.
std::string session_key(const std::string& key, const std::string& challenge, const std::string& nonce);

// Seals frames in one direction ("c>s" or "s>c").
class Sealer {
 public:
  Sealer(std::string key, std::string direction) : key_(std::move(key)), direction_(std::move(direction)) {}
  std::string seal(const Frame& frame);

 private:
  std::string key_, direction_;
  uint64_t count_ = 0;
};

// Cuts received bytes into frames and checks each one's MAC; broken() once a frame is too
// long, malformed or fails its MAC (nothing after it is returned).
class Unsealer {
 public:
  Unsealer(std::string key, std::string direction) : key_(std::move(key)), direction_(std::move(direction)) {}
  void feed(const char* data, size_t n) { buffer_.append(data, n); }
  std::optional<Frame> next();
  bool broken() const { return !why_.empty(); }
  const std::string& why() const { return why_; }

 private:
  std::string key_, direction_, buffer_, why_;
  uint64_t count_ = 0;
};

// A payload's bytes and back (decode: nullopt when malformed).
std::string encode_payload(const Frame& frame);
std::optional<Frame> decode_payload(const std::string& payload);

}  // namespace accelerate::detail::store_wire
