#pragma once
// Sharded parameters are gathered just before the first operator that reads them.
//
// LibTorch modules have no forward hooks and user code calls submodules directly, so the
// runtime watches the dispatcher instead: a RecordFunction callback (ATen's profiler hook,
// run before every operator with its inputs) looks up each input's storage. A storage of
// a unit's full parameters whose contents are freed or stale asks the unit's owner to
// gather it before the operator runs; this covers forward code and the backward formulas
// that read saved views of a weight alike. A storage of a unit's gradient shard, touched
// by anything (clipping, optimizer.step(), zero_grad), marks the unit stale: the optimizer
// may be about to change the shard, and the full parameters must then be gathered again
// before their next use. See docs/fsdp.md ("Design").
//
// The callback is installed only while sharded units exist (plain data parallel pays
// nothing). Its table is immutable and swapped atomically, so the per-operator cost is one
// thread-local flag, one atomic load and a few pointer comparisons per tensor input.

#include <c10/core/StorageImpl.h>

#include <memory>
#include <vector>

namespace accelerate {
namespace detail {

class FlatParam;

// Owns units and decides what to gather and free when an operator needs some (ShardedModel).
class AccessOwner {
 public:
  virtual ~AccessOwner() = default;
  // `gather`: units the operator reads that are freed or stale; `in_use`: every unit it reads
  // (they must stay gathered while it runs).
  virtual void on_access(const std::vector<FlatParam*>& gather, const std::vector<FlatParam*>& in_use) = 0;
};

namespace param_access {

// A unit's full-parameter storage (reads may need a gather) and its gradient-shard storage
// (any touch marks the unit stale). `owner` must outlive the registration.
void add(const std::shared_ptr<FlatParam>& unit, AccessOwner* owner);
void remove(const FlatParam* unit);

// While alive on a thread, operators on that thread trigger nothing: the runtime's own
// copies and communication into the units' buffers.
class Pause {
 public:
  Pause();
  ~Pause();
  Pause(const Pause&) = delete;
  Pause& operator=(const Pause&) = delete;

 private:
  bool previous_;
};

// Operators seen by the callback since the process started (tests, benchmarks).
int64_t observed_ops();

}  // namespace param_access
}  // namespace detail
}  // namespace accelerate
