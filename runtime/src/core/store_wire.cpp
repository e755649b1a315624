#include "core/store_wire.h"

#include "core/message_auth.h"

namespace accelerate::detail::store_wire {
namespace {

const char* const kChallengePrefix = "accelerate-store 1 challenge=";

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t get_u32(const std::string& in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

std::string mac_input(const std::string& direction, uint64_t count, const std::string& payload) {
  return direction + " " + std::to_string(count) + " " + payload;
}

// The value of `key=` in a line of space-separated fields; "" when absent.
std::string field(const std::string& line, const std::string& key) {
  const std::string tag = key + "=";
  for (size_t at = 0; at < line.size();) {
    const size_t end = std::min(line.find(' ', at), line.size());
    if (line.compare(at, tag.size(), tag) == 0) return line.substr(at + tag.size(), end - at - tag.size());
    at = end + 1;
  }
  return "";
}

}  // namespace

std::string challenge_line(const std::string& challenge) { return kChallengePrefix + challenge; }

std::string proof_line(const std::string& key, const std::string& challenge, const std::string& nonce) {
  return "proof=" + auth::hmac_hex(key, "store-hello " + challenge) + " nonce=" + nonce;
}

std::string ok_line(const std::string& key, const std::string& nonce) {
  return "ok proof=" + auth::hmac_hex(key, "store-ok " + nonce);
}

std::optional<std::string> parse_challenge(const std::string& line) {
  const std::string prefix = kChallengePrefix;
  if (line.compare(0, prefix.size(), prefix) != 0 || line.size() != prefix.size() + 2 * kNonceBytes) return {};
  return line.substr(prefix.size());
}

std::optional<std::string> check_proof(const std::string& key, const std::string& challenge, const std::string& line) {
  const std::string nonce = field(line, "nonce");
  if (nonce.size() != 2 * kNonceBytes) return {};
  if (!auth::same_secret(field(line, "proof"), auth::hmac_hex(key, "store-hello " + challenge))) return {};
  return nonce;
}

bool check_ok(const std::string& key, const std::string& nonce, const std::string& line) {
  return line.compare(0, 3, "ok ") == 0 &&
         auth::same_secret(field(line, "proof"), auth::hmac_hex(key, "store-ok " + nonce));
}

std::string session_key(const std::string& key, const std::string& challenge, const std::string& nonce) {
  return auth::hmac(key, "store-session " + challenge + " " + nonce);
}

std::string encode_payload(const Frame& frame) {
  std::string out(1, static_cast<char>(frame.code));
  put_u32(out, static_cast<uint32_t>(frame.args.size()));
  for (const auto& a : frame.args) {
    put_u32(out, static_cast<uint32_t>(a.size()));
    out += a;
  }
  return out;
}

std::optional<Frame> decode_payload(const std::string& payload) {
  if (payload.size() < 5) return {};
  Frame f;
  f.code = static_cast<uint8_t>(payload[0]);
  const uint32_t count = get_u32(payload, 1);
  size_t at = 5;
  for (uint32_t i = 0; i < count; ++i) {
    if (payload.size() - at < 4) return {};
    const uint32_t n = get_u32(payload, at);
    at += 4;
    if (payload.size() - at < n) return {};
    f.args.push_back(payload.substr(at, n));
    at += n;
  }
  if (at != payload.size()) return {};
  return f;
}

std::string Sealer::seal(const Frame& frame) {
  const std::string payload = encode_payload(frame);
  std::string out;
  put_u32(out, static_cast<uint32_t>(payload.size()));
  out += payload;
  out += auth::hmac(key_, mac_input(direction_, count_++, payload));
  return out;
}

std::optional<Frame> Unsealer::next() {
  if (broken() || buffer_.size() < 4) return {};
  const uint32_t n = get_u32(buffer_, 0);
  if (n > kMaxPayload) {
    why_ = "a frame of " + std::to_string(n) + " bytes";
    return {};
  }
  if (buffer_.size() < 4 + static_cast<size_t>(n) + kMacBytes) return {};
  const std::string payload = buffer_.substr(4, n), mac = buffer_.substr(4 + n, kMacBytes);
  buffer_.erase(0, 4 + n + kMacBytes);
  if (!auth::same_secret(mac, auth::hmac(key_, mac_input(direction_, count_, payload)))) {
    why_ = "a frame that failed its check";
    return {};
  }
  ++count_;
  auto frame = decode_payload(payload);
  if (!frame) why_ = "a malformed frame";
  return frame;
}

}  // namespace accelerate::detail::store_wire
