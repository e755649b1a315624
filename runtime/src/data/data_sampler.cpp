#include <accelerate/data/data_sampler.h>

#include <accelerate/core/error.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>

namespace accelerate {

namespace {
// Uniform in [0, n) without modulo bias (rejects the low 2^64 mod n values).
uint64_t bounded(std::mt19937_64& gen, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;
  uint64_t x;
  do {
    x = gen();
  } while (x < threshold);
  return x % n;
}
}  // namespace

std::vector<size_t> SeededRandomSampler::permutation(size_t size, uint64_t seed, uint64_t epoch) {
  std::vector<size_t> order(size);
  for (size_t i = 0; i < size; ++i) order[i] = i;
  // Distinct, well-mixed streams per epoch for the same seed.
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(epoch),
                    static_cast<uint32_t>(epoch >> 32)};
  std::mt19937_64 gen(seq);
  for (size_t i = size; i > 1; --i) std::swap(order[i - 1], order[bounded(gen, i)]);
  return order;
}

SeededRandomSampler::SeededRandomSampler(size_t size, uint64_t seed) : size_(size), seed_(seed) {
  order_ = permutation(size_, seed_, 0);
}

void SeededRandomSampler::reset(c10::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  epoch_ = next_epoch_++;
  order_ = permutation(size_, seed_, epoch_);
  position_ = 0;
}

c10::optional<std::vector<size_t>> SeededRandomSampler::next(size_t batch_size) {
  if (position_ >= order_.size()) return c10::nullopt;
  const size_t end = std::min(order_.size(), position_ + batch_size);
  std::vector<size_t> batch(order_.begin() + position_, order_.begin() + end);
  position_ = end;
  return batch;
}

void SeededRandomSampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("size", torch::tensor(static_cast<int64_t>(size_)), /*is_buffer=*/true);
  archive.write("seed", torch::tensor(static_cast<int64_t>(seed_)), true);
  archive.write("epoch", torch::tensor(static_cast<int64_t>(epoch_)), true);
  archive.write("position", torch::tensor(static_cast<int64_t>(position_)), true);
}

void SeededRandomSampler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor t = torch::empty({}, torch::kInt64);
  archive.read("size", t, true);
  size_ = static_cast<size_t>(t.item<int64_t>());
  archive.read("seed", t, true);
  seed_ = static_cast<uint64_t>(t.item<int64_t>());
  archive.read("epoch", t, true);
  epoch_ = static_cast<uint64_t>(t.item<int64_t>());
  next_epoch_ = epoch_ + 1;
  archive.read("position", t, true);
  order_ = permutation(size_, seed_, epoch_);
  position_ = std::min(order_.size(), static_cast<size_t>(t.item<int64_t>()));
}

// ---- GeneratorRandomSampler -------------------------------------------------------------

GeneratorRandomSampler::GeneratorRandomSampler(size_t size, Agree agree)
    : size_(size), agree_(std::move(agree)), order_(torch::arange(static_cast<int64_t>(size), torch::kInt64)) {}

void GeneratorRandomSampler::resume_with(std::vector<int64_t> order) {
  if (order.size() != size_) {
    throw CheckpointError("accelerate: load_state: the checkpoint's data order has " + std::to_string(order.size()) +
                          " indices but this loader's RandomSampler has " + std::to_string(size_) +
                          ": resume with the data set and sampler size the checkpoint was saved with");
  }
  pending_ = std::move(order);
}

void GeneratorRandomSampler::reset(c10::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  position_ = 0;
  if (!pending_.empty()) {
    // The generator was restored to where it stood after this epoch's draw: do not draw.
    order_ = torch::tensor(pending_, torch::kInt64);
    pending_.clear();
    return;
  }
  // As LibTorch's RandomSampler::reset: one randperm of the size from the default generator.
  order_ = torch::randperm(static_cast<int64_t>(size_), torch::kInt64);
  if (agree_) agree_(order_);
  order_ = order_.to(torch::kCPU, torch::kInt64).contiguous();
}

c10::optional<std::vector<size_t>> GeneratorRandomSampler::next(size_t batch_size) {
  const size_t n = static_cast<size_t>(order_.numel());
  if (position_ >= n) return c10::nullopt;
  const size_t end = std::min(n, position_ + batch_size);
  const int64_t* data = order_.data_ptr<int64_t>();
  std::vector<size_t> batch(data + position_, data + end);
  position_ = end;
  return batch;
}

// The same keys as LibTorch's RandomSampler, so an archive of one loads into the other.
void GeneratorRandomSampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("index", torch::tensor(static_cast<int64_t>(position_), torch::kInt64), /*is_buffer=*/true);
  archive.write("indices", order_, /*is_buffer=*/true);
}

void GeneratorRandomSampler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor index = torch::empty({}, torch::kInt64);
  archive.read("index", index, /*is_buffer=*/true);
  archive.read("indices", order_, /*is_buffer=*/true);
  order_ = order_.to(torch::kInt64).contiguous();
  size_ = static_cast<size_t>(order_.numel());
  position_ = std::min(size_, static_cast<size_t>(index.item<int64_t>()));
}

}  // namespace accelerate
