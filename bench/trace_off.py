#!/usr/bin/env python3
"""What the step trace costs when it is OFF (issue 48 item 1: "one branch a step ... stays within
the overhead benchmark's noise: measure it").

  python3 bench/trace_off.py --on DIR_ON --off DIR_OFF [--rounds 9] [--out results/DATE-trace-off]

DIR_ON holds overhead_train_migrated and the libaccelerate.so.0 it was linked with, as built
(the trace off at run time: no ACCELERATE_TRACE); DIR_OFF the same commit with the trace compiled
out (StepTrace::enabled() returning false: the compiler drops every hook behind it). Each round
runs, in alternating order, ON, OFF and ON again (a second run of the same binary: the noise any
difference must be compared with), one process, the overhead benchmark's model and batch;
LD_LIBRARY_PATH picks each directory's library (the binary's RUNPATH gives way to it). Prints
and writes (OUT/trace-off.csv, OUT/trace-off.log) the per-round step times and CPU times and the
medians of OFF/ON and ON2/ON. No verdict: the doc that cites the figures says what they show.
How DIR_OFF was made for the published figures: docs/verify.md, "What the trace costs".
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import run_timed, step_ms  # noqa: E402  (the benchmark's own timing and parsing)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--on", required=True)
    ap.add_argument("--off", required=True)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    dirs = {"on": a.on, "off": a.off, "on2": a.on}
    for d in set(dirs.values()):
        for f in ("overhead_train_migrated", "libaccelerate.so.0"):
            if not os.path.exists(os.path.join(d, f)):
                sys.exit(f"trace_off: {d}/{f} missing")
    args = ["--steps", str(a.steps), "--warmup", str(a.warmup), "--batch-size", str(a.batch_size)]
    wall = {k: [] for k in dirs}
    cpu = {k: [] for k in dirs}
    log = open(os.path.join(a.out, "trace-off.log"), "w")
    for r in range(a.rounds):
        order = list(dirs) if r % 2 == 0 else list(reversed(dirs))
        for k in order:
            env = dict(os.environ, OMP_NUM_THREADS="1", LD_LIBRARY_PATH=dirs[k])
            env.pop("ACCELERATE_TRACE", None)
            out, _, _ = run_timed([os.path.join(dirs[k], "overhead_train_migrated")] + args, env=env)
            wall[k].append(step_ms(out))
            cpu[k].append(step_ms(out, "cpu_ms"))
        line = f"round {r + 1}/{a.rounds} ({' '.join(order)}): " + "  ".join(
            f"{k} {wall[k][-1]:.2f} ms ({cpu[k][-1]:.2f} CPU)" for k in dirs)
        print(line, flush=True)
        log.write(line + "\n")
    with open(os.path.join(a.out, "trace-off.csv"), "w") as f:
        f.write("round,on_ms,off_ms,on2_ms,on_cpu_ms,off_cpu_ms,on2_cpu_ms\n")
        for r in range(a.rounds):
            f.write(",".join([str(r + 1)] + [f"{wall[k][r]:.3f}" for k in dirs] + [f"{cpu[k][r]:.3f}" for k in dirs])
                    + "\n")
    for name, t in (("step time", wall), ("CPU time per step", cpu)):
        for num in ("off", "on2"):
            ratios = sorted(n / d for n, d in zip(t[num], t["on"]))
            line = (f"{num}/on {name}: median {statistics.median(ratios):.4f}, range {ratios[0]:.4f}-{ratios[-1]:.4f} "
                    f"({a.rounds} rounds)")
            print(line)
            log.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
