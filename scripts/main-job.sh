#!/usr/bin/env bash
# The main job, end to end on one machine:
#   1. install packages and build what the job needs (tool, runtime, launcher, the example) into ./build
#   2. run the single-device example (1 process, global batch 2B) and keep its result
#   3. accel-migrate it, show the diff
#   4. accelerate verify main.cpp: from the source alone it builds the traced original and the
#      migrated program against the installed Accelerate package, then runs the traced
#      original, the migrated program on 1 process and on 2 CPU processes with the same global
#      batch 2B (--split_batches, B each), compared step by step; order controls of the
#      1-process run when they differ (docs/verify.md)
#   5. print the final metrics side by side and verify's verdicts: the migrated program on 1
#      process prints exactly what the original prints and is bit-identical to the traced
#      original at every step, and the 2-process run is bit-identical to the 1-process one or
#      within the controls' spread, with the work split on every step
# Usage: bash scripts/main-job.sh [example]   (default: mnist_cnn)
# It exits 0 only when both verdicts pass (1 when the runs disagree or verify's verdict is
# DIVERGED / not split; any failing step fails it too).
#
# Environment, for the test command's `readme.main_job` (test/CMakeLists.txt), which runs
# this script as it is against the build tree under test:
#   ACCEL_MAIN_JOB_BUILD_DIR=DIR  DIR is an already configured build tree of this clone: no
#       package install and no `cmake --preset` (they would reconfigure the tree under test),
#       but the same `cmake --build DIR --target ...` (a no-op when up to date), the same
#       check that those targets make every file `cmake --install` copies (a tree built in
#       full would hide a missing one from the install), and `cmake --install` into a fresh
#       prefix WORK/install. Every later step is the user's.
#   ACCEL_MAIN_JOB_WORK_DIR=WORK  where the job writes (default: BUILD/main-job), so that a
#       test does not overwrite a user's ./build/main-job.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
example=${1:-mnist_cnn}
# Inside the Debian 13 root (bash scripts/debian13.sh bash scripts/main-job.sh) the root's
# own packages are used and the build goes to ./build-debian13.
preset=ci bdir=$root/build
[ -n "${ACCEL_IN_DEBIAN13:-}" ] && preset=debian13 bdir=$root/build-debian13
given_build=${ACCEL_MAIN_JOB_BUILD_DIR:-}
[ -z "$given_build" ] || bdir=$(realpath -m "$given_build")
out=$(realpath -m "${ACCEL_MAIN_JOB_WORK_DIR:-$bdir/main-job}")
prefix=$bdir/install
[ -z "$given_build" ] || prefix=$out/install
work=$out/$example
export OMP_NUM_THREADS=1

t0=$SECONDS
bold='' green='' red='' plain=''
if [ -t 1 ]; then bold=$'\033[1m' green=$'\033[32m' red=$'\033[31m' plain=$'\033[0m'; fi
step() { printf '\n%s== [%d s] %s%s\n' "$bold" $((SECONDS - t0)) "$*" "$plain"; }

# Installs the packages and configures the build tree, unless the tree is given (see above).
configure() {
  if [ -n "$given_build" ]; then
    [ -f "$bdir/CMakeCache.txt" ] || { echo "ACCEL_MAIN_JOB_BUILD_DIR=$bdir is not a configured build tree"; exit 2; }
    echo "using the configured build tree $bdir (ACCEL_MAIN_JOB_BUILD_DIR): no package install, no cmake --preset"
    return
  fi
  [ -n "${ACCEL_IN_DEBIAN13:-}" ] || bash scripts/bootstrap.sh
  [ -f "$bdir/build.ninja" ] || echo "first build: about 10 minutes on 2 cores (later runs reuse $bdir and ccache)"
  bash scripts/configure.sh $preset > /dev/null
}

# Build outputs that `cmake --install` copies, relative to $bdir: the files of the tree that
# its install scripts name and that a build statement (not a phony one) makes.
installed_outputs() {
  comm -12 <(find "$bdir" -name cmake_install.cmake -exec grep -hoE '"/[^"]+"' {} + | tr -d '"' |
               awk -v p="$bdir/" 'index($0, p) == 1 { print substr($0, length(p) + 1) }' | sort -u) \
           <(ninja -C "$bdir" -t targets all | grep -v ': phony$' | sed 's/: [^:]*$//' | sort -u)
}

# Fails when a file that `cmake --install` copies is made by none of the targets "$@" and
# their dependencies (a symlink counts as its target). In a tree built in full before (the
# test command's) the install alone would not notice; a user's first run fails at the
# install step, as it did from 5250ea7 on.
check_build_list() {
  [ -f "$bdir/build.ninja" ] || return 0
  local made f missing=()
  made=$(ninja -C "$bdir" -t graph "$@" | grep -oE 'label="[^"]+"' | cut -d'"' -f2 | sort -u)
  for f in $(installed_outputs); do
    grep -qxF "$f" <<< "$made" || grep -qxF "$(realpath --relative-to="$bdir" "$bdir/$f")" <<< "$made" \
      || missing+=("$f")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "cmake --install copies files that the job's target list does not build: ${missing[*]} (add their targets in scripts/main-job.sh)"
  exit 1
}

