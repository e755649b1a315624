#pragma once
// The allocator part of the LibTorch compatibility layer (accelerate/core/detail/torch_compat.h):
// c10::Allocator's interface differs between versions. In 1.13 allocate() is const and
// there is nothing else to implement; in 2.x allocate() is not const and copy_data() must
// be implemented too. An allocator that forwards to another one is therefore written here,
// once, for every version.

#include <c10/core/Allocator.h>

#include <cstddef>

namespace accelerate {
namespace detail {
namespace compat {

// Called by the forwarding allocator with what `inner` allocated: returns the DataPtr to
// hand out (it may wrap the memory in a DataPtr of its own, with its own deleter).
using WrapAllocation = c10::DataPtr (*)(c10::DataPtr allocated, size_t nbytes);

// A new allocator (never freed: LibTorch keeps allocators for the process's lifetime) whose
// allocate(n) is wrap(inner->allocate(n), n) and whose copies are inner's. `raw_deleter` is
// what raw_deleter() returns: the deleter every DataPtr from `wrap` carries, with the data
// pointer as its context (nullptr: the raw interface is not offered).
c10::Allocator* make_forwarding_allocator(c10::Allocator* inner, WrapAllocation wrap, c10::DeleterFnPtr raw_deleter);

}  // namespace compat
}  // namespace detail
}  // namespace accelerate
