#!/usr/bin/env bash
# The Debian package in a clean root (issue 31 item 5; docs/install.md):
# 1. cpack -G DEB in the build tree;
# 2. a root that is this machine's system with nothing of the project in it: an overlay of /
#    (writes go to a tmpfs; the host is not touched) in a private mount namespace, with the
#    source and build trees, /tmp, /root and the Debian 13 root cache hidden under empty
#    tmpfs mounts, entered with chroot;
# 3. dpkg -i the package there (it refuses a Depends that is not installed);
# 4. migrate examples/regression with the installed /usr/bin/accel-migrate, build it against
#    the installed package twice, with CMake (find_package(Accelerate)) and with pkg-config
#    (g++ $(pkg-config --cflags --libs accelerate)), run both through the installed
#    /usr/bin/accelerate on 2 processes: the same `final:` line from both.
# What it does not show: that the Depends line is complete on a machine without LibTorch
# (every dependency is installed here already); docs/install.md says how that was checked.
#   run-deb.sh BUILD_DIR SOURCE_DIR WORK
set -euo pipefail
build=$1; src=$2; work=$3
# The mounts below must not reach the caller's namespace: private propagation. Inside
# scripts/debian13.sh's chroot "/" is no mount point, so its propagation cannot be changed;
# there the caller's namespace is already private (debian13.sh unshares it so), and a copy
# of private mounts propagates nowhere.
prop=private
if [ "$(id -u)" != 0 ]; then
  echo "install.deb: needs root (mount namespace, overlay, chroot): skipped"; exit 77
elif ! unshare --mount --propagation private true 2> /dev/null; then
  prop=unchanged
  unshare --mount --propagation unchanged true 2> /dev/null \
    || { echo "install.deb: needs mount namespaces (overlay, chroot): skipped"; exit 77; }
fi
rm -rf "$work"; mkdir -p "$work"
(cd "$build" && cpack -G DEB -B "$work/cpack" > "$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/cpack/*.deb)
echo "install.deb: $(basename "$deb"), $(dpkg-deb -f "$deb" Installed-Size) KiB installed"
echo "install.deb: Depends: $(dpkg-deb -f "$deb" Depends)"
mkdir -p "$work/in"
cp "$deb" "$work/in/package.deb"
cp "$src/examples/regression/main.cpp" "$work/in/main.cpp"
cp "$(dirname "$0")/in-clean-root.sh" "$work/in/"
unshare --mount --propagation "$prop" --fork bash -c '
  set -euo pipefail
  work=$1; t=$work/t
  mkdir -p "$t" && mount -t tmpfs tmpfs "$t"
  mkdir -p "$t/upper" "$t/wd" "$t/root"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$t/upper,workdir=$t/wd" "$t/root"
  r=$t/root
  for d in proc dev sys; do mount --rbind "/$d" "$r/$d"; done
  for d in work tmp root var/cache/accelerate; do
    [ -d "$r/$d" ] && mount -t tmpfs tmpfs "$r/$d"
  done
  [ -n "${XDG_CACHE_HOME:-}" ] && [ -d "$r$XDG_CACHE_HOME" ] && mount -t tmpfs tmpfs "$r$XDG_CACHE_HOME"
  mkdir -p "$r/tmp/in" && cp -r "$work/in/." "$r/tmp/in/"
  chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root OMP_NUM_THREADS=1 bash /tmp/in/in-clean-root.sh
' bash "$work"
