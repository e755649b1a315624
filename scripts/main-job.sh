#!/usr/bin/env bash
# The main job, end to end on one machine:
#   1. install packages and build (tool, runtime, launcher, examples) into ./build
#   2. run the single-device example (1 process, global batch 2B) and keep its result
#   3. accel-migrate it, show the diff
#   4. build the migrated program against the installed Accelerate package
#   5. accelerate launch it on 1 process (batch 2B) and on 2 CPU processes (batch B each:
#      the same global batch)
#   6. print the final metrics side by side: the 2-process run reproduces the 1-process one
# Usage: bash scripts/main-job.sh [example]   (default: mnist_cnn)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
example=${1:-mnist_cnn}
work=$root/build/main-job/$example
export OMP_NUM_THREADS=1

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1/6 install packages and build"
bash scripts/bootstrap.sh
cmake --preset ci > /dev/null
cmake --build --preset ci
cmake --install build --prefix build/install > /dev/null
bin=$root/build/install/bin
src=$root/examples/$example/main.cpp
[ -f "$src" ] || { echo "no such example: $example (see examples/)"; exit 2; }
for exe in "$bin/accel-migrate" "$bin/accelerate"; do
  [ -x "$exe" ] || { echo "not built yet: $exe — this part of the project is not finished"; exit 3; }
done
rm -rf "$work"; mkdir -p "$work"

B=32
step "2/6 original program: 1 process, batch $((2 * B))"
"$root/build/examples/$example" --batch-size $((2 * B)) --epochs 1 --out "$work/out-original" | tee "$work/original.log"

step "3/6 accel-migrate examples/$example/main.cpp -o $work/train_dist.cpp"
"$bin/accel-migrate" "$src" -o "$work/train_dist.cpp"
diff -u "$src" "$work/train_dist.cpp" --label original --label migrated || true

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
      "${launcher[@]}" -DCMAKE_PREFIX_PATH="$root/build/install" > /dev/null
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
printf 'migrated, 1 process,   batch %3d:      %s\n' $((2 * B)) "$one"
printf 'migrated, 2 processes, batch %3d each: %s\n' $B "$two"
/usr/bin/python3 - "$one" "$two" <<'PY'
import sys
a = dict(kv.split("=") for kv in sys.argv[1].split()[1:])
b = dict(kv.split("=") for kv in sys.argv[2].split()[1:])
worst = max(abs(float(a[k]) - float(b[k])) / max(abs(float(a[k])), 1e-12) for k in a)
print(f"largest relative difference: {worst:.2e} "
      f"({'reproduced' if worst <= 1e-4 else 'NOT reproduced'} to 1e-4)")
sys.exit(0 if worst <= 1e-4 else 1)
PY
echo "(the original program, for reference, $(grep '^final:' "$work/original.log" | tail -1 | cut -c8-): its"
echo " LibTorch RandomSampler draws another order than the prepared loader, see docs/data-loader.md)"
