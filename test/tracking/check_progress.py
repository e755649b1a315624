#!/usr/bin/env python3
"""accelerate::ProgressBar under `accelerate launch` (issue 31 item 2, docs/tracking.md).

On a pseudo-terminal (as a person running the launcher sees it), 2 processes: the bar of
process 0 arrives live (redraws with '\\r' read while the job still runs, not one line at
its end), process 1 draws none, and each process's ordinary line stays whole on a line of its
own next to the open bar. Into pipes (a log): plain lines, no '\\r', at most one per tenth.
"""
import argparse
import bisect
import os
import pty
import re
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


def redraw_times(chunks, tail=rb""):
    """[(seconds the bar's text arrived, seconds its '\\r' arrived, step)] for process 0's
    redraws, read from the whole stream: a read may end anywhere, also inside a redraw."""
    data, ends, at = b"", [], 0
    for _, c in chunks:
        data += c
        at += len(c)
        ends.append(at)

    def arrival(offset):
        return chunks[bisect.bisect_right(ends, offset)][0]

    found = []
    for m in re.finditer(rb"\r\[rank0\]: train:[^\r\n]*? (\d)/6" + tail, data):
        found.append((arrival(m.end() - 1), arrival(m.start()), int(m.group(1))))
    return found


def check_whole_redraws(redraws, what):
    """A bar drawn one redraw late arrives with the next '\\r', 300 ms after its own: the
    median gap between a redraw's '\\r' and its text must be well under that."""
    gaps = sorted(text - cr for text, cr, step in redraws if step < 6)
    median = gaps[len(gaps) // 2] if gaps else None
    check(len(gaps) >= 3 and median < 0.15,
          f"{what}: each bar arrives with its own redraw ({len(gaps)} redraws, median gap "
          f"{'%.3f' % median if gaps else None} s)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--worker", required=True)
    a = ap.parse_args()
    cmd = [a.launcher, "launch", "--cpu", "--num_processes", "2", a.worker]

    chunks, ended, rc = run_on_pty(cmd)
    text = b"".join(c for _, c in chunks).decode(errors="replace").replace("\r\n", "\n")
    check(rc == 0 and text.count("done") == 2, f"2 processes on a pty: rc {rc}")
    redraws = redraw_times(chunks)
    live = [arrived for arrived, _, step in redraws if step < 6]
    check(bool(live) and live[0] < ended - 0.5,
          f"the bar is live: first redraw at {live[0] if live else None} s, job ended at {ended:.2f} s")
    check_whole_redraws(redraws, "ProgressBar")
    check("rank=1" not in text and "[rank1]: train" not in text, "process 1 draws no bar")
    lines = text.split("\n")
    for r in (0, 1):
        check(f"[rank{r}]: midway line from process {r}" in lines,
              f"process {r}'s line is whole on a line of its own")
    check(any("train: 100% |" + "#" * 20 + "| 6/6" in l for l in lines), "the final bar line")

    # A program that writes the '\r' and its bar in two writes: each bar still shows at once.
    chunks, _, rc = run_on_pty(cmd + ["--split"])
    check(rc == 0, f"split writes on a pty: rc {rc}")
    check_whole_redraws(redraw_times(chunks, rb" split"), "split writes")

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
