// The shared-memory all-reduce's arithmetic (runtime/src/shm/shm_reduce.h) against the plain
// expression it must equal bit for bit, ((s0 + s1) + s2 ...) / divisor, on values where a
// shortcut would show: subnormal results, the largest finite values, signed zeros, infinities.
// A power-of-two divisor is applied as a multiply by its reciprocal (exact); any other divisor
// must still divide.
#include "shm/shm_reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using accelerate::detail::shm_reduce;
using accelerate::detail::ShmOp;

template <typename T>
std::vector<T> inputs(unsigned seed, size_t n) {
  using L = std::numeric_limits<T>;
  const T edge[] = {
      L::denorm_min(), -L::denorm_min(), L::min(), -L::min(), T(3) * L::min(), L::max(), -L::max(), T(0), -T(0),
      L::infinity(),   -L::infinity(),   T(1),     T(-3)};
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> scale(L::min_exponent - 4, L::max_exponent - 2);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = i < sizeof(edge) / sizeof(T) ? edge[i] : static_cast<T>(std::ldexp(normal(gen), scale(gen)));
  }
  return v;
}

template <typename T>
void expect_exact(int sources, double divisor, size_t n) {
  std::vector<std::vector<T>> in;
  for (int s = 0; s < sources; ++s) in.push_back(inputs<T>(17u + static_cast<unsigned>(s), n));
  std::vector<T> expected(n);
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) {
    T sum = in[0][i];
    for (int s = 1; s < sources; ++s) sum = sum + in[s][i];
    expected[i] = divisor == 1.0 ? sum : sum / d;
  }
  std::vector<const void*> src;
  for (auto& v : in) src.push_back(v.data());
  std::vector<T> out(n);
  std::vector<void*> dst = {out.data(), in[0].data()};  // one destination is also a source
  shm_reduce(std::is_same<T, float>::value ? c10::ScalarType::Float : c10::ScalarType::Double, ShmOp::Sum, src, dst,
             static_cast<int64_t>(n), divisor);
  size_t differ = 0, first = n;
  for (size_t i = 0; i < n; ++i) {
    const bool same =
        std::memcmp(&out[i], &expected[i], sizeof(T)) == 0 || (std::isnan(out[i]) && std::isnan(expected[i]));
    if (!same && differ++ == 0) first = i;
  }
  EXPECT_EQ(differ, 0u) << sources << " sources, divisor " << divisor << ": " << differ << " of " << n
                        << " differ from the plain division, the first at " << first << " (" << out[first] << " vs "
                        << expected[first] << ")";
  EXPECT_EQ(std::memcmp(out.data(), in[0].data(), n * sizeof(T)), 0) << "the destinations differ";
}

// 5000 elements: more than one 8 KiB block of the kernel, and not a multiple of it.
TEST(ShmReduce, PowerOfTwoDivisorsEqualTheDivisionBitForBit) {
  // 2^127: its reciprocal is subnormal in float, and still exact.
  for (double divisor : {2.0, 4.0, 8.0, 1024.0, 0.5, std::ldexp(1.0, 127)}) {
    for (int sources : {2, 3}) {
      expect_exact<float>(sources, divisor, 5000);
      expect_exact<double>(sources, divisor, 5000);
    }
  }
}

TEST(ShmReduce, OtherDivisorsDivide) {
  // 2^128 is a power of two beyond float's range: in float it is infinity, and divides.
  // 2^-130 (2^-1030 in double) is in range, but its reciprocal is not: it must divide too.
  for (double divisor : {3.0, 6.0, 1.0, std::ldexp(1.0, 128), std::ldexp(1.0, -130), std::ldexp(1.0, -1030)}) {
    for (int sources : {2, 3}) {
      expect_exact<float>(sources, divisor, 5000);
      expect_exact<double>(sources, divisor, 5000);
    }
  }
}

}  // namespace
