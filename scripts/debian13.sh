#!/usr/bin/env bash
# Runs a command inside a cached Debian 13 "trixie" root (LibTorch 2.6, LLVM/Clang 19,
# g++ 14), with this clone bind-mounted at the same path, so that the project builds and
# tests against the LibTorch and LLVM users have without touching the host.
#
#   bash scripts/debian13.sh                     # make (or check) the root, then a shell in it
#   bash scripts/debian13.sh bash scripts/test.sh --here
#   bash scripts/debian13.sh --make              # only make the root
#   bash scripts/debian13.sh --path              # print where the root is
#
# The root lives outside the clone and is reused between runs:
#   $ACCEL_DEBIAN13_ROOT, else ${XDG_CACHE_HOME:-/var/cache}/accelerate/debian13-root
# It is made once (debootstrap + apt, about 8 minutes and 1.5 GB). When the package list
# below changes, the packages an existing root lacks are installed into it in place (CI
# keeps the root in a cache: a new package costs seconds, not a new root); the root is
# remade only for another suite or when that install fails. A root whose making was
# interrupted is never used: it is built under a temporary name and renamed when complete;
# an interrupted install keeps the old stamp, so the next run installs again.
# Needs root (debootstrap, chroot, mounts) and Debian's archive; mounts are made in a
# private mount namespace (unshare), so they disappear with the command, on every exit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

PACKAGES=(
  # binutils-gold: the ci preset links with gold (cmake/AccelLinker.cmake); Debian 13 ships
  # it apart from binutils (Debian 12's binutils has it)
  g++ binutils-gold cmake ninja-build ccache pkg-config git ca-certificates dpkg-dev file
  libtorch-dev libgloo-dev libopenblas0-pthread libopenblas-dev python3-torch python3
  clang-19 libclang-19-dev llvm-19-dev llvm-19-tools clang-tidy-19 clang-tools-19 libclang-rt-19-dev
  libyaml-cpp-dev libgtest-dev libgmock-dev libfmt-dev libspdlog-dev libxxhash-dev nlohmann-json3-dev libboost-dev libssl-dev
  python3-protobuf python3-crc32c
  iproute2 procps
  # multinode.Slurm (a real slurmctld/slurmd, test/multinode/slurm_cluster.py); Debian 13's
  # slurm-wlm-basic-plugins needs a sysusers provider: the standalone one, not all of systemd
  munge slurmctld slurmd slurm-client systemd-standalone-sysusers
)
SUITE=trixie
cache=${XDG_CACHE_HOME:-/var/cache}/accelerate
root=${ACCEL_DEBIAN13_ROOT:-$cache/debian13-root}
stamp_text="$SUITE ${PACKAGES[*]}"

die() { echo "debian13: $*" >&2; exit 2; }

