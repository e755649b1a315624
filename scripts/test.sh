#!/usr/bin/env bash
# The test command: installs what the project needs, builds everything from scratch and
# runs every test, on both supported platforms:
#   debian12  this machine: Debian 12, LibTorch 1.13, LLVM 16           (./build)
#   debian13  a cached Debian 13 root (scripts/debian13.sh): LibTorch 2.6, LLVM 19
#             (./build-debian13), made on first use (about 8 minutes) outside the clone
# On debian12, scripts/lint.sh then checks the project's own format and clang-tidy findings.
# A failure on either platform fails the command; both always run, and a summary of
# both ends the output.
#   bash scripts/test.sh                       # both platforms
#   bash scripts/test.sh --platform debian12   # one of them
#   ACCEL_TEST_REGEX=lit bash scripts/test.sh  # only tests whose name matches
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
platforms=(debian12 debian13)
here=0
while [ $# -gt 0 ]; do
  case "$1" in
    --platform) platforms=("$2"); shift 2 ;;
    --here) here=1; shift ;;   # used inside the Debian 13 root: this platform only
    *) echo "test.sh: unknown argument '$1' (see the header of scripts/test.sh)" >&2; exit 2 ;;
  esac
done

stage() { printf '\n\033[1m== [%s +%ss] %s\033[0m\n' "${platform:-}" "$((SECONDS - start))" "$*"; }

# Builds and tests this machine's platform with CMake preset $1 in build tree $2; writes
# the summary to $2/test-summary.txt.
run_here() {
  local preset=$1 bdir=$2 t0=$SECONDS rc=0 log
  local summary=$bdir/test-summary.txt
  mkdir -p "$bdir"; rm -f "$summary"
  stage "configure (cmake --preset $preset)"
  cmake --preset "$preset" > "$bdir/configure.log" 2>&1 \
    || { cat "$bdir/configure.log"; echo "$platform: FAILED to configure" > "$summary"; return 1; }
  grep -E '^-- accelerate' "$bdir/configure.log" || true
  stage "build ($(nproc) cores; a cold build takes about 10 minutes on 2 cores)"
  cmake --build --preset "$preset" || { echo "$platform: FAILED to build" > "$summary"; return 1; }
  local built=$((SECONDS - t0))
  stage "test (ctest; the end-to-end tests take a few minutes each)"
  log=$(mktemp)
  OMP_NUM_THREADS=1 ctest --preset "$preset" ${ACCEL_TEST_REGEX:+-R "$ACCEL_TEST_REGEX"} --timeout 900 \
    2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local counts
  counts=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$log" | tail -1)
  {
    printf '%s: %s (build %d s, total %d s)\n' "$platform" "${counts:-no test summary}" "$built" \
      "$((SECONDS - t0))"
    sed -n '/The following tests FAILED/,$p' "$log" | grep -E '^\s+[0-9]+ - ' || true
  } > "$summary"
  rm -f "$log"
  # The project's own style (docs/dev/style.md): once, on this machine's platform.
  if [ "$platform" = debian12 ] && { [ -z "${ACCEL_TEST_REGEX:-}" ] || [[ lint =~ $ACCEL_TEST_REGEX ]]; }; then
    stage "lint (scripts/lint.sh: clang-format, clang-tidy)"
    if ! bash scripts/lint.sh "$bdir"; then
      echo "$platform: lint FAILED (scripts/lint.sh $bdir)" >> "$summary"
      rc=1
    fi
  fi
  [ "$rc" -eq 0 ]
}

if [ "$here" -eq 1 ]; then
  platform=debian13
  run_here debian13 build-debian13
  exit $?
fi

summaries=()
failed=0
platform=setup
stage "install packages (scripts/bootstrap.sh)"
bash scripts/bootstrap.sh || { echo "test.sh: FAILED to install packages"; exit 1; }
for platform in "${platforms[@]}"; do
  [ "$platform" = debian13 ] || continue
  # The root is made in the background while this machine's platform builds.
  root_log=$(mktemp)
  bash scripts/debian13.sh --make > "$root_log" 2>&1 &
  root_pid=$!
done

for platform in "${platforms[@]}"; do
  case "$platform" in
    debian12)
      run_here ci build || failed=1
      summaries+=(build/test-summary.txt) ;;
    debian13)
      stage "Debian 13 root (scripts/debian13.sh)"
      if wait "$root_pid"; then
        cat "$root_log"
        bash scripts/debian13.sh bash scripts/test.sh --here || failed=1
      else
        cat "$root_log"
        mkdir -p build-debian13
        echo "debian13: FAILED to make the Debian 13 root" > build-debian13/test-summary.txt
        failed=1
      fi
      summaries+=(build-debian13/test-summary.txt) ;;
    *) echo "test.sh: unknown platform '$platform' (debian12, debian13)" >&2; exit 2 ;;
  esac
done

platform=summary
stage "summary"
for s in "${summaries[@]}"; do cat "$s" 2>/dev/null || echo "${s%%/*}: no result"; done
echo "all done in $((SECONDS - start)) s: $([ $failed -eq 0 ] && echo PASSED || echo FAILED)"
exit $failed
