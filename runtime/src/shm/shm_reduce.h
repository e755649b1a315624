#pragma once
// The arithmetic of the shared-memory all-reduce: one process's slice of every process's
// buffer, reduced in rank order (so the result does not depend on which process computes
// it) and written to one or more destinations, with the averaging division fused in.

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

namespace accelerate {
namespace detail {

enum class ShmOp : uint8_t { Sum, Max, Min };

// dst[d][i] = (src[0][i] op src[1][i] op ... ) / divisor, for i < n and every d. Sources
// and destinations may be the same memory (each block is read whole before it is written).
// `divisor` 1 divides nothing; only floating-point types divide.
void shm_reduce(c10::ScalarType dtype, ShmOp op, const std::vector<const void*>& src, const std::vector<void*>& dst,
                int64_t n, double divisor);

// Types and operations shm_reduce handles (others go through Gloo).
bool shm_reduce_supports(c10::ScalarType dtype);

}  // namespace detail
}  // namespace accelerate
