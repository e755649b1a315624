#!/usr/bin/env bash
# What %check-rule runs: the one-line form of a rule test, in the style of clang-tidy's
# check_clang_tidy.py. Migrates the test file against the stub LibTorch headers (and
# migrates the output again: it must be a fixed point, see fixpoint.sh), then checks the
# migrated text against the file's CHECK lines (its own RUN/CHECK/DIAG comments removed
# first) and, when the file has DIAG lines, the warnings against them. Patterns use
# [[@LINE]]-relative line numbers, never fixed ones.
# The output is compiled: the second migration parses it with clang against the same stub
# headers (and the stub runtime header, Inputs/accelerate) with errors fatal, since the tool
# refuses a file that does not compile. Extra flags (e.g. -std=c++14) apply to both runs.
#   check_rule.sh ACCEL_MIGRATE SOURCE TMP STUB_DIR [extra accel-migrate flags after --]
set -euo pipefail
tool=$1 src=$2 tmp=$3 stubs=$4; shift 4
here=$(dirname "$0")
bash "$here/fixpoint.sh" "$tool" "$src" -o "$tmp.cpp" -- -isystem "$stubs" "$@" 2> "$tmp.err" \
  || { cat "$tmp.err" >&2; echo "check_rule: accel-migrate failed on $src" >&2; exit 1; }
grep -v -E '^[[:space:]]*// (RUN|CHECK|DIAG|REQUIRES)[A-Z-]*:' "$tmp.cpp" | FileCheck "$src"
if grep -q -E '^[[:space:]]*// DIAG(-[A-Z]+)?:' "$src"; then
  FileCheck "$src" --check-prefix=DIAG < "$tmp.err"
else
  # No DIAG lines: the rule must not warn either (a warning is a behaviour to pin down).
  if grep -q "warning:" "$tmp.err"; then
    cat "$tmp.err" >&2
    echo "check_rule: $src has no DIAG lines but the tool warned" >&2
    exit 1
  fi
fi
