#!/usr/bin/env bash
# By hand, not in the test command (it downloads LibTorch and its dependencies, hundreds of
# MB, on every run): is the package's Depends line complete? A fresh Debian root with only
# the base system (debootstrap --variant=minbase), `apt-get install ./package.deb` there
# (Depends and Recommends from Debian's archive, as a user's `apt install` does), then
# accel-migrate examples/regression, build it with pkg-config and with CMake, run it on 2
# processes with the installed launcher (test/install/in-clean-root.sh, as install.deb). install.deb (test/install/run-deb.sh) checks the
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
# The same steps as the test install.deb, with apt-get instead of dpkg -i.
cp "$here/test/install/in-clean-root.sh" "$work/root/tmp/in/"
cp /etc/resolv.conf "$work/root/etc/resolv.conf"
unshare --mount --propagation private bash -c '
  r=$1
  for d in proc dev sys; do mount --rbind "/$d" "$r/$d"; done
  chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive \
    ACCEL_DEB_INSTALL=apt OMP_NUM_THREADS=1 bash /tmp/in/in-clean-root.sh
' _ "$work/root"
echo "check-deb-fresh-root: done in $((SECONDS - t0)) s (the root is left in $work for inspection)"