mirror() {
  # The host's own Debian mirror: the only archive these machines reach.
  local m
  m=$(grep -hoE '^URIs: *\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}')
  [ -n "$m" ] || m=$(grep -hoE '^deb +\S+' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{print $2}')
  echo "${m:-http://deb.debian.org/debian}"
}

root_ok() { [ -f "$root/.accel-stamp" ] && [ "$(cat "$root/.accel-stamp")" = "$stamp_text" ]; }

# Installs packages into root $1 with apt-get, in a private mount namespace.
apt_in() {
  unshare --mount --propagation private bash -euc '
    r=$1; shift
    mount -t proc proc "$r/proc"; mount --rbind /dev "$r/dev"
    cp -L /etc/resolv.conf "$r/etc/resolv.conf"
    export DEBIAN_FRONTEND=noninteractive LC_ALL=C
    chroot "$r" dpkg --configure -a
    chroot "$r" apt-get update -qq
    chroot "$r" apt-get install -y -qq --no-install-recommends "$@"
    chroot "$r" apt-get clean' _ "$@"
}

# The root's stamp names the same suite: only the package list differs.
same_suite() { [ -f "$root/.accel-stamp" ] && [ "$(cut -d' ' -f1 "$root/.accel-stamp")" = "$SUITE" ]; }

# Installs the packages of the list that the existing root lacks, then rewrites its stamp.
# Fails (status 1) when apt-get does; the caller then remakes the root.
update_root() {
  [ "$(id -u)" -eq 0 ] || die "updating the root needs root (chroot)"
  local missing=() p t0=$SECONDS
  for p in "${PACKAGES[@]}"; do
    chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "debian13: the package list changed: installing ${missing[*]} into the existing root at $root"
    apt_in "$root" "${missing[@]}" > "$cache/apt.log" 2>&1 || { tail -20 "$cache/apt.log" >&2; return 1; }
    echo "debian13: root updated in $((SECONDS - t0)) s"
  fi
  echo "$stamp_text" > "$root/.accel-stamp"
}

make_root() {
  [ "$(id -u)" -eq 0 ] || die "making the root needs root (debootstrap and chroot)"
  command -v debootstrap > /dev/null || {
    echo "debian13: installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap > /dev/null
  }
  local tmp="$root.partial.$$" t0=$SECONDS
  mkdir -p "$(dirname "$root")"
  rm -rf "$root".partial.*
  trap 'rm -rf "'"$tmp"'"' EXIT
  echo "debian13: making the Debian 13 root at $root (first time only: about 8 minutes)"
  echo "debian13: [1/2] debootstrap --variant=minbase $SUITE ($(mirror))"
  debootstrap --variant=minbase "$SUITE" "$tmp" "$(mirror)" > "$cache/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/debootstrap.log" >&2; die "debootstrap failed (log: $cache/debootstrap.log)"; }
  echo "debian13: [2/2] apt-get install ${#PACKAGES[@]} packages (about 450 MB) after $((SECONDS - t0)) s"
  apt_in "$tmp" "${PACKAGES[@]}" > "$cache/apt.log" 2>&1 \
    || { tail -20 "$cache/apt.log" >&2; die "apt-get in the root failed (log: $cache/apt.log)"; }
  echo "$stamp_text" > "$tmp/.accel-stamp"
  rm -rf "$root"
  mv "$tmp" "$root"
  trap - EXIT
  echo "debian13: root ready in $((SECONDS - t0)) s"
}

ensure_root() {
  root_ok && return 0
  # One maker at a time: a second run waits, then finds the root ready.
  mkdir -p "$cache"
  exec 9> "$cache/root.lock"
  flock 9
  if ! root_ok; then
    if ! { same_suite && update_root; }; then
      same_suite && echo "debian13: installing into the existing root failed (log: $cache/apt.log): making it again"
      make_root
    fi
  fi
  exec 9>&-
}

case "${1:-}" in
  --path) echo "$root"; exit 0 ;;
  --make) ensure_root; exit 0 ;;
esac

[ "$(id -u)" -eq 0 ] || die "running in the root needs root (chroot and mounts); try sudo"
ensure_root
[ $# -gt 0 ] || set -- bash

# The clone appears at the same path inside the root, so that paths in build trees,
# compile_commands.json and test logs are the same inside and out. ccache keeps its own
# directory for this root (another compiler), outside the clone.
ccache_dir=${ACCEL_DEBIAN13_CCACHE_DIR:-$cache/ccache-debian13}
mkdir -p "$ccache_dir"
exec unshare --mount --propagation private bash -euc '
  r=$1 src=$2 cc=$3; shift 3
  mount -t proc proc "$r/proc"
  # Read-only /sys: glibc reads the transparent-huge-page mode there, without which
  # GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (scripts/test.sh) does nothing in the root.
  mount -t sysfs -o ro sysfs "$r/sys"
  mount --rbind /dev "$r/dev"
  mount -t tmpfs -o size=50% tmpfs "$r/tmp"
  cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
  mkdir -p "$r$src" "$r/var/cache/ccache"
  mount --bind "$src" "$r$src"
  mount --bind "$cc" "$r/var/cache/ccache"
  exec chroot "$r" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    LANG=C.UTF-8 TERM="${TERM:-dumb}" CCACHE_DIR=/var/cache/ccache ACCEL_IN_DEBIAN13=1 \
    ${CI:+CI=$CI} ${ACCEL_TEST_REGEX:+ACCEL_TEST_REGEX=$ACCEL_TEST_REGEX} \
    ${GLIBC_TUNABLES:+GLIBC_TUNABLES=$GLIBC_TUNABLES} \
    bash -c "cd \"\$0\" && exec \"\$@\"" "$src" "$@"' _ "$root" "$here" "$ccache_dir" "$@"
