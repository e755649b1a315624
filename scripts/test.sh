#!/usr/bin/env bash
# The test command: installs what the project needs, builds everything from scratch and
# runs every test, on both supported platforms:
#   debian12  this machine: Debian 12, LibTorch 1.13, LLVM 16           (./build)
#   debian13  a cached Debian 13 root (scripts/debian13.sh): LibTorch 2.6, LLVM 19
#             (./build-debian13), made on first use (about 8 minutes) outside the clone
# On debian12, scripts/lint.sh then checks the project's own format and clang-tidy findings.
# A failure on either platform fails the command; both always run, and a summary of
# both ends the output: a line per platform, the time of each stage against its budget
# (test/expected/budgets.txt), every skipped test with its reason, the slowest tests.
# It also fails when (docs/dev/test-command.md):
#   - the registered ctest names differ from test/expected/tests-PLATFORM.txt (a test
#     family turned off because a dependency is missing);
#   - a test or a case inside one is skipped and test/expected/skips-PLATFORM.txt does not
#     allow it;
#   - the build's output has a compiler or linker warning (Debian 12 is built by GCC,
#     Debian 13 by clang 19: CMakePresets.json);
#   - a stage takes longer than its budget.
#   bash scripts/test.sh                       # both platforms
#   bash scripts/test.sh --platform debian12   # one of them
#   ACCEL_TEST_REGEX=lit bash scripts/test.sh  # only tests whose name matches
#   bash scripts/test.sh --list-tests          # configure, rewrite test/expected/tests-*.txt
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
platforms=(debian12 debian13)
here=0
list_only=0
only=all
while [ $# -gt 0 ]; do
  case "$1" in
    --platform) platforms=("$2"); shift 2 ;;
    --here) here=1; shift ;;   # used inside the Debian 13 root: this platform only
    --only) only=$2; shift 2 ;;  # with --here: build (configure + build) or tests (the rest)
    --list-tests) list_only=1; shift ;;
    *) echo "test.sh: unknown argument '$1' (see the header of scripts/test.sh)" >&2; exit 2 ;;
  esac
done

stage() { printf '\n\033[1m== [%s +%ss] %s\033[0m\n' "${platform:-}" "$((SECONDS - start))" "$*"; }

# Appends "PLATFORM STAGE SECONDS" to the stage file $times (a local of the caller: bash
# scopes locals dynamically), for scripts/ci/stage_times.py's table and budget check.
took() { echo "$platform $1 $(($SECONDS - $2))" >> "$times"; }

# Two tests at a time: the end-to-end tests (label "parallel") leave a core idle in their
# single-threaded steps (tool runs, one-file compiles, 2-process runs waiting on each other)
# and run in pairs; every other test runs alone (RUN_SERIAL, cmake/AccelTests.cmake), so
# no test with a time limit, heartbeat or benchmark figure shares the machine with another.
ctest_jobs=${ACCEL_CTEST_JOBS:-2}

# glibc's malloc on transparent huge pages for every process the command starts (compilers,
# clang-tidy, accel-migrate, the test programs; scripts/debian13.sh passes it into the root):
# one page-table entry per 2 MiB instead of per 4 KiB cuts clang's minor page faults ~6x and
# its CPU time by 13-35 % (clang 16/19, clang-tidy, the tool, a LibTorch program; GCC allocates
# with its own mmap and is unchanged: results/2026-11-30-malloc-hugetlb.txt). lit's tests do
# not get it (lit clears their environment; passed on, it saved nothing there: same file).
# Only where the kernel's THP mode is madvise or always; it changes no result (allocation,
# not arithmetic).
case ",${GLIBC_TUNABLES:-}," in
  *glibc.malloc.hugetlb=*) ;;  # the caller chose
  *) export GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1 ;;
esac

# Runs ctest with everything the checks need kept in $bdir: the console log, and a JUnit
# file with each test's status, time and whole output (ctest keeps only 1 KiB of a passed
# test's output by default; the skips inside tests are read from it). lit names the tests
# it did not run only when asked (LIT_OPTS).
run_ctest() {
  local preset=$1 bdir=$2
  rm -f "$bdir/ctest-junit.xml"
  OMP_NUM_THREADS=1 LIT_OPTS="${LIT_OPTS:-} --show-unsupported --show-skipped --show-excluded" \
    ctest --preset "$preset" ${ACCEL_TEST_REGEX:+-R "$ACCEL_TEST_REGEX"} --timeout 900 -j "$ctest_jobs" \
    --output-junit "$PWD/$bdir/ctest-junit.xml" --test-output-size-passed 33554432 \
    2>&1 | tee "$bdir/ctest.log"
  return "${PIPESTATUS[0]}"
}

