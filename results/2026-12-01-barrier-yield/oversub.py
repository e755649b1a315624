#!/usr/bin/python3
"""Oversubscribed: two 2-process grad_sync --phases 1 jobs at once on the 2-core machine (4 processes),
barrier variants interleaved; step = mean of the two jobs' rank-0 medians."""
import os, re, statistics, subprocess, sys
B = "/work/main/build/bench/grad_sync"; rounds = int(sys.argv[1])
variants = [(a.partition(":")[0], dict(x.split("=") for x in a.partition(":")[2].split(",") if x)) for a in sys.argv[2:]]
pat = re.compile(r"bench: phases step_ms=([0-9.]+) cpu_ms=([0-9.]+)")
res = {n: [] for n, _ in variants}
for r in range(rounds):
    for name, e in (variants if r % 2 == 0 else variants[::-1]):
        env = dict(os.environ, OMP_NUM_THREADS="1", **e)
        ps = [subprocess.Popen([B, "--spawn", "2", "--phases", "1", "--batch", "64", "--steps", "150"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) for _ in range(2)]
        f = [tuple(map(float, m)) for p in ps for m in pat.findall(p.communicate()[0])]
        if len(f) != 4: print("bad", f); sys.exit(1)
        res[name].append((sum(x[0] for x in f) / 4, sum(x[1] for x in f) / 4))
    print("round %d: " % (r + 1) + "  ".join("%s %.2f/%.2f" % (n, *res[n][-1]) for n, _ in variants), flush=True)
base = variants[0][0]
for n, _ in variants:
    rs = [a[0] / b[0] for a, b in zip(res[n], res[base])]
    print("%-8s step %.2f ms cpu %.2f | vs %s %.3f [%.3f..%.3f]" % (n, statistics.median(x[0] for x in res[n]), statistics.median(x[1] for x in res[n]), base, statistics.median(rs), min(rs), max(rs)))
