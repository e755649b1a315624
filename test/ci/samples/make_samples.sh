#!/usr/bin/env bash
# Makes ctest-junit.xml and ctest.log in this directory: the real output of this machine's
# ctest (3.25 on Debian 12) over a scratch project whose tests skip in every way the suite's
# tests can (GoogleTest's GTEST_SKIP and DISABLED_, Python unittest's skipTest and
# skipUnless, lit's REQUIRES, SKIP_RETURN_CODE 77, the DISABLED property) plus a pass, a slow
# pass and a failure. test/ci/test_report_selftest.py checks scripts/ci/test_report.py on
# them. Rerun when ctest's, GoogleTest's or lit's output format changes (a new Debian):
#   bash test/ci/samples/make_samples.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/g.cpp" <<'CPP'
#include <gtest/gtest.h>
#include <iostream>
TEST(Suite, Runs) { std::cout << "hello from Runs\n"; }
TEST(Suite, NeedsCuda) { GTEST_SKIP() << "needs a CUDA device"; }
TEST(Suite, Multi) { GTEST_SKIP() << "cannot mount a tmpfs here: mount: permission denied\nsecond line"; }
TEST(Suite, NoReason) { GTEST_SKIP(); }
TEST(Suite, DISABLED_Old) {}
CPP
g++ -O0 "$work/g.cpp" -o "$work/precision_tests" -lgtest -lgtest_main -pthread
cat > "$work/ut.py" <<'PY'
import os, sys, unittest
class LaunchStylesTests(unittest.TestCase):
    def test_accelerate_launch(self):
        print("launching", flush=True)
    def test_mpirun(self):
        print("looking for mpirun", flush=True)  # lands between ' ... ' and 'skipped'
        self.skipTest("no mpirun (Debian's openmpi-bin)")
@unittest.skipUnless(os.environ.get("NOT_SET_ANYWHERE"), "runtime_worker not built (runtime off)")
class DivergenceTests(unittest.TestCase):
    def test_divergence(self): pass
if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
PY
mkdir -p "$work/lit"
cat > "$work/lit/lit.cfg.py" <<'PY'
import os
import lit.formats
config.name = "accel-migrate"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".test"]
config.test_source_root = config.test_exec_root = os.path.dirname(__file__)
PY
printf 'RUN: true\n' > "$work/lit/ok.test"
printf 'REQUIRES: real-torch-2\nRUN: true\n' > "$work/lit/torch2_idioms.test"
cat > "$work/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(samples NONE)
enable_testing()
add_test(NAME precision_tests COMMAND $work/precision_tests)
add_test(NAME multinode.LaunchStyles COMMAND python3 $work/ut.py)
add_test(NAME multinode.Failures COMMAND sh -c "echo 'SKIPPED: two hosts made of network namespaces are not available here: not root'; exit 77")
set_tests_properties(multinode.Failures PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME accel_migrate_lit COMMAND python3 /usr/lib/llvm-16/build/utils/lit/lit.py -sv $work/lit)
add_test(NAME disabled_example COMMAND true)
set_tests_properties(disabled_example PROPERTIES DISABLED TRUE)
add_test(NAME e2e.fidelity COMMAND sh -c "sleep 2; echo PASSED fidelity")
add_test(NAME launcher.Cli COMMAND sh -c "echo 'AssertionError: 1 != 0'; exit 1")
CMAKE
cmake -S "$work" -B "$work/b" -G Ninja > /dev/null
# As scripts/test.sh runs ctest (run_ctest); ctest fails because launcher.Cli does.
LIT_OPTS="--show-unsupported --show-skipped --show-excluded" \
  ctest --test-dir "$work/b" --output-junit "$work/ctest-junit.xml" --test-output-size-passed 33554432 \
  > "$work/ctest.log" 2>&1 || true
# The scratch directory's name is not part of the format: make the files stable.
sed "s|$work|/tmp/samples|g" "$work/ctest-junit.xml" > "$here/ctest-junit.xml"
sed "s|$work|/tmp/samples|g" "$work/ctest.log" > "$here/ctest.log"
echo "wrote $here/ctest-junit.xml and $here/ctest.log"
