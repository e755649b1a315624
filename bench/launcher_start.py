#!/usr/bin/env python3
"""Start cost of the launcher against a program that loads LibTorch (docs/multi-node.md,
"Why the launchers have their own link"): 20 alternating starts of `accelerate --version`
and `accelerate-selftest --show-config` (the smallest LibTorch-linked program the build has),
wall and CPU (user+sys, from the children's rusage) per start, medians, and ldd's count.

    python3 bench/launcher_start.py BUILD_DIR > results/DATE-launcher-start.txt
"""
import os
import resource
import statistics
import subprocess
import sys
import time


def one(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main(build):
    launcher = os.path.join(build, "runtime", "launcher")
    cmds = [[os.path.join(launcher, "accelerate"), "--version"],
            [os.path.join(launcher, "accelerate-selftest"), "--show-config"]]
    names = [" ".join(os.path.basename(x) for x in c) for c in cmds]
    print("# load average at start:", " ".join(open("/proc/loadavg").read().split()[:3]))
    print("command,start,wall_s,cpu_s")
    res = {n: [] for n in names}
    for i in range(20):  # alternating, so that a change of load hits both alike
        for name, cmd in zip(names, cmds):
            wall, cpu = one(cmd)
            res[name].append((wall, cpu))
            print(f"{name},{i},{wall:.4f},{cpu:.4f}")
    for name in names:
        print(f"# median {name}: wall {statistics.median(w for w, _ in res[name]):.4f} s, "
              f"cpu {statistics.median(c for _, c in res[name]):.4f} s")
    for cmd in cmds:
        out = subprocess.run(["ldd", cmd[0]], capture_output=True, text=True).stdout.strip().splitlines()
        print(f"# ldd {os.path.basename(cmd[0])}: {len(out)} entries")


if __name__ == "__main__":
    main(sys.argv[1])
