// Fuzz target: the processes' store wire format (runtime/src/core/store_wire.cpp), what a
// peer that reaches --main_process_port sends machine 0's launcher when the job has a token.
// Byte 0 picks the part: 0, the handshake line a stranger sends first (it must never pass as
// a proof); 1, a frame's payload as decoded after its MAC (decoded means it encodes back to
// the same bytes); 2, frames made of the input, sealed and cut into pieces of byte 1's size
// (they come back whole and equal), then the same bytes with one byte flipped (no frame
// comes back that was not sent).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/store_wire.h"

namespace wire = accelerate::detail::store_wire;

namespace {

const std::string kKey(64, 'k');

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "store wire: %s\n", what);
  std::abort();
}

wire::Frame frame_of(const std::string& bytes) {
  wire::Frame f;
  f.code = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]);
  std::string arg;
  for (size_t i = 1; i < bytes.size(); ++i) {
    if (bytes[i] == '\0') {
      f.args.push_back(arg);
      arg.clear();
    } else {
      arg += bytes[i];
    }
  }
  f.args.push_back(arg);
  return f;
}

// The frames `unsealer` gives for `bytes` fed in pieces of `chunk`.
std::vector<wire::Frame> unseal(wire::Unsealer& unsealer, const std::string& bytes, size_t chunk) {
  std::vector<wire::Frame> out;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    unsealer.feed(bytes.data() + at, std::min(chunk, bytes.size() - at));
    while (auto f = unsealer.next()) out.push_back(*f);
  }
  return out;
}

void sealed_round_trip(const std::string& rest, size_t chunk) {
  const wire::Frame sent = frame_of(rest);
  wire::Sealer sealer(kKey, "c>s");
  const std::string bytes = sealer.seal(sent) + sealer.seal(sent);
  wire::Unsealer good(kKey, "c>s");
  const auto frames = unseal(good, bytes, chunk);
  check(!good.broken() && frames.size() == 2, "two sealed frames did not come back");
  for (const auto& f : frames) check(f.code == sent.code && f.args == sent.args, "a sealed frame changed");
  std::string flipped = bytes;
  flipped[(rest.size() * 7 + chunk) % flipped.size()] ^= static_cast<char>(1 + chunk % 255);
  wire::Unsealer bad(kKey, "c>s");
  const auto after = unseal(bad, flipped, chunk);
  // A flipped byte in the second frame leaves the first intact; nothing else may come back.
  check(after.size() <= 1, "a frame with a flipped byte was accepted");
  for (const auto& f : after) check(f.code == sent.code && f.args == sent.args, "an altered frame came back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 3) {
    case 0: {
      const std::string challenge(2 * wire::kNonceBytes, 'c');
      check(!wire::check_proof(kKey, challenge, rest), "a stranger's line passed as a proof");
      check(!wire::check_ok(kKey, challenge, rest), "a stranger's line passed as the store's proof");
      if (auto c = wire::parse_challenge(rest)) check(c->size() == 2 * wire::kNonceBytes, "a short challenge");
      break;
    }
    case 1:
      if (auto f = wire::decode_payload(rest)) check(wire::encode_payload(*f) == rest, "decode/encode differ");
      break;
    default:
      sealed_round_trip(rest, data[1] + 1u);
  }
  return 0;
}
