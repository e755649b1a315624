#!/usr/bin/env bash
# The test command: installs what the project needs (Debian packages), builds everything
# from scratch in ./build (ccache keeps rebuilds fast), and runs every test.
#   bash scripts/test.sh            # everything
#   ACCEL_TEST_REGEX=lit bash scripts/test.sh   # only tests whose name matches
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

bash scripts/bootstrap.sh
echo "== configure"
cmake --preset ci
echo "== build ($(nproc) cores)"
cmake --build --preset ci
echo "== build done in $(( $(date +%s) - start )) s"
echo "== test"
export OMP_NUM_THREADS=1
ctest --preset ci ${ACCEL_TEST_REGEX:+-R "$ACCEL_TEST_REGEX"} --timeout 900
echo "== all done in $(( $(date +%s) - start )) s"
