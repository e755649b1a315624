"""Sharded data parallel: peak resident memory per process and step time of each FSDP
strategy against NO_SHARD, measured in the same run, and against the memory each strategy
should need (imported by run.py, section fsdp; see docs/fsdp.md).

The program is bench/fsdp_memory (an MLP of square Linear layers, AdamW, each layer one
unit: SIZE_BASED_WRAP at 1M parameters), started by `accelerate launch --num_processes 2
--use_fsdp --fsdp_sharding_strategy S`. Expected training memory per process, P parameters,
N processes, U the largest unit's parameters, 4 bytes each (fp32):
  NO_SHARD       16P              parameters 4P, gradients 4P, AdamW state 8P
  SHARD_GRAD_OP  4P + 12P/N + 4U  parameters replicated; gradients and state sharded; a
                                  unit's whole gradient while its backward runs
  FULL_SHARD     16P/N + 8U       everything sharded; one unit gathered at a time, with its
                                  whole gradient during its backward (so with no wrap
                                  policy, U = P, FULL_SHARD needs as much as NO_SHARD)
  FULL_SHARD with prefetch  16P/N + 12U   one more unit gathered ahead (BACKWARD_PRE and
                                  forward prefetch: FSDP_BACKWARD_PREFETCH, FSDP_FORWARD_PREFETCH)
NO_SHARD (the DDP path) also keeps its gradient buckets, one more copy of the gradients
(4P): its row says so. glibc is told to return large blocks to the system at once
(MALLOC_MMAP_THRESHOLD_), so that the resident size follows what the program holds.
"""
import re
import statistics

STRATEGIES = ("NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD")
NO_WRAP = "FULL_SHARD_NO_WRAP"
PREFETCH = "FULL_SHARD_PREFETCH"
NOTE = re.compile(r"accelerate: note: FULL_SHARD with the whole model as one unit")
LINE = re.compile(r"bench: fsdp strategy=(\w+) rank=(\d+) world=(\d+) params=(\d+) largest_unit=(\d+) "
                  r"base_mb=([0-9.]+) peak_mb=([0-9.]+) step_ms=([0-9.]+) prefetches=(\d+)")
MB = 1024.0 * 1024.0


def expected_mb(strategy, params, unit, world):
    if strategy == "NO_SHARD":
        return 16.0 * params / MB
    if strategy == "SHARD_GRAD_OP":
        return (4.0 * params + 12.0 * params / world + 4.0 * unit) / MB
    if strategy == PREFETCH:
        return (16.0 * params / world + 12.0 * unit) / MB
    return (16.0 * params / world + 8.0 * unit) / MB


def run_one(bench, run_timed, launcher, exe, strategy, model_args):
    """One run of a configuration: a strategy, with a unit per layer, or FULL_SHARD_NO_WRAP
    (FULL_SHARD with no wrap policy: the whole model is one unit, the reference's default)."""
    env = dict(bench.env, MALLOC_MMAP_THRESHOLD_="65536")
    wrap = ["--fsdp_auto_wrap_policy", "SIZE_BASED_WRAP", "--fsdp_min_num_params", "100000"]
    if strategy == NO_WRAP:
        strategy, wrap = "FULL_SHARD", ["--fsdp_auto_wrap_policy", "NO_WRAP"]
    prefetch = strategy == PREFETCH
    if prefetch:
        strategy = "FULL_SHARD"
        wrap += ["--fsdp_backward_prefetch", "BACKWARD_PRE", "--fsdp_forward_prefetch", "true"]
    cmd = [launcher, "launch", "--cpu", "--num_processes", "2", "--main_process_port", "0", "--use_fsdp",
           "--fsdp_sharding_strategy", strategy] + wrap + [exe] + model_args
    out, _, _ = run_timed(cmd, env=env, timeout=900)
    note = NOTE.search(out)
    if (note is not None) != (wrap[1] == "NO_WRAP"):  # the one-line advice: printed exactly when it applies
        raise RuntimeError("FULL_SHARD advice line %s with %s:\n%s" % (
            "printed" if note else "missing", " ".join(wrap), out[-2000:]))
    rows = [m.groups() for m in LINE.finditer(out)]
    if len(rows) != 2:
        raise RuntimeError("expected 2 bench lines from %s:\n%s" % (strategy, out[-2000:]))
    prefetched = min(int(r[8]) for r in rows)
    if (prefetched > 0) != prefetch:  # the flags reached the processes
        raise RuntimeError("%d prefetches used with %s:\n%s" % (prefetched, strategy, out[-2000:]))
    params, unit, world = int(rows[0][3]), int(rows[0][4]), int(rows[0][2])
    extra = max(float(r[6]) - float(r[5]) for r in rows)  # the larger process
    step = statistics.median(float(r[7]) for r in rows)
    return dict(params=params, unit=unit, world=world, extra_mb=extra, step_ms=step)


