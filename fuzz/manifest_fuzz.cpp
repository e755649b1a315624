// Fuzz target: the checkpoint manifest reader (runtime/src/checkpoint/checkpoint_fs.cpp,
// parse_manifest: read_manifest without looking at the listed files). A manifest comes from
// disk, possibly damaged or written by another version: it must be read or refused with a
// CheckpointError. Format 2 manifests end with their own hash, which random bytes never
// match; when the first byte is odd the target appends the right "end <hash>" line, so that
// the lines behind the hash check are fuzzed too.
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <accelerate/core/error.h>

#include "checkpoint/checkpoint_fs.h"

namespace ckpt = accelerate::detail::ckpt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) text += "end " + ckpt::hash_hex(XXH3_64bits(text.data(), text.size())) + "\n";
  try {
    (void)ckpt::parse_manifest(text, "/fuzz/checkpoint_0/checkpoint_manifest.txt");
  } catch (const accelerate::CheckpointError&) {
  }
  return 0;
}
