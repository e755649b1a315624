#!/usr/bin/env python3
"""accelerate::ProgressBar under `accelerate launch` (issue 31 item 2, docs/tracking.md).

On a pseudo-terminal (as a person running the launcher sees it), 2 processes: the bar of
process 0 arrives live (redraws with '\\r' read while the job still runs, not one line at
its end), process 1 draws none, and each process's ordinary line stays whole on a line of its
own next to the open bar. Into pipes (a log): plain lines, no '\\r', at most one per tenth.
"""
import argparse
import os
import pty
import select
import subprocess
import sys
import time

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run_on_pty(cmd):
    """Runs cmd with a pty as stdout and stderr; returns [(seconds, bytes)], exit time, rc."""
    master, slave = pty.openpty()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("ACCELERATE_TTY", None)
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks, ended = [], None
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            chunks.append((time.monotonic() - start, data))
        if ended is None and p.poll() is not None:
            ended = time.monotonic() - start
        if time.monotonic() - start > 120:
            p.kill()
            break
    rc = p.wait()
    if ended is None:
        ended = time.monotonic() - start
    os.close(master)
    return chunks, ended, rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--worker", required=True)
    a = ap.parse_args()
    cmd = [a.launcher, "launch", "--cpu", "--num_processes", "2", a.worker]

    chunks, ended, rc = run_on_pty(cmd)
    text = b"".join(c for _, c in chunks).decode(errors="replace").replace("\r\n", "\n")
    check(rc == 0 and text.count("done") == 2, f"2 processes on a pty: rc {rc}")
    redraws = [t for t, c in chunks if b"\r[rank0]: train:" in c and b"/6" in c and b" 6/6" not in c]
    check(bool(redraws) and redraws[0] < ended - 0.5,
          f"the bar is live: first redraw at {redraws[0] if redraws else None} s, job ended at {ended:.2f} s")
    check("rank=1" not in text and "[rank1]: train" not in text, "process 1 draws no bar")
    lines = text.split("\n")
    for r in (0, 1):
        check(f"[rank{r}]: midway line from process {r}" in lines,
              f"process {r}'s line is whole on a line of its own")
    check(any("train: 100% |" + "#" * 20 + "| 6/6" in l for l in lines), "the final bar line")

    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ, OMP_NUM_THREADS="1"))
    bars = [l for l in p.stderr.splitlines() if "train:" in l]
    check(p.returncode == 0 and "\r" not in p.stderr, f"into pipes: plain lines, no redraws (rc {p.returncode})")
    check(1 <= len(bars) <= 11 and "6/6" in bars[-1] and all("rank=1" not in l for l in bars),
          f"into pipes: {len(bars)} lines of process 0, the last at 6/6")
    if failures:
        print(f"FAILED progress: {len(failures)} checks")
        print(text[-3000:])
        return 1
    print("PASSED progress")
    return 0


if __name__ == "__main__":
    sys.exit(main())
