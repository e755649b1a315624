#!/usr/bin/python3
"""Checks that the shared-memory all-reduce's kernel (runtime/src/shm/shm_reduce.cpp) was
compiled to packed (SIMD) floating-point instructions, whatever the build type.

The kernel runs over every gradient at every step of a multi-process run on one host. clang
does not vectorise at -O1 (the ci preset's level) and GCC not at -O2 before version 12, so
runtime/CMakeLists.txt compiles the file at -O3; a scalar kernel made the 2-process MLP step
1.07x slower (results/2026-11-30-shm-reduce-O1/). This test fails when that setting is lost.

    check_vectorised.py --objdump OBJDUMP --objects 'a.o|b.o|...' --name shm_reduce.cpp.o

Reads the disassembly of the one object whose path ends with --name and requires the packed
forms of the float sum, divide, max and min (x86-64: addps/divps/maxps/minps or their VEX
forms; AArch64: fadd/fdiv/fmax/fmin on .4s vectors). The scalar forms alone fail.
"""
import argparse
import re
import subprocess
import sys

PACKED = {
    "x86-64": {op: re.compile(r"\sv?%sps\s" % op) for op in ("add", "div", "max", "min")},
    "aarch64": {op: re.compile(r"\sf%s\s+v\d+\.4s" % op) for op in ("add", "div", "max", "min")},
}


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
    arch = "x86-64" if fmt and "x86-64" in fmt.group(1) else "aarch64" if fmt and "aarch64" in fmt.group(1) else None
    if arch is None:
        sys.exit("check_vectorised: no packed-instruction patterns for %s (%s)" % (
            fmt.group(1) if fmt else "an unknown format", found[0]))
    counts = {op: len(rx.findall(out.stdout)) for op, rx in PACKED[arch].items()}
    missing = [op for op, n in counts.items() if n == 0]
    summary = ", ".join("%s %d" % kv for kv in counts.items())
    if missing:
        print("FAILED: %s has no packed float %s (%s; packed instructions found: %s).\n"
              "The kernel was not vectorised: is shm_reduce.cpp still compiled at -O3 "
              "(runtime/CMakeLists.txt, COMPILE_OPTIONS)?" % (found[0], "/".join(missing), arch, summary))
        return 1
    print("ok: %s is vectorised (%s; packed instructions: %s)" % (found[0], arch, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
