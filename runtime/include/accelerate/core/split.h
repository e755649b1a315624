#pragma once
// A process's share of an index range, for code that batches by hand (slicing whole-dataset
// tensors) instead of using a prepared data loader: accel-migrate points such loops here.

#include <accelerate/core/error.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace accelerate {

// The contiguous part [first, last) of [begin, end) that process `index` of `count` owns.
// Shares cover the range exactly once, in process order, and differ in size by at most one
// (the first (end - begin) % count processes get one more), like torch.tensor_split.
inline std::pair<int64_t, int64_t> split_range(int64_t begin, int64_t end, int64_t index, int64_t count) {
  if (count < 1 || index < 0 || index >= count) {
    throw Error(ErrorCode::InvalidArgument, "accelerate::split_range: process " + std::to_string(index) + " of " +
                                                std::to_string(count) +
                                                " is out of range; count must be >= 1 and index in [0, count)");
  }
  if (end < begin) end = begin;
  const int64_t n = end - begin, base = n / count, extra = n % count;
  const int64_t first = begin + index * base + (index < extra ? index : extra);
  return {first, first + base + (index < extra ? 1 : 0)};
}

}  // namespace accelerate
