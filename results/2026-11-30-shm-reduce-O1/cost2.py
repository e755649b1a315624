#!/usr/bin/python3
"""Communication cost with libaccelerate built two ways (O1: the ci preset's scalar kernel; O3: the fix),
interleaved rounds: 2-process migrated step / step of the independent pair of originals (half batch each)."""
import os, re, shlex, shutil, statistics, subprocess, sys
B = "/work/main/build"; LIB = B + "/runtime/libaccelerate.so.0.1.0"
rounds = int(os.environ.get("ROUNDS", "6")); steps = os.environ.get("STEPS", "300"); job = os.environ.get("JOB", "mlp")
env = dict(os.environ, OMP_NUM_THREADS="1")
st = ["--steps", steps, "--warmup", "5"]
def pair(cmd):
    line = shlex.join(cmd); return ["/bin/sh", "-c", "%s & %s & wait" % (line, line)]
if job == "mlp":
    L = B + "/launcher/accelerate"
    two = [L, "launch", "--cpu", "--num_processes", "2", "--split_batches", "--main_process_port", "0",
           B + "/bench/overhead_train_migrated"] + st + ["--batch-size", "128"]
    pr = pair([B + "/bench/overhead_train"] + st + ["--batch-size", "64"])
    pat = re.compile(r"bench: step_ms=([0-9.]+)")
else:
    gs = B + "/bench/grad_sync"
    cnn = lambda n, b: [gs, "--spawn", str(n), "--phases", "1", "--model", "1", "--batch", str(b), "--steps", steps]
    two, pr = cnn(2, 64), pair(cnn(1, 64))
    pat = re.compile(r"bench: phases step_ms=([0-9.]+)")
cfg = {"pair": (pr, None), "2 O1": (two, "/tmp/exp/libO1.so"), "2 O3": (two, "/tmp/exp/libO3.so")}
vals = {k: [] for k in cfg}
print("%s, %s steps, %d rounds, commit %s" % (job, steps, rounds, subprocess.run(["git", "-C", "/work/main", "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE, text=True).stdout.strip()))
for r in range(rounds):
    order = list(cfg) if r % 2 == 0 else list(reversed(cfg))
    for k in order:
        cmd, lib = cfg[k]
        if lib: shutil.copyfile(lib, LIB + ".tmp"); os.replace(LIB + ".tmp", LIB)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        f = [float(x) for x in pat.findall(p.stdout)]
        if p.returncode or not f: print(p.stdout[-2000:]); sys.exit(1)
        vals[k].append(sum(f[-2:]) / 2 if k == "pair" else f[-1])
    print("round %d: " % (r + 1) + "  ".join("%s %.3f" % (k, vals[k][-1]) for k in cfg) +
          "  cost O1 %.3f O3 %.3f" % (vals["2 O1"][-1] / vals["pair"][-1], vals["2 O3"][-1] / vals["pair"][-1]), flush=True)
for k in ("2 O1", "2 O3"):
    c = [a / b for a, b in zip(vals[k], vals["pair"])]
    print("%s: median step %.3f ms, pair %.3f ms; communication cost median %.3f (per round %s)" % (
        k, statistics.median(vals[k]), statistics.median(vals["pair"]), statistics.median(c), " ".join("%.3f" % x for x in c)))
c = [a / b for a, b in zip(vals["2 O3"], vals["2 O1"])]
print("O3 / O1 step: median %.3f (per round %s)" % (statistics.median(c), " ".join("%.3f" % x for x in c)))
shutil.copyfile("/tmp/exp/libO3.so", LIB)
