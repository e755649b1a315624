#pragma once
// The scope guards the Accelerator returns (main_process_first(), no_sync(), accumulate()).
// Included by accelerator.h; a file that only holds one needs no more than this.

namespace accelerate {

class Accelerator;

// RAII: while alive, the main process goes ahead and the others wait (in the constructor);
// at the end of the scope the main process joins the barrier that releases them.
//   { auto first = accelerator.main_process_first(); download(); }
// The destructor never throws. Left by an exception, the scope skips the barrier (the
// others learn of the failure from the launcher, or time out). If the barrier fails, the
// destructor prints the reason and the rank to stderr, and this process's next collective
// (wait_for_everyone, gather, a gradient all-reduce, ...) throws that DistributedError
// before it starts. Call done() to end the section at a point of your choice and get the
// error there.
class MainProcessFirst {
 public:
  explicit MainProcessFirst(Accelerator& acc, bool local = false);
  ~MainProcessFirst() noexcept;
  MainProcessFirst(MainProcessFirst&& other) noexcept;
  MainProcessFirst(const MainProcessFirst&) = delete;
  MainProcessFirst& operator=(const MainProcessFirst&) = delete;

  // Ends the section now: the main process joins the barrier. Throws DistributedError if
  // it fails. Afterwards (and on the other processes) the destructor does nothing.
  void done();

 private:
  Accelerator* acc_;
  bool local_;
  int uncaught_;  // std::uncaught_exceptions() when the section began
};

// RAII: gradient synchronisation for the given prepared models is skipped while alive
// (accumulation steps). Returned by no_sync() and accumulate().
class SyncGuard {
 public:
  SyncGuard(Accelerator& acc, bool sync);
  ~SyncGuard();
  SyncGuard(SyncGuard&& other) noexcept;
  SyncGuard(const SyncGuard&) = delete;
  SyncGuard& operator=(const SyncGuard&) = delete;

 private:
  Accelerator* acc_;
  bool previous_;
};

}  // namespace accelerate