# Builds this machine's platform with CMake preset $1 in build tree $2 (the first half of
# run_here; the Debian 13 build runs it alone, beside the Debian 12 tests). Clears the
# tree's earlier results, so that they cannot stand in for this run's.
build_here() {
  local preset=$1 bdir=$2 t
  local summary=$bdir/test-summary.txt times=$bdir/stage-times.txt
  mkdir -p "$bdir"; rm -f "$summary" "$times" "$bdir/test-report.txt"
  stage "configure (cmake --preset $preset)"
  t=$SECONDS
  bash scripts/configure.sh "$preset" > "$bdir/configure.log" 2>&1 \
    || { cat "$bdir/configure.log"; echo "$platform: FAILED to configure" > "$summary"; took configure $t; return 1; }
  took configure $t
  # What configure turned off (a missing dependency) is a warning: show it with the parts.
  grep -E '^-- accelerate|^CMake Warning|^  accelerate:' "$bdir/configure.log" || true
  stage "build ($(nproc) cores; a cold build takes about 10 minutes on 2 cores)"
  t=$SECONDS
  # Kept for the checks: the build must have no compiler warning (scripts/ci/test_report.py).
  cmake --build --preset "$preset" 2>&1 | tee "$bdir/build.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "$platform: FAILED to build" > "$summary"; took build $t; return 1; }
  took build $t
}

# Tests this machine's platform, built by build_here in tree $2 (preset $1); writes the
# summary line to $2/test-summary.txt, the checks of the run (test list, skips, slowest
# tests) to $2/test-report.txt and the stage times to $2/stage-times.txt.
test_here() {
  local preset=$1 bdir=$2 t rc=0
  local summary=$bdir/test-summary.txt times=$bdir/stage-times.txt
  start_lint "$bdir"
  stage "test (ctest; the end-to-end tests take a few minutes each)"
  t=$SECONDS
  run_ctest "$preset" "$bdir" || rc=1
  local counts built
  counts=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$bdir/ctest.log" | tail -1)
  built=$(awk '$2 == "build" {print $3}' "$times" | tail -1)
  {
    printf '%s: %s (build %s s, tests %d s)\n' "$platform" "${counts:-no test summary}" "${built:-?}" \
      "$((SECONDS - t))"
    sed -n '/The following tests FAILED/,$p' "$bdir/ctest.log" | grep -E '^\s+[0-9]+ - ' || true
  } > "$summary"
  stage "checks (test list, skips, compiler warnings, slowest tests: scripts/ci/test_report.py)"
  python3 scripts/ci/test_report.py check --platform "$platform" --build "$bdir" \
    ${ACCEL_TEST_REGEX:+--regex "$ACCEL_TEST_REGEX"} --out "$bdir/test-report.txt" \
    || { rc=1; echo "$platform: checks FAILED (test list, skips, results or compiler warnings; see below)" >> "$summary"; }
  took tests $t
  [ "$rc" -eq 0 ]
}

run_here() { build_here "$@" && test_here "$@"; }

# The project's own style (docs/dev/style.md), once, on this machine's platform. clang-tidy
# (448 s of CPU cold on the CI kind of machine, unity units whole) runs beside the tests at idle priority: it takes only the CPU the tests
# leave (they wait on processes, sockets and single-threaded steps much of the time), which
# saved ~300 s of a cold run (docs/dev/test-command.md); its lines are shown after the tests.
start_lint() {
  local bdir=$1
  [ "$platform" = debian12 ] || return 0
  [ -z "${ACCEL_TEST_REGEX:-}" ] || [[ lint =~ $ACCEL_TEST_REGEX ]] || return 0
  local idle=(nice -n 19)
  chrt --idle 0 true 2> /dev/null && idle=(chrt --idle 0 nice -n 19)
  rm -f "$bdir/lint.seconds" "$bdir/lint.cpu"
  # Its CPU seconds too (bash's `times`: the subshell's children, i.e. the lint): its wall
  # time says only how long it waited for idle CPU, its CPU time what it costs the run.
  ( s=$SECONDS; "${idle[@]}" bash scripts/lint.sh "$bdir" > "$bdir/lint.log" 2>&1; rc=$?
    echo $((SECONDS - s)) > "$bdir/lint.seconds"
    times > "$bdir/lint.times"  # not in a pipe: a pipe's subshell has no children
    cpu_seconds "$bdir/lint.times" > "$bdir/lint.cpu"
    exit $rc ) &
  lint_pid=$! lint_bdir=$bdir lint_t=$SECONDS
}

