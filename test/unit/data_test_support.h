#pragma once
// The expected per-process batches of a sequential sampler over 0..N-1, from the pure
// sharding core: what every loader pipeline (single process or real multi-process) must
// reproduce. Shared by the data loader test files.
#include <accelerate/data/data_split.h>

#include <c10/util/Optional.h>

#include <cstdint>
#include <vector>

namespace accelerate_test {

using Batches = std::vector<std::vector<size_t>>;

inline Batches sequential_shards(size_t N, size_t B, int64_t P, int64_t r, bool drop, bool split, bool even) {
  accelerate::BatchSplitter<size_t> s(accelerate::DataSplitOptions()
                                          .num_processes(P)
                                          .process_index(r)
                                          .batch_size(B)
                                          .drop_last(drop)
                                          .split_batches(split)
                                          .even_batches(even));
  size_t pos = 0;
  auto pull = [&]() -> c10::optional<std::vector<size_t>> {
    if (pos >= N) return c10::nullopt;
    std::vector<size_t> b;
    for (; b.size() < B && pos < N; ++pos) b.push_back(pos);
    return b;
  };
  Batches out;
  while (auto b = s.next(pull)) out.push_back(*b);
  return out;
}

}  // namespace accelerate_test
