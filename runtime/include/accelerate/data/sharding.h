#pragma once
// Deprecated: the old name of <accelerate/data_split.h> ("shard" now names FSDP's model side
// only). Kept, with the old names below, so that code written against it still compiles.
#include <accelerate/data/data_split.h>

namespace accelerate {

using ShardingOptions [[deprecated("use accelerate::DataSplitOptions (<accelerate/data_split.h>)")]] = DataSplitOptions;
template <typename T>
using BatchSharder [[deprecated("use accelerate::BatchSplitter (<accelerate/data_split.h>)")]] = BatchSplitter<T>;

[[deprecated("use accelerate::validate_data_split")]] inline void validate_sharding(const DataSplitOptions& options) {
  validate_data_split(options);
}
[[deprecated("use accelerate::split_num_batches")]] inline size_t sharded_num_batches(const DataSplitOptions& options,
                                                                                      size_t num_items) {
  return split_num_batches(options, num_items);
}
[[deprecated("use accelerate::split_remainder")]] inline int64_t sharded_remainder(const DataSplitOptions& options,
                                                                                   size_t num_items) {
  return split_remainder(options, num_items);
}

}  // namespace accelerate
