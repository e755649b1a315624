#include "tracking/tensorboard_events.h"

#include <boost/crc.hpp>

#include <cstring>

namespace accelerate {
namespace detail {
namespace tensorboard {
namespace {

// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected): Boost.CRC's parameterised CRC
// rather than a hand-written table.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

// Protocol buffer wire format: a key is (field << 3) | wire type.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void key(std::string& out, uint32_t field, Wire wire) { varint(out, (static_cast<uint64_t>(field) << 3) | wire); }

template <typename T>
void little_endian(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // x86-64 and aarch64 are little endian, as the format
  out.append(bytes, sizeof(T));
}

void bytes_field(std::string& out, uint32_t field, const std::string& bytes) {
  key(out, field, kBytes);
  varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time) {
  std::string e;
  key(e, 1, kFixed64);
  little_endian(e, wall_time);
  return e;
}

}  // namespace

uint32_t masked_crc32c(const std::string& bytes) {
  Crc32c crc;
  crc.process_bytes(bytes.data(), bytes.size());
  const uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string record(const std::string& event) {
  std::string length;
  little_endian(length, static_cast<uint64_t>(event.size()));
  std::string out = length;
  little_endian(out, masked_crc32c(length));
  out += event;
  little_endian(out, masked_crc32c(event));
  return out;
}

std::string version_event(double wall_time) {
  std::string e = event_header(wall_time);
  bytes_field(e, 3, "brain.Event:2");
  return e;
}

std::string scalars_event(const LogValues& values, int64_t step, double wall_time) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    std::string v;
    bytes_field(v, 1, tag);
    key(v, 2, kFixed32);
    little_endian(v, static_cast<float>(value));
    bytes_field(summary, 1, v);
  }
  std::string e = event_header(wall_time);
  key(e, 2, kVarint);
  varint(e, static_cast<uint64_t>(step));
  bytes_field(e, 5, summary);
  return e;
}

}  // namespace tensorboard
}  // namespace detail
}  // namespace accelerate