# CPU seconds (user + system) of the children in bash's `times` output, file $1.
cpu_seconds() { sed -n 2p "$1" | tr 'ms' '  ' | awk '{printf "%.0f\n", $1 * 60 + $2 + $3 * 60 + $4}'; }

# Waits for the lint started by run_here (none: nothing to do) and reports it under the
# platform that started it. It is waited for only after every platform's tests: at idle
# priority it takes the CPU the Debian 12 tests, the Debian 13 build and tests leave, and
# waiting for it before the next platform would put its tail on the critical path.
finish_lint() {
  [ -n "$lint_pid" ] || return 0
  local platform=debian12 lint_rc=0
  stage "lint (scripts/lint.sh: clang-format, clang-tidy; started with the Debian 12 tests, at idle priority)"
  wait "$lint_pid" || lint_rc=$?
  cat "$lint_bdir/lint.log"
  if [ "$lint_rc" -ne 0 ]; then
    echo "$platform: lint FAILED (scripts/lint.sh $lint_bdir)" >> "$lint_bdir/test-summary.txt"
  fi
  # Its own wall time (it may end before the tests do), not the wait for it.
  echo "$platform lint $(cat "$lint_bdir/lint.seconds" 2> /dev/null || echo $((SECONDS - lint_t)))" \
    >> "$lint_bdir/stage-times.txt"
  [ -s "$lint_bdir/lint.cpu" ] && echo "$platform lint-cpu $(cat "$lint_bdir/lint.cpu")" >> "$lint_bdir/stage-times.txt"
  lint_pid=""
  [ "$lint_rc" -eq 0 ]
}
lint_pid="" lint_bdir="" lint_t=0

# --list-tests: configures this machine's platform and writes its registered ctest names
# to test/expected/tests-PLATFORM.txt (the header comment is kept; the change is printed).
list_here() {
  local preset=$1 bdir=$2
  mkdir -p "$bdir"
  bash scripts/configure.sh "$preset" > "$bdir/configure.log" 2>&1 \
    || { cat "$bdir/configure.log"; echo "$platform: FAILED to configure"; return 1; }
  python3 scripts/ci/test_report.py list --build "$bdir" --write "test/expected/tests-$platform.txt"
}

if [ "$here" -eq 1 ]; then
  platform=debian13
  if [ "$list_only" -eq 1 ]; then list_here debian13 build-debian13; exit $?; fi
  case "$only" in
    all) run_here debian13 build-debian13 ;;
    build) build_here debian13 build-debian13 ;;
    tests) test_here debian13 build-debian13 ;;
    *) echo "test.sh: --only build|tests, not '$only'" >&2; exit 2 ;;
  esac
  exit $?
fi

if [ "$list_only" -eq 1 ]; then
  rc=0
  for platform in "${platforms[@]}"; do
    case "$platform" in
      debian12) list_here ci build || rc=1 ;;
      debian13) bash scripts/debian13.sh bash scripts/test.sh --here --list-tests || rc=1 ;;
      *) echo "test.sh: unknown platform '$platform' (debian12, debian13)" >&2; exit 2 ;;
    esac
  done
  exit $rc
fi

summaries=()
failed=0
# The outer run's own stage times (packages, the Debian 13 root, the whole command).
times=$(mktemp)
root_time=$(mktemp)
platform=setup
stage "install packages (scripts/bootstrap.sh)"
t=$SECONDS
bash scripts/bootstrap.sh || { echo "test.sh: FAILED to install packages"; exit 1; }
took packages $t
# Printed so that a run on a machine whose THP mode is `never` (no effect) explains its times.
echo "GLIBC_TUNABLES=$GLIBC_TUNABLES; transparent huge pages:" \
  "$(cat /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null || echo 'unknown (no /sys)')"
