#!/usr/bin/env bash
# The runtime's and the launcher's tests under sanitizers (docs/dev/sanitizers.md, issue 32):
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer): every test the
#         asan build registers (unit, multi-process, launcher, tracking); not install.*
#         (packaging) nor fuzz.smoke (its own clang build, sanitized already, in the test command)
#   tsan  ThreadSanitizer: the tests whose code has threads of ours (gradient sync's bucket
#         all-reduce, the shared-memory worker, the launchers' link with its heartbeats, the
#         processes' store served by a launcher thread, FSDP's collectives on the shared-memory
#         worker and its gradient buffers returned to their pool from that thread)
# Each build also runs sanitizer.canary.*: a deliberate bug its sanitizers must report.
# Usage: scripts/sanitize.sh [asan|tsan]...        (both by default)
# Each build is a CMake preset (CMakePresets.json: build-asan/, build-tsan/) without the tool.
# Not part of the test command: a sanitized build and run costs more than the CI budget's
# margin (docs/dev/sanitizers.md has the measured times). Exit status: 0 only when every
# selected test passed with no sanitizer report.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
kinds=("$@"); [ ${#kinds[@]} -gt 0 ] || kinds=(asan tsan)
supp=$here/test/sanitizers
# halt_on_error / abort: a finding fails the test that caused it, with the report in its output.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
# ignore_noninstrumented_modules: what uninstrumented LibTorch and Gloo do through the C
# library (free, condition variables) is not tracked; their atomics (reference counts) are
# invisible anyway, so tracking half of their synchronisation only reports false races
# (docs/dev/sanitizers.md). Races between our own threads are still reported.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$supp/tsan.supp"
export OMP_NUM_THREADS=1
rc=0
for kind in "${kinds[@]}"; do
  case $kind in
    asan) select=(-E '^(install|fuzz)\.') ;;
    tsan) select=(-R '^(sanitizer\..*|runtime_tests|runtime_shm_tests|sync_batch_norm_2proc|token_store_tests|fsdp_tests|launcher\.(Environment|Port|Failure|Signal|Restart|Runtime))$') ;;
    *) echo "sanitize: unknown kind '$kind' (asan or tsan)" >&2; exit 2 ;;
  esac
  t0=$SECONDS
  echo "sanitize: $kind: configure and build (preset $kind)"
  mkdir -p "build-$kind"
  cmake --preset "$kind" > "build-$kind/configure.log" 2>&1 || { tail -20 "build-$kind/configure.log"; exit 1; }
  if ! cmake --build --preset "$kind" > "build-$kind/build.log" 2>&1; then
    tail -30 "build-$kind/build.log"; echo "sanitize: $kind: the build failed (build-$kind/build.log)"; rc=1; continue
  fi
  echo "sanitize: $kind: built in $((SECONDS - t0)) s; running tests"
  t1=$SECONDS
  ctest --preset "$kind" "${select[@]}" --timeout 1200 || rc=1
  echo "sanitize: $kind: tests took $((SECONDS - t1)) s (total $((SECONDS - t0)) s)"
done
exit $rc
