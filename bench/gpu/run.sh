#!/usr/bin/env bash
# The GPU run in one go (docs/gpu.md). Two halves, because the GPU machine has no LLVM and
# cannot reach Debian's archive:
#
#   bench/gpu/run.sh prepare PREP [--tool ACCEL_MIGRATE] [--cache-dir DIR] [--programs a,b] [--deps]
#       here: accel-migrate the examples, bench/overhead_train.cpp and bench/resident_train.cpp
#       into PREP/migrated;
#       with --deps also unpack the Debian packages the build needs and the GPU machine lacks
#       (yaml-cpp, xxHash, nlohmann-json, GoogleTest, OpenSSL, Boost.CRC's headers, Gloo's headers)
#       into PREP/deps.
#   bench/gpu/run.sh run PREP OUT [--quick] [--budget SECONDS] [--examples a,b] [--reuse-build DIR]
#       there: probe the machine, build the runtime, launcher, tests, examples (original and
#       the migrated ones from PREP) and benchmarks against the machine's own LibTorch (the
#       one inside its Python torch package), then bench/gpu/measure.py. Every stage's log,
#       its time and status go to OUT (stages.csv, summary.txt and logs.tar.gz, rewritten
#       after each stage, so a run stopped at its time limit still returns what it did).
#       --quick: tiny sizes (the CPU dry run). --require-same: fail when an example's final
#       lines differ (on a CPU they must not). --budget: stop starting measurements after
#       this many seconds from the start (default 480). --reuse-build: measure an existing
#       build's programs instead of configuring and building (the dry run).
#   bench/gpu/run.sh dry-run BUILD OUT
#       the CPU dry run of both halves on a build with the tool (ctest bench_gpu_dry_run).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
t_start=$(date +%s)

die() { echo "bench/gpu/run.sh: $*" >&2; exit 2; }

# ---- prepare (the machine with the tool) ------------------------------------------------

find_tool() {
  local t
  for t in "$src/build/tool/accel-migrate" "$(command -v accel-migrate || true)"; do
    [ -n "$t" ] && [ -x "$t" ] && { echo "$t"; return; }
  done
  die "accel-migrate not found: build it (cmake --build build) or pass --tool"
}

all_programs=overhead_train,resident_train,mnist_cnn,regression,gan,trainer_class

