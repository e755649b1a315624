#include <accelerate/data/data_split.h>

#include <accelerate/core/error.h>

#include <string>

namespace accelerate {

void validate_data_split(const DataSplitOptions& o) {
  const std::string P = std::to_string(o.num_processes());
  if (o.num_processes() < 1)
    throw Error(ErrorCode::Config, "accelerate: a data split needs num_processes >= 1, got " + P);
  if (o.process_index() < 0 || o.process_index() >= o.num_processes()) {
    throw Error(ErrorCode::Config,
                "accelerate: process_index " + std::to_string(o.process_index()) + " is outside [0, " + P + ")");
  }
  if (o.batch_size() < 1) throw Error(ErrorCode::Config, "accelerate: a prepared data loader needs batch_size >= 1");
  if (o.split_batches() && o.batch_size() % static_cast<size_t>(o.num_processes()) != 0) {
    throw Error(ErrorCode::Config, "accelerate: split_batches needs the batch size (" + std::to_string(o.batch_size()) +
                                       ") to be a multiple of the number of processes (" + P +
                                       "); choose a batch size divisible by " + P + " or turn split_batches off");
  }
}

size_t split_num_batches(const DataSplitOptions& o, size_t n) {
  validate_data_split(o);
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

int64_t split_remainder(const DataSplitOptions& o, size_t n) {
  validate_data_split(o);
  if (o.num_processes() == 1 || o.drop_last() || !o.even_batches() || n == 0) return -1;
  const size_t round = o.split_batches() ? o.batch_size() : o.batch_size() * static_cast<size_t>(o.num_processes());
  const size_t r = n % round;
  return r == 0 ? -1 : static_cast<int64_t>(r);
}

}  // namespace accelerate
