// Reduction kernels of the shared-memory all-reduce (see shm_reduce.h). Memory-bound: each
// block of the slice is read once from every source, reduced in a small buffer that stays
// in L1, divided there, and written once to every destination. The loops must be
// vectorised in every build type: runtime/CMakeLists.txt compiles this file at -O3.
#include "shm/shm_reduce.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace accelerate {
namespace detail {
namespace {

constexpr int64_t kBlockBytes = 8192;

template <typename T, typename F>
void reduce_typed(const std::vector<const void*>& src, const std::vector<void*>& dst, int64_t n, double divisor,
                  F combine) {
  constexpr int64_t kBlock = kBlockBytes / static_cast<int64_t>(sizeof(T));
  alignas(64) T acc[kBlock];
  const bool divide = divisor != 1.0 && std::is_floating_point<T>::value;
  const T d = static_cast<T>(divisor);
  // The divisor is usually the number of processes, a power of two. x / 2^k and x * 2^-k
  // round the same exact value, so they are equal bit for bit (subnormal results included),
  // and the multiply costs less: the divide took about a quarter of the kernel's time over the
  // MLP's 1.6 M gradients (results/2026-11-30-shm-reduce-O1/divide.txt).
  // Both d and its reciprocal must be in T's range: for a tiny divisor (2^-130 in float) the
  // reciprocal overflows, and x * inf is not x / d.
  int exponent = 0;
  const T reciprocal = static_cast<T>(1.0 / divisor);
  const bool by_power_of_two = divide && std::frexp(divisor, &exponent) == 0.5 && static_cast<double>(d) == divisor &&
                               std::isfinite(1.0 / divisor) && static_cast<double>(reciprocal) == 1.0 / divisor;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const T* __restrict s0 = static_cast<const T*>(src[0]) + b;
    if (src.size() == 1) {
      std::memcpy(acc, s0, m * sizeof(T));
    } else {
      const T* __restrict s1 = static_cast<const T*>(src[1]) + b;
      for (int64_t i = 0; i < m; ++i) acc[i] = combine(s0[i], s1[i]);
    }
    // Rank order, (((s0 + s1) + s2) + ...): every process computes its slice the same way.
    for (size_t s = 2; s < src.size(); ++s) {
      const T* __restrict sp = static_cast<const T*>(src[s]) + b;
      for (int64_t i = 0; i < m; ++i) acc[i] = combine(acc[i], sp[i]);
    }
    if (by_power_of_two) {
      for (int64_t i = 0; i < m; ++i) acc[i] = acc[i] * reciprocal;
    } else if (divide) {
      for (int64_t i = 0; i < m; ++i) acc[i] = acc[i] / d;
    }
    for (void* out : dst) std::memcpy(static_cast<T*>(out) + b, acc, m * sizeof(T));
  }
}

template <typename T>
void reduce_op(ShmOp op, const std::vector<const void*>& src, const std::vector<void*>& dst, int64_t n,
               double divisor) {
  switch (op) {
    case ShmOp::Sum:
      return reduce_typed<T>(src, dst, n, divisor, [](T a, T b) { return static_cast<T>(a + b); });
    case ShmOp::Max:
      return reduce_typed<T>(src, dst, n, divisor, [](T a, T b) { return std::max(a, b); });
    case ShmOp::Min:
      return reduce_typed<T>(src, dst, n, divisor, [](T a, T b) { return std::min(a, b); });
  }
}

}  // namespace

bool shm_reduce_supports(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
    case c10::ScalarType::Byte:
      return true;
    default:
      return false;
  }
}

void shm_reduce(c10::ScalarType dtype, ShmOp op, const std::vector<const void*>& src, const std::vector<void*>& dst,
                int64_t n, double divisor) {
  if (n <= 0 || src.empty()) return;
  switch (dtype) {
    case c10::ScalarType::Float:
      return reduce_op<float>(op, src, dst, n, divisor);
    case c10::ScalarType::Double:
      return reduce_op<double>(op, src, dst, n, divisor);
    case c10::ScalarType::Int:
      return reduce_op<int32_t>(op, src, dst, n, divisor);
    case c10::ScalarType::Long:
      return reduce_op<int64_t>(op, src, dst, n, divisor);
    case c10::ScalarType::Byte:
      return reduce_op<uint8_t>(op, src, dst, n, divisor);
    default:  // an invariant: callers reach here only for dtypes shm_reduce_supports()
      TORCH_CHECK(false, "accelerate: shared-memory all-reduce of ", c10::toString(dtype), " is not supported");
  }
}

}  // namespace detail
}  // namespace accelerate
