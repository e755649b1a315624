#!/usr/bin/python3
"""A/B of env variants on grad_sync --spawn 2 --phases 1 (MLP, batch 64 each), interleaved rounds.
usage: ab.py ROUNDS 'NAME:VAR=V,VAR=V' ...   ('pair' = two independent 1-process runs)"""
import os, re, statistics, subprocess, sys
B = "/work/main/build/bench/grad_sync"
rounds = int(sys.argv[1]); variants = []
for a in sys.argv[2:]:
    name, _, kv = a.partition(":"); variants.append((name, dict(x.split("=") for x in kv.split(",") if x)))
steps = os.environ.get("STEPS", "300"); extra = os.environ.get("EXTRA", "").split()
pat = re.compile(r"bench: phases step_ms=([0-9.]+) cpu_ms=([0-9.]+) wait_ms=([0-9.]+)")
res = {n: [] for n, _ in variants}
for r in range(rounds):
    order = variants if r % 2 == 0 else variants[::-1]
    for name, e in order:
        env = dict(os.environ, OMP_NUM_THREADS="1", **e)
        if name == "pair":
            cmd = [B, "--spawn", "1", "--phases", "1", "--batch", "64", "--steps", steps] + extra
            ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) for _ in range(2)]
            out = "".join(p.communicate()[0] for p in ps)
        else:
            out = subprocess.run([B, "--spawn", "2", "--phases", "1", "--batch", "64", "--steps", steps] + extra,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env).stdout
        f = [tuple(map(float, m)) for m in pat.findall(out)]
        if len(f) != 2: print(out[-1500:]); sys.exit(1)
        res[name].append(tuple(sum(x[i] for x in f) / 2 for i in range(3)))
    print("round %d: " % (r + 1) + "  ".join("%s %.2f/%.2f/%.2f" % (n, *res[n][-1]) for n, _ in variants), flush=True)
base = variants[0][0]
for n, _ in variants:
    st = statistics.median(x[0] for x in res[n]); cpu = statistics.median(x[1] for x in res[n])
    rs = [a[0] / b[0] for a, b in zip(res[n], res[base])]; rc = [a[1] / b[1] for a, b in zip(res[n], res[base])]
    print("%-8s step %.2f ms cpu %.2f ms wait %.2f | vs %s: step %.3f [%.3f..%.3f] cpu %.3f [%.3f..%.3f]" % (
        n, st, cpu, statistics.median(x[2] for x in res[n]), base, statistics.median(rs), min(rs), max(rs),
        statistics.median(rc), min(rc), max(rc)))
