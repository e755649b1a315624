#!/usr/bin/env bash
# cmake --preset PRESET [ARGS...], once more when CMake had to delete the tree's cache.
#   scripts/configure.sh PRESET [ARGS...]
# A build tree configured with another compiler (Debian 12's trees were GCC's until the ci
# preset moved to clang 16, 2026-11-30) makes CMake delete its cache and configure afresh, and
# that first configure leaves the preset's other variables unset (an empty CMAKE_BUILD_TYPE,
# CMake's -O3 flags; results/2026-11-30-cmake-compiler-change.txt); the next configure applies
# them. Output: CMake's.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(cmake --preset "$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ $rc -eq 0 ] && grep -q 'You have changed variables that require your cache to be deleted' <<< "$out"; then
  echo "configure: the cache was deleted (another compiler): configuring again so that the preset's settings apply"
  cmake --preset "$@"; rc=$?
fi
exit $rc
