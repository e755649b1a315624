#!/usr/bin/env python3
"""Runs a test (or any command) N times and reports its pass rate (issue 28: a check is only
kept if it passes every time, on a loaded 2-core machine too).

    scripts/pass-rate.py -n 20 --ctest e2e.regression            # a ctest test of ./build
    scripts/pass-rate.py -n 10 --busy 1 -- CMD ARGS...            # any command; exit 0 = pass
    scripts/pass-rate.py -n 10 --extract 'one_unit=([0-9.]+)' -- python3 test/e2e/run_example.py ...

Each run's output goes to its own log (--logs, default /tmp/pass-rate-<time>/run-K.log).
At the end it prints `pass rate: P/N` and the failing runs' logs; with --extract, the value
the pattern's group captured in each run and their min/max, so that a threshold's margin can
be read off the runs. --busy K starts K busy loops (one core each) for the whole measurement,
to measure on a loaded machine when nothing else loads it. Exit status 0 when every run passed.
"""
import argparse
import os
import re
import subprocess
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=20, help="runs (default 20)")
    ap.add_argument("--ctest", metavar="NAME", help="the ctest test NAME (exact name) of --build")
    ap.add_argument("--build", default="build", help="build directory for --ctest (default ./build)")
    ap.add_argument("--setup-once", action="store_true",
                    help="--ctest: run the test's fixture set-up tests (e.g. e2e.install) in the first run only")
    ap.add_argument("--logs", help="directory for the runs' logs")
    ap.add_argument("--extract", action="append", default=[], metavar="REGEX",
                    help="a pattern with one group (a number) to collect from every run's log; repeatable")
    ap.add_argument("--busy", type=int, default=0, metavar="K", help="K busy loops running meanwhile")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS... (instead of --ctest)")
    a = ap.parse_args()
    if a.command and a.command[0] == "--":
        a.command = a.command[1:]
    if bool(a.ctest) == bool(a.command):
        ap.error("give either --ctest NAME or -- COMMAND")
    if a.n < 1:
        ap.error("-n must be at least 1")
    return a


def command_for(a, index):
    if not a.ctest:
        return a.command
    # -V: the test's own output goes to the log on a pass too (for --extract).
    cmd = ["ctest", "--test-dir", a.build, "-R", "^" + re.escape(a.ctest) + "$", "-V"]
    if a.setup_once and index > 0:
        cmd += ["-FA", ".*"]  # the fixtures' set-up ran in the first run
    return cmd


def run_once(a, index, logs):
    """One run: (passed, seconds, log path, extracted values)."""
    log = os.path.join(logs, f"run-{index + 1}.log")
    cmd = command_for(a, index)
    t0 = time.time()
    with open(log, "w") as f:
        f.write("+ " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    seconds = time.time() - t0
    text = open(log, errors="replace").read()
    values = []
    for pattern in a.extract:
        found = re.findall(pattern, text)
        values.append(float(found[-1]) if found else None)
    return rc == 0, seconds, log, values, rc


def start_busy(k):
    # Busy loops in a shell of their own each: ended by their own pid at the end.
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(k)]


def report(a, results):
    passed = sum(1 for r in results if r[0])
    for i, pattern in enumerate(a.extract):
        seen = [r[3][i] for r in results if r[3][i] is not None]
        listed = ", ".join("-" if r[3][i] is None else f"{r[3][i]:g}" for r in results)
        span = f"min {min(seen):g}, max {max(seen):g}" if seen else "never found"
        print(f"{pattern}: {listed} ({span}; {len(seen)} of {len(results)} runs)")
    what = a.ctest or " ".join(a.command)
    print(f"pass rate: {passed}/{len(results)} ({what})")
    for index, (ok, _, log, _, rc) in enumerate(results):
        if not ok:
            print(f"  failed: run {index + 1} (exit {rc}): {log}")
    return passed == len(results)


def main():
    a = parse_args()
    logs = a.logs or time.strftime("/tmp/pass-rate-%Y%m%d-%H%M%S")
    os.makedirs(logs, exist_ok=True)
    busy = start_busy(a.busy)
    results = []
    try:
        for index in range(a.n):
            results.append(run_once(a, index, logs))
            ok, seconds, log, values, rc = results[-1]
            shown = " ".join("-" if v is None else f"{v:g}" for v in values)
            print(f"run {index + 1}/{a.n}: {'pass' if ok else 'FAIL (exit %d)' % rc} in {seconds:.0f} s"
                  f"{' ' + shown if shown else ''}  {log}", flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    sys.exit(0 if report(a, results) else 1)


if __name__ == "__main__":
    main()
