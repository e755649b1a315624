#!/usr/bin/env bash
# The main job, end to end on one machine:
#   1. install packages and build what the job needs (tool, runtime, launcher, the example) into ./build
#   2. run the single-device example (1 process, global batch 2B) and keep its result
#   3. accel-migrate it, show the diff
#   4. build the migrated program against the installed Accelerate package
#   5. accelerate launch it on 1 process (batch 2B) and on 2 CPU processes (batch B each:
#      the same global batch)
#   6. print the final metrics side by side: the migrated program on 1 process prints exactly
#      what the original prints, and the 2-process run reproduces the 1-process one
# Usage: bash scripts/main-job.sh [example]   (default: mnist_cnn)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
example=${1:-mnist_cnn}
# Inside the Debian 13 root (bash scripts/debian13.sh bash scripts/main-job.sh) the root's
# own packages are used and the build goes to ./build-debian13.
preset=ci bdir=build
[ -n "${ACCEL_IN_DEBIAN13:-}" ] && preset=debian13 bdir=build-debian13
work=$root/$bdir/main-job/$example
export OMP_NUM_THREADS=1

t0=$SECONDS
bold='' green='' red='' plain=''
if [ -t 1 ]; then bold=$'\033[1m' green=$'\033[32m' red=$'\033[31m' plain=$'\033[0m'; fi
step() { printf '\n%s== [%d s] %s%s\n' "$bold" $((SECONDS - t0)) "$*" "$plain"; }

step "1/6 install packages and build what the job needs"
[ -n "${ACCEL_IN_DEBIAN13:-}" ] || bash scripts/bootstrap.sh
[ -f $bdir/build.ninja ] || echo "first build: about 10 minutes on 2 cores (later runs reuse ./$bdir and ccache)"
cmake --preset $preset > /dev/null
# Only the tool, the runtime, the launcher and the example (the tests and benchmarks are
# the test command's business); everything `cmake --install` copies must be built too: the
# clang-tidy module and the launcher's helper programs (self-test, model tools).
cmake --build --preset $preset --target accel-migrate accelerate accelerate_cli accelerate_selftest \
  accelerate_model_tools accelerate-tidy "example_$example"
cmake --install $bdir --prefix $bdir/install > /dev/null
bin=$root/$bdir/install/bin
src=$root/examples/$example/main.cpp
[ -f "$src" ] || { echo "no such example: $example (see examples/)"; exit 2; }
for exe in "$bin/accel-migrate" "$bin/accelerate"; do
  [ -x "$exe" ] || { echo "not built yet: $exe — this part of the project is not finished"; exit 3; }
done
rm -rf "$work"; mkdir -p "$work"

B=32
step "2/6 original program: 1 process, batch $((2 * B))"
"$root/$bdir/examples/$example" --batch-size $((2 * B)) --epochs 1 --out "$work/out-original" | tee "$work/original.log"

step "3/6 accel-migrate examples/$example/main.cpp -o $work/train_dist.cpp"
"$bin/accel-migrate" "$src" -o "$work/train_dist.cpp"
color=never; [ -t 1 ] && color=always
diff -u --color=$color "$src" "$work/train_dist.cpp" --label original --label migrated || true

step "4/6 build the migrated program against the installed package"
mkdir -p "$work/project"
cp "$work/train_dist.cpp" "$work/project/main.cpp"
cp "$root"/examples/"$example"/*.h "$work/project/" 2>/dev/null || true
cat > "$work/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(train_dist CXX)
find_package(Accelerate REQUIRED CONFIG)
add_executable(train_dist main.cpp)
target_link_libraries(train_dist PRIVATE Accelerate::accelerate)
CMAKE
launcher=(); command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$work/project" -B "$work/project/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "${launcher[@]}" -DCMAKE_PREFIX_PATH="$root/$bdir/install" > /dev/null
cmake --build "$work/project/build"

EXTRA=(--epochs 1)   # one epoch: a few seconds per run on a laptop-class CPU
step "5/6 accelerate launch train_dist: 1 process with batch $((2 * B)), then 2 processes with batch $B"
"$bin/accelerate" launch --cpu --num_processes 1 --main_process_port 0 \
  "$work/project/build/train_dist" --batch-size $((2 * B)) "${EXTRA[@]}" --out "$work/out-1proc" | tee "$work/migrated-1proc.log"
"$bin/accelerate" launch --cpu --num_processes 2 --main_process_port 0 \
  "$work/project/build/train_dist" --batch-size $B "${EXTRA[@]}" --out "$work/out-2proc" | tee "$work/migrated-2proc.log"

step "6/6 result"
one=$(grep '^final:' "$work/migrated-1proc.log" | tail -1)
two=$(grep '^final:' "$work/migrated-2proc.log" | tail -1)
orig=$(grep '^final:' "$work/original.log" | tail -1)
rc=0
GREEN=$green RED=$red PLAIN=$plain /usr/bin/python3 - "$orig" "$one" "$two" $((2 * B)) $B <<'PY' || rc=$?
import os, sys
def parse(line):
    return {k: v for k, v in (kv.split("=") for kv in line.split()[1:])}
orig, one, two = (parse(x) for x in sys.argv[1:4])
b2, b = sys.argv[4], sys.argv[5]
if not (orig.keys() == one.keys() == two.keys()):
    sys.exit(f"the three runs print different metrics: {sorted(orig)} / {sorted(one)} / {sorted(two)}")
cols = ("original, batch " + b2, "migrated, 1 process", "2 processes, " + b + " each", "2 vs 1 (relative)")
print(f"{'metric':<12}" + "".join(f"{c:>24}" for c in cols))
same_as_original = all(orig[k] == one[k] for k in orig)
worst = 0.0
for k in orig:
    d = abs(float(one[k]) - float(two[k])) / max(abs(float(one[k])), 1e-12)
    worst = max(worst, d)
    print(f"{k:<12}{orig[k]:>24}{one[k]:>24}{two[k]:>24}{d:>24.2e}")
ok = same_as_original and worst <= 1e-4
colour = os.environ["GREEN"] if ok else os.environ["RED"]
print(f"{colour}RESULT: the migrated program on 1 process {'printed exactly' if same_as_original else 'did NOT print'} "
      f"what the original printed; on 2 processes it {'REPRODUCED' if worst <= 1e-4 else 'did NOT reproduce'} the "
      f"1-process run (largest relative difference {worst:.1e}, tolerance 1e-4: the reduction order of the gradient "
      f"average differs in the last bits){os.environ['PLAIN']}")
sys.exit(0 if ok else 1)
PY
echo "main job done in $((SECONDS - t0)) s"
exit $rc
