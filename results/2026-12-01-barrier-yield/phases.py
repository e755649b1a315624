#!/usr/bin/python3
"""Per-phase CPU/wall medians of grad_sync --phases 1 (MLP, batch 64 per process), variants interleaved.
usage: phases.py ROUNDS 'NAME:VAR=V,...' ...  ('pair' = two independent 1-process runs; 'pin' in name: taskset per member)"""
import os, re, statistics, subprocess, sys
B = "/work/main/build/bench/grad_sync"
rounds = int(sys.argv[1]); variants = []
for a in sys.argv[2:]:
    name, _, kv = a.partition(":"); variants.append((name, dict(x.split("=") for x in kv.split(",") if x)))
steps = os.environ.get("STEPS", "300")
row = re.compile(r"^\s+(next batch|zero_grad|forward|backward|optimizer|lockstep|xmean|step)\s+([0-9.]+) ms\s+([0-9.]+) ms CPU", re.M)
allt = re.compile(r"step, all threads\s+([0-9.]+) ms CPU")
res = {n: [] for n, _ in variants}
for r in range(rounds):
    order = variants if r % 2 == 0 else variants[::-1]
    for name, e in order:
        e = dict(e); extra = e.pop("ARGS", "").split("+") if "ARGS" in e else []
        env = dict(os.environ, OMP_NUM_THREADS="1", **e)
        if name.startswith("pair"):
            cmd = [B, "--spawn", "1", "--phases", "1", "--batch", "64", "--steps", steps]
            pre = (lambda i: ["taskset", "-c", str(i)]) if "pin" in name else (lambda i: [])
            ps = [subprocess.Popen(pre(i) + cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) for i in range(2)]
            outs = [p.communicate()[0] for p in ps]
        else:
            out = subprocess.run([B, "--spawn", "2", "--phases", "1", "--batch", "64", "--steps", steps] + extra,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env).stdout
            outs = out.split("[rank 1] phases")
        recs = []
        for o in outs:
            d = {"lockstep": (0.0, 0.0), "xmean": (0.0, 0.0)}
            d.update({m[0]: (float(m[1]), float(m[2])) for m in row.findall(o)})
            d["all"] = (0.0, float(allt.search(o).group(1)))
            recs.append(d)
        if len(recs) != 2: print(out[-1500:]); sys.exit(1)
        res[name].append({k: tuple((recs[0][k][i] + recs[1][k][i]) / 2 for i in range(2)) for k in recs[0]})
    print("round %d: " % (r + 1) + "  ".join("%s %.2f" % (n, res[n][-1]["step"][0]) for n, _ in variants), flush=True)
keys = ["next batch", "zero_grad", "forward", "backward", "optimizer", "lockstep", "xmean", "step", "all"]
print("%-10s " % "median" + " ".join("%17s" % k for k in keys) + "   (wall/CPU ms, mean of the 2 processes)")
for n, _ in variants:
    print("%-10s " % n + " ".join("%8.2f/%-8.2f" % (statistics.median(x[k][0] for x in res[n]), statistics.median(x[k][1] for x in res[n])) for k in keys))
base = variants[0][0]
for n, _ in variants[1:]:
    print("%-10s CPU / %s per phase: " % (n, base) + " ".join("%s %.3f" % (k, statistics.median(a[k][1] / max(b[k][1], 1e-9) for a, b in zip(res[n], res[base]))) for k in keys) +
          " | step wall %.3f [%.3f..%.3f]" % tuple([statistics.median(a["step"][0] / b["step"][0] for a, b in zip(res[n], res[base]))] +
          [f(a["step"][0] / b["step"][0] for a, b in zip(res[n], res[base])) for f in (min, max)]))
