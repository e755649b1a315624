#!/usr/bin/python3
"""Checks that the shared-memory all-reduce's kernel (runtime/src/shm/shm_reduce.cpp) was
compiled to packed (SIMD) floating-point instructions, whatever the build type.

The kernel runs over every gradient at every step of a multi-process run on one host. clang
does not vectorise at -O1 (the ci preset's level) and GCC not at -O2 before version 12, so
runtime/CMakeLists.txt compiles the file at -O3; a scalar kernel made the 2-process MLP step
1.07x slower (results/2026-11-30-shm-reduce-O1/). This test fails when that setting is lost.

    check_vectorised.py --objdump OBJDUMP --objects 'a.o|b.o|...' --name shm_reduce.cpp.o

Reads the disassembly of the one object whose path ends with --name and requires the packed
forms of the float sum, divide, max and min (addps/divps/maxps/minps or their VEX forms).
The scalar forms alone fail. Only x86-64 is known (the project builds for Debian amd64): an
object of another architecture fails with a message saying so, never passes unread.
"""
import argparse
import re
import subprocess
import sys

PACKED = {op: re.compile(r"\sv?%sps\s" % op) for op in ("add", "div", "max", "min")}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--objdump", required=True)
    p.add_argument("--objects", required=True, help="the target's objects, separated by |")
    p.add_argument("--name", required=True, help="the end of the object's path")
    a = p.parse_args()
    found = [o for o in a.objects.split("|") if o.endswith(a.name)]
    if len(found) != 1:
        sys.exit("check_vectorised: expected one object ending with %s, found %d" % (a.name, len(found)))
    out = subprocess.run([a.objdump, "-d", "--no-show-raw-insn", found[0]], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        sys.exit("check_vectorised: %s failed:\n%s" % (a.objdump, out.stdout[-2000:]))
    fmt = re.search(r"file format (\S+)", out.stdout)
    if not fmt or "x86-64" not in fmt.group(1):
        sys.exit("check_vectorised: only x86-64 objects are known, %s is %s" % (
            found[0], fmt.group(1) if fmt else "of an unknown format"))
    counts = {op: len(rx.findall(out.stdout)) for op, rx in PACKED.items()}
    missing = [op for op, n in counts.items() if n == 0]
    summary = ", ".join("%s %d" % kv for kv in counts.items())
    if missing:
        print("FAILED: %s has no packed float %s (packed instructions found: %s).\n"
              "It was not vectorised: is its source still compiled at -O3 "
              "(COMPILE_OPTIONS in runtime/CMakeLists.txt)?" % (found[0], "/".join(missing), summary))
        return 1
    print("ok: %s is vectorised (packed instructions: %s)" % (found[0], summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
