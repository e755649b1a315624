#pragma once
// The byte form of the items Accelerator::gather_object carries: a std::string as itself, a
// trivially copyable value as its bytes (the processes of a job run the same binary on the
// same kind of machine, so layouts agree). A list is each item prefixed by its length, so
// strings of any content (NUL bytes included) round-trip.

#include <accelerate/core/error.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace accelerate {
namespace detail {

template <typename T>
struct is_gatherable_object
    : std::integral_constant<bool, std::is_same<T, std::string>::value || std::is_trivially_copyable<T>::value> {};

template <typename T>
void append_object(std::string& out, const T& item) {
  static_assert(is_gatherable_object<T>::value,
                "accelerate::Accelerator::gather_object: items must be std::string or trivially copyable "
                "(serialise other types to a std::string first, e.g. with torch::serialize::OutputArchive)");
  const char* data;
  uint64_t size;
  if constexpr (std::is_same<T, std::string>::value) {
    data = item.data();
    size = item.size();
  } else {
    data = reinterpret_cast<const char*>(&item);
    size = sizeof(T);
  }
  out.append(reinterpret_cast<const char*>(&size), sizeof(size));
  out.append(data, size);
}

template <typename T>
std::string objects_to_bytes(const std::vector<T>& items) {
  std::string out;
  for (const T& item : items) append_object(out, item);
  return out;
}

// Appends the items of `bytes` (written by objects_to_bytes<T>) to `out`.
template <typename T>
void objects_from_bytes(const std::string& bytes, std::vector<T>& out) {
  size_t at = 0;
  while (at < bytes.size()) {
    uint64_t size = 0;
    if (bytes.size() - at < sizeof(size)) break;
    std::memcpy(&size, bytes.data() + at, sizeof(size));
    at += sizeof(size);
    if (size > bytes.size() - at) {
      throw Error(ErrorCode::Distributed, "accelerate: gather_object received a truncated item (" +
                                              std::to_string(size) + " bytes announced, " +
                                              std::to_string(bytes.size() - at) + " left)");
    }
    if (!std::is_same<T, std::string>::value && size != sizeof(T)) {
      throw Error(ErrorCode::Distributed, "accelerate: gather_object received an item of " + std::to_string(size) +
                                              " bytes where " + std::to_string(sizeof(T)) +
                                              " were expected: do all processes pass the same type?");
    }
    if constexpr (std::is_same<T, std::string>::value) {
      out.emplace_back(bytes.data() + at, size);
    } else {
      T item;
      std::memcpy(&item, bytes.data() + at, sizeof(T));
      out.push_back(item);
    }
    at += size;
  }
  if (at != bytes.size()) {
    throw Error(ErrorCode::Distributed, "accelerate: gather_object received a truncated item");
  }
}

}  // namespace detail
}  // namespace accelerate