for platform in "${platforms[@]}"; do
  [ "$platform" = debian13 ] || continue
  # The root is made in the background while this machine's platform builds; its own
  # duration is recorded (waiting for it is mostly overlapped by the Debian 12 stages).
  # Its exit status goes to a file: the Debian 13 build waits for it from a subshell, which
  # cannot `wait` for its parent's job.
  root_log=$(mktemp) root_rc=$(mktemp)
  ( t=$SECONDS; bash scripts/debian13.sh --make; rc=$?
    echo "debian13 root $((SECONDS - t))" > "$root_time"; echo $rc > "$root_rc"; exit $rc ) > "$root_log" 2>&1 &
done

# The Debian 13 build (configure + build inside the root, stage times in
# build-debian13/stage-times.txt); $1 = background: at nice 19 beside the Debian 12 tests.
# The tests leave one core idle much of the time (single-threaded steps, processes waiting
# on each other) and nice 19 takes only that (a weight of 15 against the tests' 1024), so
# the build no longer adds its ~340 s to the run (issue 46). Its wall time then depends on
# what the tests leave, so its cost is recorded as CPU seconds too (build-cpu).
d13_build_pid=""
start_debian13_build() {
  local prio=()
  [ "$1" = background ] && prio=(nice -n 19)
  mkdir -p build-debian13
  # Results of an earlier run must not stand in for this one's.
  rm -f build-debian13/{test-summary,test-report,stage-times}.txt build-debian13/build.ok
  d13_log=$(mktemp)
  ( while [ ! -s "$root_rc" ]; do sleep 1; done
    if [ "$(cat "$root_rc")" != 0 ]; then
      cat "$root_log"; echo "debian13: FAILED to make the Debian 13 root" > build-debian13/test-summary.txt; exit 1
    fi
    cat "$root_log"
    "${prio[@]}" bash scripts/debian13.sh bash scripts/test.sh --here --only build; rc=$?
    times > build-debian13/build.times
    echo "debian13 build-cpu $(cpu_seconds build-debian13/build.times)" >> "$times"
    [ "$rc" -eq 0 ] && touch build-debian13/build.ok
    exit $rc ) > "$d13_log" 2>&1 &
  d13_build_pid=$!
}

for platform in "${platforms[@]}"; do
  case "$platform" in
    debian12)
      if build_here ci build; then
        # The Debian 13 build goes beside these tests (when that platform is asked for).
        [[ " ${platforms[*]} " == *" debian13 "* ]] && start_debian13_build background
        test_here ci build || failed=1
      else
        failed=1
      fi
      summaries+=(build) ;;
    debian13)
      [ -n "$d13_build_pid" ] || start_debian13_build foreground
      stage "Debian 13 root and build (scripts/debian13.sh; beside the Debian 12 tests when both run)"
      wait "$d13_build_pid"
      cat "$d13_log"
      cat "$root_time" >> "$times"
      if [ -f build-debian13/build.ok ]; then
        bash scripts/debian13.sh bash scripts/test.sh --here --only tests || failed=1
      else
        [ -s build-debian13/test-summary.txt ] || echo "debian13: FAILED to build" > build-debian13/test-summary.txt
        failed=1
      fi
      summaries+=(build-debian13) ;;
    *) echo "test.sh: unknown platform '$platform' (debian12, debian13)" >&2; exit 2 ;;
  esac
done

finish_lint || failed=1

platform=summary
stage "summary"
for d in "${summaries[@]}"; do cat "$d/test-summary.txt" 2>/dev/null || echo "$d: no result"; done
echo "all total $((SECONDS - start))" >> "$times"
stage_files=("$times")
for d in "${summaries[@]}"; do stage_files+=("$d/stage-times.txt"); done
echo
python3 scripts/ci/stage_times.py table "${stage_files[@]}"
for d in "${summaries[@]}"; do
  echo
  cat "$d/test-report.txt" 2>/dev/null || echo "$d: no checks report (the platform stopped before its tests)"
done
echo
python3 scripts/ci/stage_times.py check "${stage_files[@]}" || failed=1
echo "all done in $((SECONDS - start)) s: $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
rm -f "$times" "$root_time" "${root_rc:-}" "${root_log:-}" "${d13_log:-}"
exit $failed
