#!/usr/bin/env python3
"""End-to-end test of accel-migrate's project mode on a real CMake + LibTorch project.

1. Copy app/ (two sources sharing include/trainer.h, a CMakeLists.txt with
   find_package(Torch)) and configure it with CMAKE_EXPORT_COMPILE_COMMANDS=ON in a build
   directory INSIDE the copy (as users do); the original is never built.
2. Run the INSTALLED accel-migrate in project mode with -j 2. It must exit 0, leave the
   input untouched, migrate both sources, the header (once) and the CMakeLists.txt, and not
   copy the build directory.
3. Build the out-root with plain CMake, CMAKE_PREFIX_PATH = the installed prefix.
4. Run the migrated program through the installed `accelerate launch --cpu` on 1 process
   (batch 2B) and on 2 processes (batch B): the `final:` line (test MSE over the whole test
   set, sum of the parameters) must agree to 1e-4 relative.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_example import run, BUILD_TYPE  # noqa: E402  (one command runner and build type for every e2e driver)

BATCH = 32
RTOL = 1e-4
ATOL = 1e-6


def tree_digest(root, skip):
    h = hashlib.sha256()
    for d, dirs, files in sorted(os.walk(root)):
        dirs[:] = sorted(x for x in dirs if os.path.join(d, x) != skip)
        for f in sorted(files):
            p = os.path.join(d, f)
            h.update(os.path.relpath(p, root).encode())
            h.update(open(p, "rb").read())
    return h.hexdigest()


def final_values(text, what):
    lines = [l for l in text.splitlines() if l.startswith("final: ")]
    if len(lines) != 1:
        print(text[-3000:])
        sys.exit(f"FAILED: {len(lines)} 'final:' lines from {what} (expected one, from the "
                 "main process only)")
    return {k: float(v) for k, v in (kv.split("=", 1) for kv in lines[0][7:].split())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True, help="the project to migrate (test/e2e/project/app)")
    ap.add_argument("--prefix", required=True, help="installed Accelerate prefix")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()

    shutil.rmtree(a.work, ignore_errors=True)
    src, out = os.path.join(a.work, "src"), os.path.join(a.work, "out")
    build = os.path.join(src, "build")
    shutil.copytree(a.app, src)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    launcher_opts = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []

    # 1. compile_commands.json of the original
    run(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
        os.path.join(a.work, "configure-original.log"), env)
    before = tree_digest(src, build)

    # 2. project mode
    tool = os.path.join(a.prefix, "bin", "accel-migrate")
    run([tool, "-p", build, "--in-root", src, "--out-root", out, "-j", "2"],
        os.path.join(a.work, "migrate.log"), env)
    if tree_digest(src, build) != before:
        sys.exit("FAILED: the in-root changed")
    if os.path.exists(os.path.join(out, "build")):
        sys.exit("FAILED: the build directory inside the in-root was copied")
    report = json.load(open(os.path.join(out, "accel-migrate-report.json")))
    files = {f["path"]: f for f in report["files"]}
    print("  report: " + ", ".join(f"{p} {f['status']} ({f['total_rewrites']} rewrites)"
                                   for p, f in files.items()))
    expect = {"src/main.cpp": "source", "src/report.cpp": "source", "include/trainer.h": "header"}
    for p, kind in expect.items():
        if p not in files or files[p]["kind"] != kind or files[p]["status"] != "migrated":
            sys.exit(f"FAILED: {p} is not reported as a migrated {kind}: {files.get(p)}")
    if report["totals"]["failed"] != 0:
        sys.exit("FAILED: the report lists failed files")
    header = open(os.path.join(out, "include", "trainer.h")).read()
    # One set of edits although two sources include the header.
    for needle, n in (("#include <accelerate/accelerate.h>", 1), (".backward(loss)", 1),
                      (".prepare(model_, optimizer_)", 1), ("current().prepare_data_loader<", 2)):
        if header.count(needle) != n:
            sys.exit(f"FAILED: migrated trainer.h has {header.count(needle)} x '{needle}', "
                     f"expected {n}")
    cmake = open(os.path.join(out, "CMakeLists.txt")).read()
    # One find_package, with HINTS naming the install the tool belongs to (a project that
    # sets CMAKE_PREFIX_PATH itself still finds it).
    if cmake.count("find_package(Accelerate REQUIRED CONFIG") != 1 or \
            not any(f'HINTS "{p}"' in cmake for p in (a.prefix, os.path.realpath(a.prefix))) or \
            cmake.count("Accelerate::accelerate") != 1:
        sys.exit("FAILED: CMakeLists.txt not migrated:\n" + cmake)

    # 3. build the out-root as is
    out_build = os.path.join(a.work, "out-build")
    run(["cmake", "-S", out, "-B", out_build, "-G", "Ninja", f"-DCMAKE_BUILD_TYPE={BUILD_TYPE}",
         f"-DCMAKE_PREFIX_PATH={a.prefix}"] + launcher_opts,
        os.path.join(a.work, "configure-migrated.log"), env)
    run(["cmake", "--build", out_build, "-j", "2"], os.path.join(a.work, "build.log"), env)
    exe = os.path.join(out_build, "line_fit")

    # 4. 1 process (2B) vs 2 processes (B)
    launcher = os.path.join(a.prefix, "bin", "accelerate")
    finals = {}
    for n, batch in ((1, 2 * BATCH), (2, BATCH)):
        text = run([launcher, "launch", "--cpu", "--num_processes", str(n),
                    "--main_process_port", "0", exe, "--batch-size", str(batch)],
                   os.path.join(a.work, f"run-{n}proc.log"), env)
        finals[n] = final_values(text, f"{n} process(es)")
    ok = finals[1].keys() == finals[2].keys() and len(finals[1]) == 2
    for k in finals[1]:
        x, y = finals[2].get(k, float("nan")), finals[1][k]
        good = abs(x - y) <= ATOL + RTOL * abs(y)
        print(f"  {k}: 2 processes {x:.6f} vs 1 process {y:.6f} {'ok' if good else 'DIFFERS'}")
        ok &= good
    if not ok:
        sys.exit("FAILED: the 2-process run does not reproduce the 1-process run")
    print("PASSED e2e project")


if __name__ == "__main__":
    main()
