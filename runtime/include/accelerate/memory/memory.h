#pragma once
// Counted memory: the bytes the runtime and LibTorch hold for this process, counted where
// they are allocated, for tests and benchmarks that compare what two configurations hold
// (docs/runtime-api.md, "Counted memory"). The resident set size (ru_maxrss) follows
// glibc's heap and the kernel's page accounting as much as the program, and moves by a few
// percent from run to run; these counts do not.
//
// #include <accelerate/memory/memory.h> (not part of accelerate.h: tests and benchmarks use it).
// Off unless ACCELERATE_MEMORY_STATS=1 is in the environment when libaccelerate is loaded
// (the count must start before the program's first tensor, so an option given to the
// Accelerator would come too late). When on:
//   - every CPU tensor storage is counted, from its allocation to its free: LibTorch's CPU
//     allocator is wrapped (c10::SetCPUAllocator) by one that delegates to it;
//   - so is this process's share of the runtime's shared memory (the gradient buckets of
//     data parallel training and the collectives' staging area live there, outside the
//     allocator): each segment's size divided by the processes of the host, taken when the
//     runtime maps segments (Accelerator construction, prepare()) and at exit;
//   - every process that constructed an Accelerator prints one line to stderr at exit:
//     `accelerate: memory rank=R peak_bytes=P current_bytes=C shared_bytes=S`.
// Not counted: memory outside tensors (LibTorch's and Gloo's own structures, the autograd
// graph's nodes, std containers), CUDA memory (see the caching allocator's own statistics),
// and the allocator's and kernel's overhead (what RSS adds).

#include <cstdint>

namespace accelerate {
namespace memory {

// Whether counting is on (ACCELERATE_MEMORY_STATS=1 when the library was loaded).
bool enabled();
// Bytes held now, and the most held at any moment since start or the last reset_peak().
// Both 0 when counting is off.
int64_t current_bytes();
int64_t peak_bytes();
// Starts a new peak from what is held now (e.g. after building the model, to measure a
// training step alone).
void reset_peak();

}  // namespace memory
}  // namespace accelerate
