#!/usr/bin/env bash
# Inside the clean root of run-deb.sh: install the package, migrate, build two ways, run.
set -euo pipefail
cd /tmp/in
if [ -e /usr/bin/accelerate ] || [ -e /usr/bin/accel-migrate ]; then
  echo "FAIL: the root is not clean: /usr/bin/accelerate or accel-migrate is there before the package"; exit 1
fi
# run-deb.sh: dpkg -i (every dependency is there already; dpkg refuses one that is not).
# scripts/check-deb-fresh-root.sh: apt-get from Debian's archive, as a user installs it.
if [ "${ACCEL_DEB_INSTALL:-dpkg}" = apt ]; then
  apt-get update -qq
  before=$(dpkg-query -W -f='${Package}\n' | wc -l)
  apt-get install -y -qq ./package.deb > apt.log 2>&1 || { tail -30 apt.log; echo "FAIL: apt-get install"; exit 1; }
  echo "apt-get install ./package.deb: $(($(dpkg-query -W -f='${Package}\n' | wc -l) - before)) packages installed with it"
else
  dpkg -i package.deb > dpkg.log 2>&1 || { cat dpkg.log; echo "FAIL: dpkg -i"; exit 1; }
fi
echo "installed: $(accelerate --version), accel-migrate at $(command -v accel-migrate)"
accel-migrate main.cpp -o migrated.cpp > migrate.log 2>&1 || { cat migrate.log; echo "FAIL: accel-migrate"; exit 1; }
grep -q "accelerate::Accelerator" migrated.cpp || { echo "FAIL: nothing migrated"; exit 1; }
mkdir -p cmake-app
cp migrated.cpp cmake-app/main.cpp
cat > cmake-app/CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.22)
project(app CXX)
find_package(Accelerate REQUIRED CONFIG)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE Accelerate::accelerate)
CM
# Both builds at once: each is one compile of a file that includes LibTorch.
( cmake -S cmake-app -B cmake-app/build > cmake.log 2>&1 && cmake --build cmake-app/build >> cmake.log 2>&1 ) &
cmake_pid=$!
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
g++ migrated.cpp -o pc-app $(pkg-config --cflags --libs accelerate) > pkgconfig.log 2>&1 &
pc_pid=$!
wait $cmake_pid || { cat cmake.log; echo "FAIL: the CMake build against the package"; exit 1; }
wait $pc_pid || { cat pkgconfig.log; echo "FAIL: the pkg-config build against the package"; exit 1; }
run() {  # program -> its final line on 2 processes under the installed launcher
  accelerate launch --cpu --num_processes 2 --main_process_port 0 --split_batches "$1" \
    --epochs 1 --batch-size 64 --train-size 512 --test-size 256 --out "out-$(basename "$1")" > "run-$(basename "$1").log" 2>&1 \
    || { cat "run-$(basename "$1").log"; echo "FAIL: $1 on 2 processes"; exit 1; }
  grep -E '^(\[rank0\]: )?final:' "run-$(basename "$1").log" | sed 's/^\[rank0\]: //'
}
a=$(run cmake-app/build/app)
b=$(run ./pc-app)
echo "CMake build:      $a"
echo "pkg-config build: $b"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: the two builds do not print the same final line"; exit 1; }
echo "PASSED install.deb"