def measure(bench, run_timed, Skip):
    launcher = bench.exe("launcher/accelerate")
    exe = bench.exe("bench/fsdp_memory")
    quick = bench.args.quick
    model_args = ["--width", "512", "--layers", "4", "--steps", "2", "--warmup", "1"] if quick else []
    rounds = 1 if quick else 2
    configs = STRATEGIES + (NO_WRAP, PREFETCH)
    results = {s: [] for s in configs}
    for _ in range(rounds):  # interleaved, so that a busy moment hits every strategy alike
        for s in configs:
            results[s].append(run_one(bench, run_timed, launcher, exe, s, model_args))
    r = {s: dict(v[0], extra_mb=min(x["extra_mb"] for x in v), step_ms=statistics.median(x["step_ms"] for x in v))
         for s, v in results.items()}
    base = r["NO_SHARD"]
    p = base["params"]
    what = "%.1fM parameters, largest unit %.1fM, 2 processes" % (p / 1e6, r["FULL_SHARD"]["unit"] / 1e6)
    for s in ("SHARD_GRAD_OP", "FULL_SHARD"):
        want = expected_mb(s, p, r[s]["unit"], r[s]["world"]) / expected_mb("NO_SHARD", p, 0, 2)
        bench.add("fsdp", "%s / NO_SHARD peak memory per process" % s, r[s]["extra_mb"] / base["extra_mb"],
                  "NO_SHARD", "lower (expected %.2f)" % want,
                  "%.0f MB vs %.0f MB above the process's base; %s" % (r[s]["extra_mb"], base["extra_mb"], what))
    whole = r[NO_WRAP]
    bench.add("fsdp", "FULL_SHARD, no wrap policy (one unit) / NO_SHARD peak memory per process",
              whole["extra_mb"] / base["extra_mb"], "NO_SHARD",
              "lower (expected %.2f; per layer above)" % (expected_mb("FULL_SHARD", p, p, 2) / expected_mb("NO_SHARD", p, 0, 2)),
              "%.0f MB vs %.0f MB; the advice line was printed" % (whole["extra_mb"], base["extra_mb"]))
    pre = r[PREFETCH]
    want = expected_mb(PREFETCH, p, pre["unit"], 2) / expected_mb("NO_SHARD", p, 0, 2)
    bench.add("fsdp", "FULL_SHARD with prefetch / NO_SHARD peak memory per process", pre["extra_mb"] / base["extra_mb"],
              "NO_SHARD", "lower (expected %.2f: one unit more than FULL_SHARD)" % want,
              "%.0f MB vs %.0f MB; BACKWARD_PRE and forward prefetch" % (pre["extra_mb"], base["extra_mb"]))
    for s in STRATEGIES + (PREFETCH,):
        want = expected_mb(s, p, r[s]["unit"], r[s]["world"])
        note = "%.0f MB measured, %.0f MB expected" % (r[s]["extra_mb"], want)
        if s == "NO_SHARD":
            note += " (the DDP path also keeps gradient buckets: +%.0f MB)" % (4.0 * p / MB)
        bench.add("fsdp", "%s measured / expected memory" % s, r[s]["extra_mb"] / want, "expected bytes",
                  "~1 (target within 0.15)", note)
    for s in ("SHARD_GRAD_OP", "FULL_SHARD", PREFETCH):
        bench.add("fsdp", "%s / NO_SHARD step time" % s, r[s]["step_ms"] / base["step_ms"], "NO_SHARD",
                  "lower (target <= 1.1)", "%.0f ms vs %.0f ms per step (median)" % (r[s]["step_ms"], base["step_ms"]))
    full = r["FULL_SHARD"]
    bench.add("fsdp", "FULL_SHARD with prefetch / without, step time", pre["step_ms"] / full["step_ms"], "FULL_SHARD",
              "lower (on a CPU-bound host the gathers' copies compete with compute)",
              "%.0f ms vs %.0f ms per step (median)" % (pre["step_ms"], full["step_ms"]))
