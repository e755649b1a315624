#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (docs/dev/fuzzing.md) and runs each for SECONDS,
# then prints per target the executions, the coverage (cov: edges, ft: features) and the
# findings (inputs libFuzzer saved for a crash, sanitizer report, leak, timeout or
# out-of-memory). Exit 0: no finding; 1: a finding (or a build failure); 77: clang or
# libFuzzer is missing here (ctest's skip code: fuzz.smoke runs this script).
#
#   scripts/fuzz.sh [--build DIR] [--fresh] [--only TARGET] [SECONDS]   (default 60 s each)
#
# The corpus each target grows is kept in DIR/work/<target> (the committed seeds in
# fuzz/corpus/<target> are only read), so a later run starts where this one ended; --fresh
# starts again from the seeds and forgets earlier findings. Findings are saved in
# DIR/findings/<target>/. ACCEL_FUZZ_CXX picks the compiler (default: clang++-16, -19).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
seconds=60
fresh=0
only=
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --fresh) fresh=1; shift ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) seconds=$1; shift ;;
  esac
done
targets=(config_file launch_args manifest link_message store_wire)
[ -n "$only" ] && targets=("$only")

skip() { echo "fuzz: SKIPPED: $*"; exit 77; }

cxx=${ACCEL_FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  for c in clang++-16 clang++-19 clang++; do
    if command -v "$c" >/dev/null; then cxx=$(command -v "$c"); break; fi
  done
fi
[ -n "$cxx" ] || skip "no clang++ (apt-get install clang-16; Debian 13: clang-19)"
# libFuzzer comes with compiler-rt, a package of its own: a one-line target tells whether it links.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' > "$probe/p.cpp"
"$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err" ||
  skip "$cxx cannot link libFuzzer (apt-get install libclang-rt-16-dev; Debian 13: libclang-rt-19-dev): $(head -c 300 "$probe/err")"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
t0=$SECONDS
mkdir -p "$build"
# ACCEL_FUZZ_CMAKE_ARGS: more -D settings (fuzz.smoke passes where LibTorch's torch/arg.h is).
read -r -a extra <<<"${ACCEL_FUZZ_CMAKE_ARGS:-}"
cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" "${extra[@]}" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; echo "fuzz: configure failed"; exit 1; }
cmake --build "$build" >"$build/build.log" 2>&1 || { tail -50 "$build/build.log"; echo "fuzz: build failed"; exit 1; }
echo "fuzz: built ${#targets[@]} targets with $cxx in $((SECONDS - t0)) s ($build)"

failed=0
summary=()
for t in "${targets[@]}"; do
  work=$build/work/$t findings=$build/findings/$t
  [ $fresh -eq 1 ] && rm -rf "$work" "$findings"
  mkdir -p "$work" "$findings"
  before=$(find "$findings" -type f | wc -l)
  log=$build/$t.log
  # The first corpus folder is the one libFuzzer adds to; the seeds stay as committed.
  # -timeout: an input that takes 10 s is a hang in a parser, a finding like a crash;
  # -error_exitcode: libFuzzer's default, 77, is the skip code of ctest.
  "$build/${t}_fuzz" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -error_exitcode=1 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  found=$(($(find "$findings" -type f | wc -l) - before))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
  summary+=("$(printf '%-13s %10s executions  %-22s %s finding(s)  exit %s' "$t" "${execs:-?}" "${cov:-cov: ?}" "$found" "$rc")")
  if [ $rc -ne 0 ] || [ "$found" -ne 0 ]; then
    failed=1
    echo "fuzz: $t FAILED (exit $rc); its report (whole log: $log):"
    grep -E -A25 'ERROR: |runtime error|uncaught|deadly signal' "$log" | head -60
    ls "$findings"
  fi
done
echo "fuzz: $seconds s per target"
printf '  %s\n' "${summary[@]}"
echo "fuzz: $([ $failed -eq 0 ] && echo 'no findings' || echo 'FINDINGS (inputs in '"$build"'/findings/)') in $((SECONDS - t0)) s"
exit $failed