step "1/5 install packages and build what the job needs"
configure
# Only the tool, the runtime, the launcher and the example (the tests and benchmarks are
# the test command's business); everything `cmake --install` copies must be built too: the
# clang-tidy module and the launcher's helper programs (self-test, model tools). The build
# preset of $preset names no more than its build tree, so this is `cmake --build --preset`.
targets=(accel-migrate accelerate accelerate_cli accelerate_selftest accelerate_model_tools accelerate-tidy
         "example_$example")
cmake --build "$bdir" --target "${targets[@]}"
check_build_list "${targets[@]}"
[ -z "$given_build" ] || rm -rf "$prefix"
cmake --install "$bdir" --prefix "$prefix" > /dev/null
bin=$prefix/bin
src=$root/examples/$example/main.cpp
[ -f "$src" ] || { echo "no such example: $example (see examples/)"; exit 2; }
for exe in "$bin/accel-migrate" "$bin/accelerate"; do
  [ -x "$exe" ] || { echo "not built yet: $exe — this part of the project is not finished"; exit 3; }
done
rm -rf "$work"; mkdir -p "$work"

B=32
step "2/5 original program: 1 process, batch $((2 * B))"
"$bdir/examples/$example" --batch-size $((2 * B)) --epochs 1 --out "$work/out-original" | tee "$work/original.log"

step "3/5 accel-migrate examples/$example/main.cpp -o $work/train_dist.cpp"
# What a user reads; step 4's verify makes this same migration again from the source (the tool is
# deterministic) and passes its notes on: a note that names a mechanism (dropout) announces a gap.
"$bin/accel-migrate" "$src" -o "$work/train_dist.cpp" 2> >(tee "$work/migrate.log" >&2)
color=never; [ -t 1 ] && color=always
diff -u --color=$color "$src" "$work/train_dist.cpp" --label original --label migrated || true

EXTRA=(--epochs 1)   # one epoch: a few seconds per run on a laptop-class CPU
step "4/5 accelerate verify examples/$example/main.cpp: builds the traced original and the migrated program, then runs them: the original, 1 process, 2 processes with global batch $((2 * B)) (--split_batches: $B each)"
vrc=0
# From the job's folder, which is the program's alone (--reset_cwd): what a run writes there,
# such as --out, is moved aside to verify/TAG.files so that every run starts alike.
(cd "$work" && "$bin/accelerate" verify --cpu --reset_cwd --work verify "$src" --batch-size $((2 * B)) "${EXTRA[@]}" \
  --out out-verify) | tee "$work/verify.log" || vrc=${PIPESTATUS[0]}
[ "$vrc" -le 1 ] || { echo "accelerate verify could not judge the runs (exit $vrc)"; exit "$vrc"; }

step "5/5 result"
one=$(grep '^final:' "$work/verify/one.log" | tail -1)
two=$(grep '^final:' "$work/verify/n2.log" | tail -1)
orig=$(grep '^final:' "$work/original.log" | tail -1)
verdict=$(sed -n 's/^2 processes against 1: //p' "$work/verify.log")
traced=$(sed -n 's/^1 process against the original: //p' "$work/verify.log")
rc=0
GREEN=$green RED=$red PLAIN=$plain /usr/bin/python3 - "$orig" "$one" "$two" $((2 * B)) $B "$vrc" "$verdict" "$traced" <<'PY' || rc=$?
import os, sys
def parse(line):
    return {k: v for k, v in (kv.split("=") for kv in line.split()[1:])}
orig, one, two = (parse(x) for x in sys.argv[1:4])
b2, b, vrc, verdict, traced = sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7], sys.argv[8]
if not (orig.keys() == one.keys() == two.keys()):
    sys.exit(f"the three runs print different metrics: {sorted(orig)} / {sorted(one)} / {sorted(two)}")
cols = ("original, batch " + b2, "migrated, 1 process", "2 processes, " + b + " each", "2 vs 1 (relative)")
print(f"{'metric':<12}" + "".join(f"{c:>24}" for c in cols))
same_as_original = all(orig[k] == one[k] for k in orig)
for k in orig:
    d = abs(float(one[k]) - float(two[k])) / max(abs(float(one[k])), 1e-12)
    print(f"{k:<12}{orig[k]:>24}{one[k]:>24}{two[k]:>24}{d:>24.2e}")
# verify exits 0 only when the 1-process run is bit-identical to the traced original too.
ok = same_as_original and vrc == 0 and traced.startswith("bit-identical")
colour = os.environ["GREEN"] if ok else os.environ["RED"]
print(f"{colour}RESULT: the migrated program on 1 process {'printed exactly' if same_as_original else 'did NOT print'} "
      f"what the original printed; 1 process against the traced original, step by step: {traced or 'no verdict'}; "
      f"2 processes against 1, step by step (accelerate verify): {verdict}"
      f"{os.environ['PLAIN']}")
sys.exit(0 if ok else 1)
PY
echo "main job done in $((SECONDS - t0)) s"
exit $rc
