#!/usr/bin/python3
"""The issue's MLP job (global batch 128, 300 steps) against the independent pair of originals,
variants interleaved: the migrated program under accelerate launch, the same without its per-step
loss average (nomean), and the migrated program started directly (no launcher: the launcher's env by hand).
usage: migjob.py ROUNDS [sampler]   (sampler: migjob2.txt's set, the original and the migrated
program with SequentialSampler in place of RandomSampler, built from /tmp/exp51/mig/*_seq.cpp)"""
import os, re, statistics, subprocess, sys, random
B = "/work/main/build"; rounds = int(sys.argv[1])
st = ["--steps", "300", "--warmup", "5"]
pat = re.compile(r"bench: step_ms=([0-9.]+)")
def launched(exe): return [B + "/launcher/accelerate", "launch", "--cpu", "--num_processes", "2", "--split_batches", "--main_process_port", "0", exe] + st + ["--batch-size", "128"]
def direct(exe):
    port = str(random.randint(30000, 60000))
    envs = [dict(os.environ, OMP_NUM_THREADS="1", ACCELERATE_SPLIT_BATCHES="true", ACCELERATE_USE_CPU="true", ACCELERATE_MIXED_PRECISION="no",
                 RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                 GROUP_RANK="0", NODE_RANK="0") for r in range(2)]
    ps = [subprocess.Popen([exe] + st + ["--batch-size", "128"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e) for e in envs]
    return "".join(p.communicate()[0] for p in ps)
sampler = sys.argv[2:] == ["sampler"]
variants = ["pair", "launched", "pair_seq", "launched_seq"] if sampler else ["pair", "launched", "nomean", "direct"]
PAIR = {"pair": B + "/bench/overhead_train", "pair_seq": "/tmp/exp51/mig/orig_seq"}
JOB = {"launched": B + "/bench/overhead_train_migrated", "nomean": "/tmp/exp51/mig/nomean", "launched_seq": "/tmp/exp51/mig/mig_seq"}
res = {v: [] for v in variants}
env = dict(os.environ, OMP_NUM_THREADS="1")
for r in range(rounds):
    for v in (variants if r % 2 == 0 else variants[::-1]):
        if v in PAIR:
            ps = [subprocess.Popen([PAIR[v]] + st + ["--batch-size", "64"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) for _ in range(2)]
            f = [float(x) for p in ps for x in pat.findall(p.communicate()[0])]; val = sum(f) / 2
        else:
            out = direct(B + "/bench/overhead_train_migrated") if v == "direct" else subprocess.run(
                launched(JOB[v]), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env).stdout
            f = [float(x) for x in pat.findall(out)]; val = f[-1] if f else None
        if not val: print(v, out[-1500:]); sys.exit(1)
        res[v].append(val)
    print("round %d: " % (r + 1) + "  ".join("%s %.3f" % (v, res[v][-1]) for v in variants), flush=True)
for v in variants[1:]:
    base = "pair_seq" if v == "launched_seq" else "pair"
    c = [a / b for a, b in zip(res[v], res[base])]
    print("%-9s median %.3f ms; / its pair %.3f [%.3f..%.3f]" % (v, statistics.median(res[v]), statistics.median(c), min(c), max(c)))
print("pair      median %.3f ms" % statistics.median(res["pair"]))
