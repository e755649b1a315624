#include <accelerate/sharding.h>

#include <c10/util/Exception.h>

namespace accelerate {

void validate_sharding(const ShardingOptions& o) {
  TORCH_CHECK(o.num_processes() >= 1, "accelerate: sharding needs num_processes >= 1, got ", o.num_processes());
  TORCH_CHECK(o.process_index() >= 0 && o.process_index() < o.num_processes(), "accelerate: process_index ",
              o.process_index(), " is outside [0, ", o.num_processes(), ")");
  TORCH_CHECK(o.batch_size() >= 1, "accelerate: a prepared data loader needs batch_size >= 1");
  TORCH_CHECK(!o.split_batches() || o.batch_size() % static_cast<size_t>(o.num_processes()) == 0,
              "accelerate: split_batches needs the batch size (", o.batch_size(),
              ") to be a multiple of the number of processes (", o.num_processes(),
              "); choose a batch size divisible by ", o.num_processes(), " or turn split_batches off");
}

size_t sharded_num_batches(const ShardingOptions& o, size_t n) {
  validate_sharding(o);
  const size_t B = o.batch_size();
  const size_t P = static_cast<size_t>(o.num_processes());
  const size_t rank = static_cast<size_t>(o.process_index());
  const size_t global = o.drop_last() ? n / B : (n + B - 1) / B;
  if (o.split_batches()) {
    const size_t tail = n % B;
    // Without padding, a short last batch reaches only the processes whose slice starts in it.
    if (!o.drop_last() && !o.even_batches() && tail != 0 && rank * (B / P) >= tail) return global - 1;
    return global;
  }
  if (global % P == 0 || o.drop_last()) return global / P;
  if (o.even_batches()) return global / P + 1;
  return global / P + (rank < global % P ? 1 : 0);
}

int64_t sharded_remainder(const ShardingOptions& o, size_t n) {
  validate_sharding(o);
  if (o.num_processes() == 1 || o.drop_last() || !o.even_batches() || n == 0) return -1;
  const size_t round = o.split_batches() ? o.batch_size() : o.batch_size() * static_cast<size_t>(o.num_processes());
  const size_t r = n % round;
  return r == 0 ? -1 : static_cast<int64_t>(r);
}

}  // namespace accelerate