migrate_all() {  # PREP TOOL PROGRAMS (comma-separated)
  local prep=$1 tool=$2 name f
  for name in ${3//,/ }; do
    case ,$all_programs, in *,"$name",*) ;; *) die "unknown program $name (one of $all_programs)" ;; esac
    mkdir -p "$prep/migrated/$name"
    if [ "$name" = overhead_train ] || [ "$name" = resident_train ]; then  # bench/NAME.cpp
      "$tool" "${cache[@]}" "$src/bench/$name.cpp" -o "$prep/migrated/$name/$name.cpp" \
        > "$prep/migrate-$name.log" 2>&1 || die "accel-migrate failed on bench/$name.cpp (see $prep)"
      continue
    fi
    for f in "$src/examples/$name"/*.cpp "$src/examples/$name"/*.h; do
      [ -e "$f" ] || continue
      "$tool" "${cache[@]}" "$f" -o "$prep/migrated/$name/$(basename "$f")" >> "$prep/migrate-$name.log" 2>&1 ||
        die "accel-migrate failed on $f (see $prep/migrate-$name.log)"
    done
  done
  echo "migrated into $prep/migrated: $(cd "$prep/migrated" && echo *)"
}

# Debian 12's packages, unpacked (not installed): their headers and libraries are ABI-safe on
# the newer glibc/libstdc++ of the GPU image. Gloo's headers go to their own folder: the build
# adds them with -idirafter, so that LibTorch's own copy wins where the wheel ships one.
unpack_deps() {  # PREP
  local prep=$1 d=$1/debs p
  mkdir -p "$d" "$prep/deps" "$prep/gloo"
  (cd "$d" && apt-get download libyaml-cpp-dev libyaml-cpp0.7 libxxhash-dev libxxhash0 nlohmann-json3-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 \
      libgtest-dev libgloo-dev libssl-dev libssl3) > "$prep/apt-download.log" 2>&1 || die "apt-get download failed (see $prep/apt-download.log)"
  for p in "$d"/*.deb; do
    case $(basename "$p") in
      libgloo-dev*) dpkg -x "$p" "$prep/gloo" ;;
      *) dpkg -x "$p" "$prep/deps" ;;
    esac
  done
  # Boost.CRC and only the headers it includes (the whole of Boost is ~180 MB).
  echo '#include <boost/crc.hpp>' | g++ -std=c++17 -M -x c++ - 2>/dev/null | tr ' \\' '\n\n' |
    grep '^/usr/include/boost/' | sort -u | while read -r h; do
      mkdir -p "$prep/deps$(dirname "$h")" && cp "$h" "$prep/deps$h"
    done
  [ -f "$prep/deps/usr/include/boost/crc.hpp" ] || die "Boost.CRC headers not found (apt-get install libboost-dev)"
  rm -rf "$d"
  echo "dependencies unpacked into $prep/deps ($(du -sh "$prep/deps" | cut -f1)) and $prep/gloo"
}

cmd_prepare() {
  local prep="" tool="" deps=0 programs=$all_programs
  cache=()  # accel-migrate's PCH cache (its default when not given)
  while [ $# -gt 0 ]; do
    case $1 in
      --tool) tool=$2; shift ;;
      --deps) deps=1 ;;
      --programs) programs=$2; shift ;;
      --cache-dir) cache=(--cache-dir "$2"); shift ;;
      -*) die "unknown option $1" ;;
      *) prep=$1 ;;
    esac
    shift
  done
  [ -n "$prep" ] || die "usage: run.sh prepare PREP [--tool ACCEL_MIGRATE] [--deps]"
  [ -e "$prep" ] && [ -n "$(ls -A "$prep" 2>/dev/null)" ] && die "$prep exists and is not empty: nothing is overwritten"
  mkdir -p "$prep"
  prep=$(cd "$prep" && pwd)
  migrate_all "$prep" "${tool:-$(find_tool)}" "$programs"
  [ $deps = 1 ] && unpack_deps "$prep"
  return 0
}

# ---- run (the GPU machine, or the CPU dry run) ------------------------------------------

# stage NAME LIMIT CMD...: runs CMD with a time limit, its output in $work/NAME.log; records
# name, exit status and seconds in stages.csv; repacks the logs into $out.
stage() {
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s.%N)
  echo "== [$name] (at most ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" > "$work/$name.log" 2>&1
  rc=$?
  printf '%s,%s,%.1f\n' "$name" "$rc" "$(echo "$(date +%s.%N) $t0" | awk '{print $1 - $2}')" >> "$out/stages.csv"
  tail -n 15 "$work/$name.log"
  echo "== [$name] exit $rc"
  pack
  return $rc
}

pack() {
  cp -f "$out/stages.csv" "$work/" 2>/dev/null
  # Text only: the examples' checkpoints and data stay behind (a file that comes back is
  # limited to 16 MiB).
  (cd "$(dirname "$work")" && find "$(basename "$work")" -type f -size -4M \( -name '*.log' -o -name '*.csv' \
      -o -name '*.txt' -o -name '*.xml' \) | tar -czf "$out/logs.tar.gz.tmp" -T -) &&
    mv -f "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
  [ -f "$work/measure/summary.txt" ] && cp -f "$work/measure/summary.txt" "$out/summary.txt"
  [ -f "$work/measure/results.csv" ] && cp -f "$work/measure/results.csv" "$out/results.csv"
  return 0
}

probe() {
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm); cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi: none"
  "$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
"available", torch.cuda.is_available(), "devices", torch.cuda.device_count(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""); print("cmake_prefix_path", torch.utils.cmake_prefix_path)'
  "$py" -c 'import accelerate; print("huggingface accelerate", accelerate.__version__)' 2>&1 | tail -1
  for t in c++ g++ cmake ninja nvcc; do echo "$t: $(command -v $t) $($t --version 2>&1 | head -1)"; done
  ls -d /usr/local/cuda* 2>&1
  ls "$torch_root/include" 2>&1 | tr '\n' ' '
  echo
}

configure() {
  local gen=Ninja
  command -v ninja > /dev/null || gen="Unix Makefiles"
  local args=(-S "$src" -B "$bld" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DACCEL_BUILD_TOOL=OFF
              -DACCEL_BUILD_TIDY_MODULE=OFF -DACCEL_USE_CCACHE=OFF "-DACCEL_MIGRATED_DIR=$prep/migrated")
  local prefix=""
  [ -f "$torch_cmake/Torch/TorchConfig.cmake" ] && prefix="$torch_cmake"
  [ -d "$prep/deps/usr" ] && prefix="${prefix:+$prefix;}$prep/deps/usr"
  [ -n "$prefix" ] && args+=("-DCMAKE_PREFIX_PATH=$prefix")
  [ -d "$prep/gloo/usr/include" ] && args+=("-DCMAKE_CXX_FLAGS=-idirafter $prep/gloo/usr/include")
  local nvcc
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
  [ -n "$nvcc" ] && args+=("-DCUDAToolkit_ROOT=$(dirname "$(dirname "$nvcc")")" "-DCMAKE_CUDA_COMPILER=$nvcc")
  echo "cmake ${args[*]}"
  cmake "${args[@]}"
}

cmd_run() {
  local quick=0 budget=480 pos=() reuse="" examples=mnist_cnn,regression,gan,trainer_class same=()
  while [ $# -gt 0 ]; do
    case $1 in
      --quick) quick=1 ;;
      --budget) budget=$2; shift ;;
      --reuse-build) reuse=$(cd "$2" && pwd) || die "no build folder $2"; shift ;;
      --examples) examples=$2; shift ;;
      --require-same) same=(--require-same) ;;
      -*) die "unknown option $1" ;;
      *) pos+=("$1") ;;
    esac
    shift
  done
  [ ${#pos[@]} = 2 ] || die "usage: run.sh run PREP OUT [--quick] [--budget SECONDS]"
  prep=$(cd "${pos[0]}" && pwd) || die "no folder ${pos[0]}"
  [ -d "$prep/migrated" ] || die "$prep/migrated missing: run 'run.sh prepare' first"
  out=${pos[1]}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  work=${GPU_RUN_WORK:-/tmp/accel-gpu-run}
  bld=${reuse:-$work-build}
  rm -rf "$work"
  mkdir -p "$work"
  : > "$out/stages.csv"
  py=${PYTHON:-$(command -v python3)}  # the one with torch (the GPU image's; /usr/bin/python3 on Debian)
  export src prep bld py torch_root torch_cmake
  export -f probe configure
  torch_root=$("$py" -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>/dev/null)
  torch_cmake=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
  export torch_root torch_cmake
  export LD_LIBRARY_PATH="$prep/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local jobs
  jobs=$(nproc)
  stage probe 60 bash -c probe
  local keep_going=(-- -k 0)  # every error at once: a GPU slice has no time for a second try
  command -v ninja > /dev/null || keep_going=(-- -k)
  if [ -z "$reuse" ]; then
    stage configure 180 bash -c configure || { pack; die "configure failed (logs in $out/logs.tar.gz)"; }
    # What the measurements need first, then everything else (the unit tests).
    local targets=(accelerate accelerate_cli precision_tests data_loader_tests overhead_train overhead_train_migrated
                   resident_train resident_train_migrated)
    local name
    for name in ${examples//,/ }; do targets+=("example_$name" "example_${name}_migrated"); done
    stage build 420 cmake --build "$bld" -j "$jobs" "${keep_going[@]}" "${targets[@]}"
  fi
  local quickflag=()
  [ $quick = 1 ] && quickflag=(--quick)
  local left=$((t_start + budget - $(date +%s)))
  [ $left -gt 30 ] || left=30
  stage measure $((left + 120)) "$py" "$here/measure.py" --build "$bld" --work "$work/measure" "${quickflag[@]}" \
    --examples "$examples" "${same[@]}" --deadline $((t_start + budget))
  # If time is left: the rest of the build and every unit test on this machine (the tests
  # that need the tool or several machines are not built here). Informative: a failure here
  # is reported, the measurements above stand.
  left=$((t_start + budget - $(date +%s)))
  if [ -n "$reuse" ]; then
    echo "unit tests: not run here (--reuse-build: that build's own tests run them)" | tee -a "$work/measure/summary.txt"
  elif [ $left -gt 150 ]; then
    stage build_rest $((left - 90)) cmake --build "$bld" -j "$jobs" "${keep_going[@]}"
    left=$((t_start + budget + 60 - $(date +%s)))
    [ $left -gt 60 ] && stage ctest $left ctest --test-dir "$bld" -j 8 --timeout 120 \
      --output-junit "$work/ctest-junit.xml"
  else
    echo "unit tests: not run, ${left}s left of the budget" | tee -a "$work/measure/summary.txt"
  fi
  echo "total: $(($(date +%s) - t_start)) s"
  pack
  awk -F, '$2 != 0 {bad = 1} END {exit bad}' "$out/stages.csv"
}

# The CPU dry run (ctest bench_gpu_dry_run), on a build that has the tool: prepare migrates
# regression, overhead_train and resident_train with that build's tool and PCH cache, and the result must be
# what the build migrated itself; then run measures with that build's programs (no second
# build: --reuse-build), tiny sizes.
cmd_dry_run() {
  [ $# = 2 ] || die "usage: run.sh dry-run BUILD OUT"
  local build dry=$2
  build=$(cd "$1" && pwd) || die "no build folder $1"
  [ -x "$build/tool/accel-migrate" ] || die "$build has no tool/accel-migrate"
  rm -rf "$dry"
  mkdir -p "$dry"
  cmd_prepare "$dry/prep" --tool "$build/tool/accel-migrate" --cache-dir "$build/pch-cache" \
    --programs regression,overhead_train,resident_train
  cmp "$dry/prep/migrated/regression/main.cpp" "$build/examples/migrated/regression/main.cpp" ||
    die "prepare migrated examples/regression differently from the build"
  cmp "$dry/prep/migrated/overhead_train/overhead_train.cpp" "$build/bench/overhead_train_migrated.cpp" ||
    die "prepare migrated bench/overhead_train.cpp differently from the build"
  cmp "$dry/prep/migrated/resident_train/resident_train.cpp" "$build/bench/resident_train_migrated.cpp" ||
    die "prepare migrated bench/resident_train.cpp differently from the build"
  GPU_RUN_WORK=$dry/work cmd_run "$dry/prep" "$dry/results" --quick --reuse-build "$build" --examples regression \
    --require-same --budget 240
}

case ${1:-} in
  prepare) shift; cmd_prepare "$@" ;;
  run) shift; cmd_run "$@" ;;
  dry-run) shift; cmd_dry_run "$@" ;;
  *) die "usage: run.sh prepare PREP [options] | run PREP OUT [options] | dry-run BUILD OUT (see the header)" ;;
esac
