// The dispatcher observer that gathers sharded parameters on first read (param_access.h).
//
// LibTorch is built with NDEBUG, and RecordFunction has a member that exists only without
// it: this file must see the same layout as the library.
#ifndef NDEBUG
#define NDEBUG
#endif
#include "fsdp/param_access.h"

#include <accelerate/log/logging.h>
#include "fsdp/flat_param.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace accelerate {
namespace detail {
namespace param_access {
namespace {

struct Entry {
  c10::StorageImpl* storage;
  bool grad;  // the gradient shard's storage (else the full parameters')
  std::shared_ptr<FlatParam> unit;
  AccessOwner* owner;
};
using Table = std::vector<Entry>;

std::mutex g_write;                    // add / remove
std::shared_ptr<const Table> g_table;  // read with std::atomic_load (lock-free enough)
at::CallbackHandle g_handle = 0;
std::atomic<int64_t> g_observed{0};
thread_local bool t_paused = false;

const Entry* find(const Table& table, const c10::StorageImpl* storage) {
  for (const auto& e : table) {
    if (e.storage == storage) return &e;
  }
  return nullptr;
}

struct Found {
  std::vector<FlatParam*> gather, in_use;
  AccessOwner* owner = nullptr;
};

void visit(const Table& table, const at::Tensor& t, Found& found) {
  if (!t.defined() || !t.has_storage()) return;
  const Entry* e = find(table, t.storage().unsafeGetStorageImpl());
  if (e == nullptr) return;
  FlatParam* unit = e->unit.get();
  if (e->grad) {
    unit->mark_stale();
    return;
  }
  if (std::find(found.in_use.begin(), found.in_use.end(), unit) == found.in_use.end()) found.in_use.push_back(unit);
  if (unit->needs_gather(t) && std::find(found.gather.begin(), found.gather.end(), unit) == found.gather.end()) {
    found.gather.push_back(unit);
    found.owner = e->owner;
  }
}

// ATen catches and only logs what a RecordFunction callback throws, and the operator would
// then run on parameters that are not there. A gather (or the wait for a prefetch) fails when
// the processes diverged, a peer died or the timeout passed: the run cannot go on, so end the
// process with the reason (the launcher reports the exit and stops the others).
[[noreturn]] void exit_for(const std::exception& e, const at::RecordFunction& fn) {
  const Logger& log = detail::runtime_log();
  log.error(e.what(), LogScope::all_processes);
  log.critical(std::string("the operator ") + fn.name() +
                   " reads these parameters and cannot run without them: exiting with code 1",
               LogScope::all_processes);
  std::fflush(nullptr);
  std::_Exit(1);
}

void visit_inputs(const Table& table, const at::RecordFunction& fn, Found& found) {
  for (const c10::IValue& v : fn.inputs()) {
    if (v.isTensor()) {
      visit(table, v.toTensor(), found);
    } else if (v.isTensorList()) {
      const auto list = v.toTensorList();
      for (size_t i = 0; i < list.size(); ++i) visit(table, list.get(i), found);
    } else if (v.isList()) {  // e.g. index's List<optional<Tensor>>
      for (const c10::IValue& item : v.toListRef()) {
        if (item.isTensor()) visit(table, item.toTensor(), found);
      }
    }
  }
}

std::unique_ptr<at::ObserverContext> on_operator(const at::RecordFunction& fn) {
  if (t_paused) return nullptr;
  g_observed.fetch_add(1, std::memory_order_relaxed);
  const std::shared_ptr<const Table> table = std::atomic_load(&g_table);
  if (!table || table->empty()) return nullptr;
  Found found;
  try {
    visit_inputs(*table, fn, found);  // a touch of a gradient shard waits for its unit's prefetch
    // Units of several models in one operator: each owner gathers its own.
    for (FlatParam* unit : found.gather) {
      const Entry* e = find(*table, unit->param_storage());
      e->owner->on_access({unit}, found.in_use);
    }
  } catch (const std::exception& e) {
    exit_for(e, fn);
  }
  return nullptr;
}

void install(const Table& table) {
  std::atomic_store(&g_table, std::shared_ptr<const Table>(std::make_shared<Table>(table)));
  if (!table.empty() && g_handle == 0) {
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(on_operator).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  } else if (table.empty() && g_handle != 0) {
    at::removeCallback(g_handle);
    g_handle = 0;
  }
}

}  // namespace

void add(const std::shared_ptr<FlatParam>& unit, AccessOwner* owner) {
  std::lock_guard<std::mutex> lock(g_write);
  const std::shared_ptr<const Table> old = std::atomic_load(&g_table);
  Table table = old ? *old : Table{};
  table.push_back({unit->param_storage(), false, unit, owner});
  table.push_back({unit->grad_storage(), true, unit, owner});
  install(table);
}

void remove(const FlatParam* unit) {
  std::lock_guard<std::mutex> lock(g_write);
  const std::shared_ptr<const Table> old = std::atomic_load(&g_table);
  if (!old) return;
  Table table;
  for (const auto& e : *old) {
    if (e.unit.get() != unit) table.push_back(e);
  }
  install(table);
}

Pause::Pause() : previous_(t_paused) { t_paused = true; }
Pause::~Pause() { t_paused = previous_; }

int64_t observed_ops() { return g_observed.load(); }

}  // namespace param_access
}  // namespace detail
}  // namespace accelerate
