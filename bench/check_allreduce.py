#!/usr/bin/python3
"""ctest bench_allreduce_bandwidth: runs allreduce_bandwidth under `accelerate launch --cpu`
with tiny sizes and checks what bench/run.py's GPU section relies on, with run.py's parser:

- 2 processes: exit 0 (the program checked every sum), one line per requested size, positive
  algbw, busbw = algbw * 2 (n - 1) / n, backend gloo;
- 2 processes with a corrupted contribution: the program must detect the wrong sum (exit 1);
- 1 process: busbw 0 by definition, a positive device copy bandwidth instead.

    check_allreduce.py --launcher build/launcher/accelerate --program build/bench/allreduce_bandwidth
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import parse_allreduce  # noqa: E402  (the parser the benchmark itself uses)

SIZES = [4096, 65536, 1 << 20]


def launch(args, n, extra=()):
    cmd = [args.launcher, "launch", "--cpu", "--num_processes", str(n), "--main_process_port", "0",
           "--no_rank_prefix", args.program, "--sizes", ",".join(str(s) for s in SIZES),
           "--iters", "3", "--warmup", "1"] + list(extra)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=100)
    print("$ " + " ".join(cmd) + "\n" + p.stdout + "(exit %d)\n" % p.returncode, flush=True)
    return p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--program", required=True)
    args = ap.parse_args()
    errors = []

    rc, out = launch(args, 2)
    rows = parse_allreduce(out)
    if rc != 0:
        errors.append("2 processes: exit %d" % rc)
    if [r["size_bytes"] for r in rows] != SIZES:
        errors.append("2 processes: sizes %s, expected %s" % ([r["size_bytes"] for r in rows], SIZES))
    for r in rows:
        if not r["algbw_gbs"] > 0:
            errors.append("2 processes, %d bytes: algbw %s is not positive" % (r["size_bytes"], r["algbw_gbs"]))
        # busbw = algbw * 2 * (2 - 1) / 2 = algbw, up to the printed digits.
        if abs(r["busbw_gbs"] - r["algbw_gbs"]) > 1e-3 * r["algbw_gbs"] + 2e-6:
            errors.append("2 processes, %d bytes: busbw %s != algbw %s" % (r["size_bytes"], r["busbw_gbs"], r["algbw_gbs"]))
        if r.get("processes") != 2 or r.get("backend") != "gloo":
            errors.append("2 processes, %d bytes: processes=%s backend=%s" % (r["size_bytes"], r.get("processes"), r.get("backend")))

    rc, out = launch(args, 2, ["--corrupt-rank", "1"])
    if rc == 0 or "WRONG SUM" not in out:
        errors.append("a corrupted contribution was not detected (exit %d)" % rc)
    if parse_allreduce(out):
        errors.append("a corrupted run still printed bandwidth lines")

    rc, out = launch(args, 1)
    rows = parse_allreduce(out)
    if rc != 0 or len(rows) != len(SIZES):
        errors.append("1 process: exit %d, %d lines" % (rc, len(rows)))
    for r in rows:
        if r["busbw_gbs"] != 0 or r["algbw_gbs"] != 0 or not r.get("copy_gbs", 0) > 0:
            errors.append("1 process, %d bytes: expected algbw 0, busbw 0 and a positive copy_gbs: %s" % (r["size_bytes"], r))

    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    print("check_allreduce: %s" % ("FAILED" if errors else "all checks passed"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
