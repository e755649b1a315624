#!/usr/bin/env bash
# Installs every Debian package the project needs, and nothing from anywhere else.
# Idempotent: a second run only checks. Usage: scripts/bootstrap.sh
set -euo pipefail

PACKAGES=(
  # toolchain and build
  cmake ninja-build ccache pkg-config g++ git
  # the Debian package (cpack -G DEB, test install.deb): dpkg-shlibdeps and file for Depends
  dpkg-dev file
  # accel-migrate: clang/LLVM 16 libraries, tools for lit tests, clang-tidy for the module
  clang-16 libclang-16-dev llvm-16-dev llvm-16-tools clang-tidy-16 clang-tools-16
  # scripts/lint.sh: the project's own format and clang-tidy checks
  clang-format-16
  # fuzz/ (fuzz.smoke, scripts/fuzz.sh): libFuzzer and the sanitizers' runtimes for clang 16
  libclang-rt-16-dev
  # runtime: LibTorch with c10d; Gloo headers are a separate package
  libtorch-dev libgloo-dev
  # fast BLAS for LibTorch: without the pthread variant LibTorch falls back to the reference BLAS
  libopenblas0-pthread libopenblas-dev
  # launcher config, tests
  libyaml-cpp-dev libgtest-dev libgmock-dev libfmt-dev
  # launcher: the job token's HMAC-SHA256 and random nonces (OpenSSL's libcrypto)
  libssl-dev
  # runtime: checkpoint files' content hashes (XXH3); experiment tracking (JSON lines,
  # TensorBoard records' CRC-32C)
  libxxhash-dev nlohmann-json3-dev libboost-dev
  # runtime and launcher: levelled messages (accelerate/logging.h)
  libspdlog-dev
  # test/tracking: TensorBoard event files read back by protobuf and crc32c, not our code
  python3-protobuf python3-crc32c
  # reference Python DDP (torchrun) for comparisons, lit's python
  python3-torch python3
  # multi-node tests (test/multinode): network namespaces (iproute2) and mpirun (Open MPI)
  iproute2 openmpi-bin
  # multinode.Slurm runs jobs under a real Slurm (slurmctld, one slurmd per namespace host,
  # srun and sbatch from slurm-client) authenticated by munge; the test writes its own
  # slurm.conf and munge key in a temporary directory and starts and stops the daemons
  # itself (apt does not start them in a container: policy-rc.d; nothing is configured)
  munge slurmctld slurmd slurm-client
  # bench/run.py draws its plot (docs/img/benchmarks.png) with matplotlib
  python3-matplotlib
  # scripts/debian13.sh: the Debian 13 root (LibTorch 2.6, LLVM 19) the tests also run in
  debootstrap
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
# apt's own output (a thousand lines of unpacking) goes to a log; the newcomer sees one line
# per phase, and the log's tail when something fails.
log=${TMPDIR:-/tmp}/accelerate-bootstrap.log
echo "bootstrap: installing ${#missing[@]} package(s) (about 1 minute on a fresh machine; log: $log):"
echo "  ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
t0=$SECONDS
{ $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } > "$log" 2>&1 \
  || { tail -25 "$log" >&2; echo "bootstrap: apt-get failed (full log: $log)" >&2; exit 1; }
echo "bootstrap: done in $((SECONDS - t0)) s"
