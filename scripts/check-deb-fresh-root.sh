#!/usr/bin/env bash
# By hand, not in the test command (it downloads LibTorch and its dependencies, hundreds of
# MB, on every run): is the package's Depends line complete? A fresh Debian root with only
# the base system (debootstrap --variant=minbase), `apt-get install ./package.deb` there
# (Depends and Recommends from Debian's archive, as a user's `apt install` does), then
# accel-migrate examples/regression, build it with pkg-config and with CMake, run it on 2
# processes with the installed launcher. install.deb (test/install/run-deb.sh) checks the
# rest on every run; docs/install.md has the result of the last run of this script.
#   scripts/check-deb-fresh-root.sh PACKAGE.deb [SUITE]      (root; SUITE: bookworm)
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "check-deb-fresh-root: needs root (debootstrap, chroot)" >&2; exit 2; }
deb=$(readlink -f "${1:?usage: scripts/check-deb-fresh-root.sh PACKAGE.deb [SUITE]}")
suite=${2:-bookworm}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/deb-fresh.XXXXXX)
echo "check-deb-fresh-root: debootstrap --variant=minbase $suite into $work/root"
t0=$SECONDS
debootstrap --variant=minbase "$suite" "$work/root" http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log"; exit 1; }
echo "check-deb-fresh-root: base system in $((SECONDS - t0)) s"
mkdir -p "$work/root/tmp/in"
cp "$deb" "$work/root/tmp/in/package.deb"
cp "$here/examples/regression/main.cpp" "$work/root/tmp/in/main.cpp"
cp /etc/resolv.conf "$work/root/etc/resolv.conf"
cat > "$work/root/tmp/in/inside.sh" <<'INSIDE'
set -euo pipefail
cd /tmp/in
apt-get update -qq
before=$(dpkg-query -W -f='${Package}\n' | wc -l)
apt-get install -y -qq ./package.deb > apt.log 2>&1 || { tail -30 apt.log; echo "FAIL: apt-get install"; exit 1; }
echo "apt-get install ./package.deb: $(( $(dpkg-query -W -f='${Package}\n' | wc -l) - before )) packages installed with it"
accel-migrate main.cpp -o migrated.cpp > migrate.log 2>&1 || { cat migrate.log; echo "FAIL: accel-migrate"; exit 1; }
g++ migrated.cpp -o pc-app $(pkg-config --cflags --libs accelerate) || { echo "FAIL: pkg-config build"; exit 1; }
mkdir -p app && cp migrated.cpp app/main.cpp
printf 'cmake_minimum_required(VERSION 3.22)\nproject(app CXX)\nfind_package(Accelerate REQUIRED CONFIG)\nadd_executable(app main.cpp)\ntarget_link_libraries(app PRIVATE Accelerate::accelerate)\n' > app/CMakeLists.txt
cmake -S app -B app/build > cmake.log 2>&1 && cmake --build app/build >> cmake.log 2>&1 || { cat cmake.log; echo "FAIL: CMake build"; exit 1; }
for exe in ./pc-app app/build/app; do
  OMP_NUM_THREADS=1 accelerate launch --cpu --num_processes 2 --main_process_port 0 --split_batches "$exe" \
    --epochs 1 --batch-size 64 --train-size 512 --test-size 256 --out "out-$(basename "$exe")" 2>&1 | grep "final:"
done
echo "PASSED check-deb-fresh-root"
INSIDE
unshare --mount --propagation private bash -c '
  r=$1
  for d in proc dev sys; do mount --rbind "/$d" "$r/$d"; done
  chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive bash /tmp/in/inside.sh
' _ "$work/root"
echo "check-deb-fresh-root: done in $((SECONDS - t0)) s (the root is left in $work for inspection)"
