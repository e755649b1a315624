#!/usr/bin/env bash
# Installs the build into a fresh prefix, builds test/install/consumer against the
# installed package in a separate CMake project, runs it, and checks the install layout.
set -euo pipefail
build_dir=$1; src_dir=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
for f in bin/accelerate bin/accel-migrate include/accelerate/accelerate.h \
         include/accelerate/accelerator.h include/accelerate/version.h \
         include/accelerate/accelerator/accelerator.h include/accelerate/core/version.h \
         include/accelerate/data/detail/loader_position.h \
         lib/cmake/Accelerate/AccelerateConfig.cmake lib/libaccelerate.so; do
  if [ ! -e "$work/prefix/$f" ]; then
    if [ "$f" = bin/accel-migrate ] && [ "${ACCEL_EXPECT_TOOL:-ON}" = OFF ]; then continue; fi
    echo "missing from the install: $f"; exit 1
  fi
done
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src_dir/consumer" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
      -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# The exported link options name libstdc++ before LibTorch (runtime/CMakeLists.txt: LibTorch's
# pip wheel exports copies of std::filesystem that must not win).
needed=$(readelf -d "$work/build/consumer" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
first_torch=$(echo "$needed" | grep -n -m1 '^libtorch\|^libc10' | cut -d: -f1)
stdcxx=$(echo "$needed" | grep -n -m1 '^libstdc++' | cut -d: -f1)
if [ -z "$stdcxx" ] || [ -z "$first_torch" ] || [ "$stdcxx" -gt "$first_torch" ]; then
  echo "the consumer's NEEDED list does not name libstdc++ before LibTorch:"; echo "$needed"; exit 1
fi
env -u RANK -u WORLD_SIZE OMP_NUM_THREADS=1 "$work/build/consumer"
