#!/usr/bin/env python3
"""accel-migrate against an older accel-migrate on the same files, in the same run (issue 29:
"the tool's time per file stays within 10%").

Both binaries migrate each file with a warm PCH cache of their own (a first, untimed run
fills it), in alternating order for --rounds rounds; the CPU time of each run (user + sys of
the child, from os.wait4) is what is compared, since it moves less than wall time when the
machine is shared. Prints one CSV row per file (medians and head/base ratio) and the median
ratio over the files.

    python3 bench/tool_baseline.py --base OLD/accel-migrate --head build/tool/accel-migrate \
        [--rounds 5] [--csv OUT.csv]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_API = "/usr/include/torch/csrc/api/include"


def files():
    # The same real programs as bench/tool_time.py: the examples, then the corpus.
    names = [os.path.join(ROOT, "examples", d, "main.cpp") for d in ("mnist_cnn", "regression", "gan", "trainer_class")]
    corpus = os.path.join(ROOT, "test", "corpus")
    names += sorted(os.path.join(corpus, f) for f in os.listdir(corpus) if f.endswith(".cpp"))
    return [n for n in names if os.path.isfile(n)]


def cpu_seconds(cmd):
    with open(os.devnull, "w") as null:
        p = subprocess.Popen(cmd, stdout=null, stderr=null)
        _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("failed: " + " ".join(cmd))
    return usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--limit", type=int, default=0, help="only the first N files")
    ap.add_argument("--csv")
    a = ap.parse_args()
    todo = files()[: a.limit or None]
    tmp = tempfile.mkdtemp(prefix="tool-baseline-")
    tools = {"base": a.base, "head": a.head}

    def cmd(which, src):
        out = os.path.join(tmp, which + "-" + os.path.basename(src))
        return [tools[which], "--cache-dir", os.path.join(tmp, "cache-" + which), src, "-o", out,
                "--", "-std=c++17", "-I" + TORCH_API, "-w"]

    rows = ["file,base_cpu_s,head_cpu_s,head_over_base"]
    ratios = []
    for src in todo:
        for which in tools:          # untimed: fills each tool's PCH cache
            cpu_seconds(cmd(which, src))
        t = {"base": [], "head": []}
        for r in range(a.rounds):
            order = ("base", "head") if r % 2 == 0 else ("head", "base")
            for which in order:
                t[which].append(cpu_seconds(cmd(which, src)))
        b, h = statistics.median(t["base"]), statistics.median(t["head"])
        ratios.append(h / b)
        rows.append("%s,%.3f,%.3f,%.4f" % (os.path.relpath(src, ROOT), b, h, h / b))
        print(rows[-1], flush=True)
    rows.append("median over %d files,,,%.4f" % (len(ratios), statistics.median(ratios)))
    print(rows[-1])
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    sys.exit(main())
