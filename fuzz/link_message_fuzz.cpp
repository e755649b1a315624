// Fuzz target: the launchers' link decoder (launcher/link/link_message.cpp): the
// bytes any peer that reaches --main_process_port + 1 can send, cut into lines in chunks as
// recv() returns them, each line parsed as a message. Byte 0 sets the chunk size, byte 1
// how many times the rest is sent (so that inputs within libFuzzer's default length reach
// the line limit). Checked besides crashes: no byte is lost or invented, and the memory held
// for an unfinished line stays under the limit.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "link/link_message.h"

using accelerate::launcher::LineDecoder;
using accelerate::launcher::parse_message;

namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "link decoder: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t chunk = data[0] + 1u;
  const char* bytes = reinterpret_cast<const char*>(data) + 2;
  const size_t n = size - 2;
  // Enough to pass the line limit once, in at most 8192 chunks: each run stays fast.
  const size_t most = std::min(2 * LineDecoder::kMaxLineBytes, 8192 * chunk);
  const size_t repeats = std::min<size_t>(data[1] + 1u, 1 + most / std::max<size_t>(n, 1));
  LineDecoder decoder;
  size_t fed = 0, decoded = 0;
  for (size_t r = 0; r < repeats && !decoder.overflowed(); ++r) {
    for (size_t at = 0; at < n; at += chunk) {
      const size_t len = std::min(chunk, n - at);
      fed += len;
      for (const auto& line : decoder.feed(bytes + at, len)) {
        decoded += line.size() + 1;
        if (r > 0) continue;  // the repeats are for the line limit: their lines were parsed once
        const auto msg = parse_message(line);
        for (const auto& field : msg.fields) (void)msg.number(field.first);
      }
      check(decoder.buffered() <= LineDecoder::kMaxLineBytes, "holds more than a line's limit");
    }
  }
  check(decoder.overflowed() || decoded + decoder.buffered() == fed, "bytes lost or invented");
  return 0;
}
