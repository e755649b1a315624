// A forwarding c10::Allocator for every LibTorch version (see torch_compat_allocator.h).
//
// The two interfaces are told apart by their declarations rather than by TORCH_VERSION:
// the change of allocate()'s constness and the arrival of copy_data() came in different 2.x
// releases, and testing the declarations themselves is right for each of them. Only the
// selected base class template is instantiated, so the other one's `override` is never
// checked against a base that lacks the function.
#include "core/torch_compat_allocator.h"

#include <type_traits>
#include <utility>

namespace accelerate {
namespace detail {
namespace compat {
namespace {

// allocate() is const (1.13, early 2.x) or not (later 2.x).
constexpr bool kConstAllocate =
    std::is_same<decltype(&c10::Allocator::allocate), c10::DataPtr (c10::Allocator::*)(size_t) const>::value;

// Allocator::copy_data exists (2.x, pure virtual) or not (1.13).
template <typename A, typename = void>
struct HasCopyData : std::false_type {};
template <typename A>
struct HasCopyData<A, std::void_t<decltype(&A::copy_data)>> : std::true_type {};

// The part of the interface every version has, with the allocation behind forward().
class ForwardingCore : public c10::Allocator {
 public:
  ForwardingCore(c10::Allocator* inner, WrapAllocation wrap, c10::DeleterFnPtr deleter)
      : inner_(inner), wrap_(wrap), deleter_(deleter) {}
  c10::DeleterFnPtr raw_deleter() const override { return deleter_; }

 protected:
  c10::DataPtr forward(size_t n) const { return wrap_(inner_->allocate(n), n); }
  c10::Allocator* inner() const { return inner_; }

 private:
  c10::Allocator* inner_;
  WrapAllocation wrap_;
  c10::DeleterFnPtr deleter_;
};

template <typename Base>
class ConstAllocate : public Base {
 public:
  using Base::Base;
  c10::DataPtr allocate(size_t n) const override { return this->forward(n); }
};

template <typename Base>
class MutableAllocate : public Base {
 public:
  using Base::Base;
  c10::DataPtr allocate(size_t n) override { return this->forward(n); }
};

template <typename Base>
class WithCopyData : public Base {
 public:
  using Base::Base;
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    this->inner()->copy_data(dest, src, count);
  }
};

using WithAllocate = std::conditional_t<kConstAllocate, ConstAllocate<ForwardingCore>, MutableAllocate<ForwardingCore>>;
using Forwarding = std::conditional_t<HasCopyData<c10::Allocator>::value, WithCopyData<WithAllocate>, WithAllocate>;

}  // namespace

c10::Allocator* make_forwarding_allocator(c10::Allocator* inner, WrapAllocation wrap, c10::DeleterFnPtr raw_deleter) {
  return new Forwarding(inner, wrap, raw_deleter);  // lives as long as the process, as LibTorch's own do
}

}  // namespace compat
}  // namespace detail
}  // namespace accelerate
