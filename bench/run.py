#!/usr/bin/python3
"""The benchmark entry point: runs every benchmark and prints a table of ratios, each
measured against its baseline in the same run (interleaved rounds, medians of per-round
ratios), then saves a CSV and a PNG plot.

    /usr/bin/python3 bench/run.py --build build            # full run, a few minutes
    /usr/bin/python3 bench/run.py --build build --quick    # smoke run, under a minute

Needs, in the build directory: bench/overhead_train, bench/overhead_train_migrated,
bench/grad_sync, bench/loader_throughput, bench/checkpoint_io, bench/fsdp_memory,
bench/allreduce_bandwidth (shm, multinode and GPU sections),
launcher/accelerate, tool/accel-migrate;
and /usr/bin/torchrun (Debian's python3-torch). A missing piece turns its rows into
`skipped` rows with the reason; it never fails the whole run. See docs/benchmarks.md.
"""
import argparse
import csv
import datetime
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLOBAL_BATCH = 256


class Skip(Exception):
    """A benchmark that cannot run here: its rows say why."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_timed(cmd, env=None, timeout=600, cwd=None):
    """Runs cmd; returns (stdout+stderr, wall seconds, CPU seconds of it and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, timeout=timeout, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        raise RuntimeError("command failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stdout[-3000:]))
    return p.stdout, wall, cpu


def step_ms(output, key="step_ms"):
    m = re.findall(r"bench: .*\b%s=([0-9.]+)" % key, output)
    if not m:
        raise RuntimeError("no 'bench: %s=' line in:\n%s" % (key, output[-2000:]))
    return float(m[-1])


def launch_split(launcher, n, program, global_batch, args):
    """`accelerate launch` of overhead_train_migrated on n processes (CPU) with the global batch
    split between them (--split_batches): the program sizes its data from the batch it is
    given, so every process times the same steps on the same global data at any n, as
    bench/ddp_train.py does under torchrun (issue 33: with a per-process batch the 2-process
    run timed 18 steps where DDP timed 40: results/2026-11-26-split-batches-steps.txt)."""
    return [launcher, "launch", "--cpu", "--num_processes", str(n), "--split_batches", "--main_process_port", "0",
            program] + args + ["--batch-size", str(global_batch)]


# ---- GPU helpers (the gpu section and bench/check_allreduce.py use them) ---------------------
ALLREDUCE_LINE = re.compile(r"^(?:\[rank\d+\]: )?bench: size_bytes=(\d+) algbw_gbs=([0-9.]+) busbw_gbs=([0-9.]+)(.*)$", re.M)

# NVLink bandwidth per GPU, per direction, in GB/s (10^9 bytes/s), from NVIDIA's data sheets
# for the SXM boards (they quote the bidirectional total: 900 GB/s for H100/H200 SXM, 600 GB/s
# for A100 SXM, 1.8 TB/s for B200). nccl-tests' busbw of an all-reduce is bounded by this
# figure on an NVLink/NVSwitch system (NVLink SHARP can exceed it). PCIe and NVL cards have
# no entry: their links depend on bridges and topology. First match on the nvidia-smi name wins.
NVLINK_GBS = [
    (r"PCIe|NVL\b", None, "PCIe/NVL card: no single NVLink figure"),
    (r"\bH200\b", 450.0, "H200 SXM, NVLink 4: 900 GB/s bidirectional"),
    (r"\bH100\b", 450.0, "H100 SXM, NVLink 4: 900 GB/s bidirectional"),
    (r"\bB200\b", 900.0, "B200, NVLink 5: 1.8 TB/s bidirectional"),
    (r"\bA100\b.*SXM|SXM.*\bA100\b", 300.0, "A100 SXM, NVLink 3: 600 GB/s bidirectional"),
]


def parse_allreduce(output):
    """The `bench: size_bytes=... algbw_gbs=... busbw_gbs=... key=value...` lines of
    allreduce_bandwidth, as dicts (numbers as floats where they parse)."""
    rows = []
    for size, alg, bus, rest in ALLREDUCE_LINE.findall(output):
        row = dict(size_bytes=int(size), algbw_gbs=float(alg), busbw_gbs=float(bus))
        for k, v in re.findall(r"(\w+)=(\S+)", rest):
            try:
                row[k] = float(v)
            except ValueError:
                row[k] = v
        rows.append(row)
    return rows


def visible_gpus():
    """Names of the GPUs this run may use: nvidia-smi -L, narrowed by CUDA_VISIBLE_DEVICES."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = re.findall(r"^GPU (\d+): (.*?)(?: \(UUID: .*\))?$", out, re.M)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        names = [(i, n) for i, n in names if i in wanted]
    return [n for _, n in names]


def nvlink_reference(name):
    for pattern, gbs, what in NVLINK_GBS:
        if re.search(pattern, name):
            return gbs, what
    return None, "no reference figure for %s" % name


class Bench:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.env = dict(os.environ, OMP_NUM_THREADS="1")
        self.rows = []  # dicts: section, ratio, value, baseline, better, note
        self.tmp = tempfile.mkdtemp(prefix="accel-bench-")
        self.root = ROOT

    launch_split = staticmethod(launch_split)  # for the section modules (shm_bench.py)

    def exe(self, rel):
        path = os.path.join(self.build, rel)
        if not os.access(path, os.X_OK):
            raise Skip("not built: " + path)
        return path

    def add(self, section, ratio, value, baseline, better, note=""):
        self.rows.append(dict(section=section, ratio=ratio,
                              value="" if value is None else "%.3f" % value,
                              baseline=baseline, better=better, note=note))
        shown = "skipped" if value is None else "%.3f" % value
        print("  %-46s %9s   %s" % (ratio, shown, note), flush=True)

    # ---- training loop: original vs migrated, launcher scaling, Python DDP -----------------
    def training(self):
        a = self.args
        steps = ["--steps", str(a.steps), "--warmup", str(a.warmup)]
        original = self.exe("bench/overhead_train")
        migrated = self.exe("bench/overhead_train_migrated")
        launcher = self.exe("launcher/accelerate")
        # torchrun with Debian 13's libuv-less store worked around (test/support/torchrun.py).
        torchrun = shutil.which("torchrun", path="/usr/bin") and os.path.join(ROOT, "test", "support", "torchrun.py")

        def launch(n):
            return launch_split(launcher, n, migrated, GLOBAL_BATCH, steps)

        def ddp(n):
            logs = tempfile.mkdtemp(dir=self.tmp)
            return ["/usr/bin/python3", torchrun, "--nproc_per_node", str(n), "--master_addr", "127.0.0.1",
                    "--master_port", str(free_port()), "--redirects", "1", "--tee", "1", "--log_dir", logs,
                    os.path.join(ROOT, "bench", "ddp_train.py")] + steps + ["--batch-size", str(GLOBAL_BATCH // n)]

        configs = {
            "original": lambda: [original] + steps + ["--batch-size", str(GLOBAL_BATCH)],
            "migrated": lambda: [migrated] + steps + ["--batch-size", str(GLOBAL_BATCH)],
            # The same run writing the step trace (ACCELERATE_TRACE, what `accelerate verify`
            # reads): its cost per step against "migrated", where the trace is off.
            "traced": lambda: [migrated] + steps + ["--batch-size", str(GLOBAL_BATCH)],
            "launch1": lambda: launch(1),
            "launch2": lambda: launch(2),
        }
        envs = {"traced": dict(self.env, ACCELERATE_TRACE=tempfile.mkdtemp(dir=self.tmp))}
        if torchrun and not a.no_python:
            configs["ddp1"] = lambda: ddp(1)
            configs["ddp2"] = lambda: ddp(2)
        times = {k: [] for k in configs}
        cpu = {k: [] for k in configs}  # CPU time per step of process 0: robust to a loaded machine
        device = "cpu"
        for r in range(a.repeats):
            order = list(configs)
            if r % 2:
                order.reverse()  # alternate so that no configuration always runs after another
            for k in order:
                out, _, _ = run_timed(configs[k](), env=envs.get(k, self.env))
                times[k].append(step_ms(out))
                cpu[k].append(step_ms(out, "cpu_ms"))
                m = re.search(r"^device: (\S+)", out, re.M)
                if k == "original" and m:
                    device = m.group(1)
            print("  round %d/%d: %s" % (r + 1, a.repeats,
                  "  ".join("%s %.1f ms" % (k, times[k][-1]) for k in configs)), flush=True)

        def ratio(num, den, t=times):
            return statistics.median(n / d for n, d in zip(t[num], t[den]))

        med = {k: statistics.median(v) for k, v in times.items()}
        cmed = {k: statistics.median(v) for k, v in cpu.items()}
        note_ms = lambda *ks: ", ".join("%s %.1f ms" % (k, med[k]) for k in ks)
        note_cpu = lambda *ks: ", ".join("%s %.1f ms CPU" % (k, cmed[k]) for k in ks)
        self.add("overhead", "migrated / original step time, 1 process", ratio("migrated", "original"),
                 "original", "lower (target <= 1.02)", note_ms("migrated", "original"))
        self.add("overhead", "migrated / original CPU time per step, 1 process", ratio("migrated", "original", cpu),
                 "original", "lower (target <= 1.02)", note_cpu("migrated", "original"))
        self.add("overhead", "traced / untraced step time, 1 process (ACCELERATE_TRACE)", ratio("traced", "migrated"),
                 "migrated", "lower", note_ms("traced", "migrated"))
        self.add("overhead", "traced / untraced CPU time per step, 1 process", ratio("traced", "migrated", cpu),
                 "migrated", "lower", note_cpu("traced", "migrated"))
        self.add("scaling", "C++ speedup 2 vs 1 processes (launcher)", ratio("launch1", "launch2"),
                 "launch1", "higher (limit 2.0)", note_ms("launch1", "launch2") + "; global batch %d" % GLOBAL_BATCH)
        self.add("scaling", "C++ CPU-time speedup 2 vs 1 processes", ratio("launch1", "launch2", cpu),
                 "launch1", "higher (limit 2.0)", note_cpu("launch1", "launch2") + "; waits excluded")
        if "ddp1" in times:
            self.add("scaling", "Python DDP speedup 2 vs 1 processes", ratio("ddp1", "ddp2"),
                     "ddp1", "higher (limit 2.0)", note_ms("ddp1", "ddp2"))
            self.add("scaling", "Python DDP CPU-time speedup 2 vs 1 processes", ratio("ddp1", "ddp2", cpu),
                     "ddp1", "higher (limit 2.0)", note_cpu("ddp1", "ddp2") + "; waits excluded")
            self.add("python", "C++ / Python DDP step time, 1 process", ratio("launch1", "ddp1"),
                     "ddp1", "lower", note_ms("launch1", "ddp1"))
            self.add("python", "C++ / Python DDP step time, 2 processes", ratio("launch2", "ddp2"),
                     "ddp2", "lower", note_ms("launch2", "ddp2"))
            self.add("python", "C++ / Python DDP CPU time per step, 2 processes", ratio("launch2", "ddp2", cpu),
                     "ddp2", "lower", note_cpu("launch2", "ddp2"))
        else:
            for name in ("Python DDP speedup 2 vs 1 processes", "Python DDP CPU-time speedup 2 vs 1 processes",
                         "C++ / Python DDP step time, 1 process", "C++ / Python DDP step time, 2 processes",
                         "C++ / Python DDP CPU time per step, 2 processes"):
                self.add("python", name, None, "ddp", "", "skipped: --no-python or no /usr/bin/torchrun")
        self.raw = times
        return device

    # ---- gradient sync: bucketed overlapped vs flat all-reduce ------------------------------
    def grad_sync(self):
        exe = self.exe("bench/grad_sync")
        extra = ["--steps", "4", "--layers", "4"] if self.args.quick else ["--steps", "10"]
        out, _, _ = run_timed([exe, "--spawn", "2"] + extra, env=self.env)
        exposed = re.search(r"sync time per step \(step - compute\) / flat all_reduce = ([0-9.\-]+)", out)
        whole = re.search(r"step / \(compute \+ flat all_reduce\)\s*= ([0-9.\-]+)", out)
        hidden = re.search(r"share of communication hidden behind backward = ([0-9.\-]+)%", out)
        if not (exposed and whole):
            raise RuntimeError("unexpected grad_sync output:\n" + out)
        note = "overlap hides %s%% of the all-reduce" % hidden.group(1) if hidden else ""
        self.add("grad_sync", "exposed sync time / flat all-reduce (2 proc)", float(exposed.group(1)),
                 "flat all_reduce", "lower", note)
        self.add("grad_sync", "step / (compute + flat all-reduce) (2 proc)", float(whole.group(1)),
                 "compute + flat", "lower", "")

    # ---- data loader: prepared (sharded) vs LibTorch's plain loader -------------------------
    def loader(self):
        exe = self.exe("bench/loader_throughput")
        extra = ["--items", "2048", "--repeats", "3"] if self.args.quick else []
        out, _, _ = run_timed([exe, "--spawn", "2"] + extra, env=self.env)
        lines = re.findall(r"ratio prepared/plain: wall ([0-9.]+) cpu ([0-9.]+)", out)
        if not lines:
            raise RuntimeError("unexpected loader_throughput output:\n" + out)
        wall = statistics.median(float(w) for w, _ in lines)
        cpu = statistics.median(float(c) for _, c in lines)
        note = "median over %d (rank, workers, sampler) cases" % len(lines)
        self.add("loader", "prepared / plain loader throughput (wall)", wall, "LibTorch loader", "higher (~1)", note)
        self.add("loader", "prepared / plain loader throughput (CPU time)", cpu, "LibTorch loader", "higher (~1)", note)

    # ---- checkpoints: save_state + load_state vs torch::save + torch::load of the same tensors --
    def checkpoint(self):
        exe = self.exe("bench/checkpoint_io")
        extra = ["--params_m", "2", "--repeats", "1"] if self.args.quick else []
        out, _, _ = run_timed([exe] + extra, env=self.env, timeout=1800)
        m = re.search(r"^bench: checkpoint (.*)$", out, re.M)
        if not m:
            raise RuntimeError("unexpected checkpoint_io output:\n" + out[-2000:])
        v = {k: float(x) for k, x in re.findall(r"(\w+)=([0-9.]+)", m.group(1))}
        size = re.search(r"checkpoint_io: (\d+) parameters", out)
        what = "%.1fM parameters + AdamW state" % (int(size.group(1)) / 1e6) if size else "model + AdamW state"
        self.add("checkpoint", "(save_state + load_state) / (torch::save + load)", v["ratio"],
                 "torch::save/load", "lower (target <= 1.2)",
                 "%s: save %.0f + load %.0f ms vs %.0f + %.0f ms" % (
                     what, v["save_ms"], v["load_ms"], v["baseline_save_ms"], v["baseline_load_ms"]))
        self.add("checkpoint", "... / (torch::save + fsync + load)", v["durable_ratio"],
                 "durable torch::save", "lower (~1)",
                 "save_state fsyncs every file; the baseline's fsync took %.0f ms" % v["baseline_fsync_ms"])
        self.add("checkpoint", "bytes written / torch::save bytes", v["bytes_ratio"], "torch::save", "lower (~1)",
                 "%.1f MB vs %.1f MB" % (v["bytes"] / 1e6, v["baseline_bytes"] / 1e6))

    # ---- tool time vs clang -fsyntax-only on the same file -----------------------------------
    def tool_time(self):
        import tool_time
        tool_time.measure(self, run_timed, Skip)

    # ---- shared-memory all-reduce, scaling with and without it, overlap and bucket sizes ----
    def shm(self):
        import shm_bench
        shm_bench.measure(self, run_timed, step_ms, Skip)
    # ---- sharded data parallel: memory and step time per FSDP strategy (bench/fsdp_bench.py) --
    def fsdp(self):
        import fsdp_bench
        fsdp_bench.measure(self, run_timed, Skip)

    # ---- GPU: mixed precision step times and NCCL all-reduce bus bandwidth -------------------
    def gpu(self, device):
        gpus = visible_gpus()
        cuda = device is not None and device.startswith("cuda")
        if not gpus and not cuda:
            raise Skip("no GPU (%s; nvidia-smi lists none)" % (
                "the training loop did not run" if device is None else "torch::cuda::is_available() is false"))
        if cuda:
            self.gpu_precision()
        else:
            for p in ("bf16", "fp16"):
                self.add("gpu", "GPU %s / fp32 step time, 1 process" % p, None, "fp32", "",
                         "skipped: the training loop ran on %s" % (device or "nothing (not built?)"))
        self.nccl_bandwidth(gpus)

    def gpu_precision(self):
        migrated = self.exe("bench/overhead_train_migrated")
        launcher = self.exe("launcher/accelerate")
        steps = ["--steps", str(self.args.steps), "--warmup", str(self.args.warmup), "--batch-size", str(GLOBAL_BATCH)]
        times = {p: [] for p in ("no", "bf16", "fp16")}
        for r in range(self.args.repeats):
            for p in times:
                out, _, _ = run_timed([launcher, "launch", "--num_processes", "1", "--mixed_precision", p,
                                       "--main_process_port", "0", migrated] + steps, env=self.env)
                times[p].append(step_ms(out))
        for p in ("bf16", "fp16"):
            r = statistics.median(a / b for a, b in zip(times[p], times["no"]))
            self.add("gpu", "GPU %s / fp32 step time, 1 process" % p, r, "fp32", "lower",
                     "fp32 %.2f ms" % statistics.median(times["no"]))

    def nccl_bandwidth(self, gpus):
        """busbw of an fp32 all-reduce at the largest size, one process per visible GPU,
        against the card's NVLink figure (per direction)."""
        name = "NCCL all-reduce busbw / NVLink per direction"
        try:
            exe = self.exe("bench/allreduce_bandwidth")
            launcher = self.exe("launcher/accelerate")
        except Skip as e:
            self.add("gpu", name, None, "NVLink spec", "", "skipped: %s" % e)
            return
        # A cheap 1-process probe first: a LibTorch without CUDA would run the big sizes on CPU.
        probe = parse_allreduce(run_timed([exe, "--sizes", "4K", "--iters", "1", "--warmup", "0"], env=self.env)[0])
        if not probe or not str(probe[0].get("device", "")).startswith("cuda"):
            self.add("gpu", name, None, "NVLink spec", "", "skipped: allreduce_bandwidth runs on %s, not cuda "
                     "(LibTorch without CUDA? see docs/benchmarks.md#gpu-section)" % (probe[0].get("device") if probe else "?"))
            return
        n = max(len(gpus), 1)
        size = "256M" if self.args.quick else "1G"
        cmd = [launcher, "launch", "--num_processes", str(n), "--main_process_port", "0", "--no_rank_prefix",
               exe, "--sizes", size] + (["--iters", "5", "--warmup", "2"] if self.args.quick else [])
        out, _, _ = run_timed(cmd, env=self.env, timeout=900)
        rows = parse_allreduce(out)
        if not rows:
            raise RuntimeError("no 'bench: size_bytes=' line from allreduce_bandwidth:\n" + out[-2000:])
        row = rows[-1]
        where = "%d x %s" % (n, gpus[0] if gpus else "GPU")
        if not str(row.get("device", "")).startswith("cuda"):
            self.add("gpu", name, None, "NVLink spec", "",
                     "skipped: allreduce_bandwidth ran on %s (LibTorch without CUDA?)" % row.get("device"))
            return
        if n == 1:
            # One process has nothing to all-reduce: busbw is 0 by definition, not a measurement.
            self.add("gpu", name, None, "NVLink spec", "",
                     "skipped: 1 GPU, busbw is 0 by definition; device copy %.1f GB/s at %d MiB (not a link figure)"
                     % (row.get("copy_gbs", 0.0), row["size_bytes"] >> 20))
            return
        gbs, what = nvlink_reference(gpus[0]) if gpus else (None, "GPU name unknown")
        note = "%s: busbw %.1f GB/s, algbw %.1f GB/s at %d MiB, %s" % (
            where, row["busbw_gbs"], row["algbw_gbs"], row["size_bytes"] >> 20, row.get("backend", "?"))
        if gbs is None:
            self.add("gpu", name, None, "NVLink spec", "higher (~1)", "no reference: %s; %s" % (what, note))
        else:
            self.add("gpu", name, row["busbw_gbs"] / gbs, "NVLink spec", "higher (~1)",
                     "%s; reference %.0f GB/s (%s)" % (note, gbs, what))

    def run_section(self, name, fn, *a):
        print("\n== %s" % name, flush=True)
        t0 = time.perf_counter()
        try:
            result = fn(*a)
        except Skip as e:
            self.add(name, name + " (all rows)", None, "", "", "skipped: %s" % e)
            return None
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            self.add(name, name + " (all rows)", None, "", "", "FAILED: %s" % str(e).splitlines()[0])
            print(str(e), file=sys.stderr)
            self.failed = True
            return None
        print("  (%.0f s)" % (time.perf_counter() - t0), flush=True)
        return result


def plot(rows, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing (apt-get install python3-matplotlib): no plot", file=sys.stderr)
        return False
    shown = [r for r in rows if r["value"]]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(shown) + 1.4))
    names = [r["ratio"] for r in shown][::-1]
    values = [float(r["value"]) for r in shown][::-1]
    colours = {"overhead": "tab:blue", "scaling": "tab:green", "python": "tab:orange", "grad_sync": "tab:purple",
               "loader": "tab:brown", "tool": "tab:gray", "gpu": "tab:red", "checkpoint": "tab:olive",
               "allreduce": "tab:cyan", "policy": "tab:pink", "multinode": "navy", "fsdp": "gold",
               "lockstep": "teal"}
    ax.barh(names, values, color=[colours.get(r["section"], "tab:blue") for r in shown][::-1])
    ax.axvline(1.0, color="black", linewidth=0.8)
    for y, v in enumerate(values):
        ax.text(v, y, " %.2f" % v, va="center", fontsize=8)
    ax.set_xlabel("ratio (1.0 = same as the baseline measured in the same run)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    return True


def build_flags(build):
    """The build's compiler, type and that type's C++ flags, from its CMakeCache.txt: the
    ratios depend on them (the ci preset's -O1 left the all-reduce kernel scalar until it
    was compiled at -O3 alone: results/2026-11-30-shm-reduce-O1/), so every run prints them."""
    cache = {}
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                m = re.match(r"^([A-Z_]+):[A-Z]+=(.*)$", line.strip())
                if m:
                    cache[m.group(1)] = m.group(2)
    except OSError:
        return "unknown (no CMakeCache.txt)"
    kind = cache.get("CMAKE_BUILD_TYPE") or "none"
    flags = " ".join(x for x in (cache.get("CMAKE_CXX_FLAGS", ""), cache.get("CMAKE_CXX_FLAGS_" + kind.upper(), ""))
                     if x.strip())
    return "%s, %s, %s" % (os.path.basename(cache.get("CMAKE_CXX_COMPILER", "?")), kind, flags or "no flags")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory (default: build)")
    p.add_argument("--out", help="where the CSV and PNG go (default: BUILD/bench-results)")
    p.add_argument("--quick", action="store_true", help="few steps and rounds: checks that every row is produced")
    p.add_argument("--repeats", type=int, help="interleaved rounds of the training loops (default 3, quick 1)")
    p.add_argument("--steps", type=int, help="timed steps per training run (default 30, quick 6)")
    p.add_argument("--no-python", action="store_true", help="skip the Python DDP runs")
    p.add_argument("--no-tool", action="store_true", help="skip the accel-migrate timing")
    p.add_argument("--only", help="comma-separated sections to run (training, grad_sync, loader, checkpoint, "
                                  "shm, fsdp, tool, gpu, multinode); default: all (multinode not with --quick)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 unless every row has a value (except GPU rows, and rows skipped by --no-*)")
    args = p.parse_args()
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.steps = args.steps or (6 if args.quick else 30)
    args.warmup = 2 if args.quick else 5
    args.tool_repeats = 1 if args.quick else 2
    if args.repeats < 1 or args.steps < 1:
        p.error("--repeats and --steps must be positive")
    if not os.path.isdir(args.build):
        p.error("no build directory %s (configure and build first; see docs/benchmarks.md)" % args.build)
    out_dir = os.path.abspath(args.out or os.path.join(args.build, "bench-results"))
    os.makedirs(out_dir, exist_ok=True)

    load0 = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print("accelerate benchmarks, %s: %d CPUs, load average %.2f %.2f %.2f at start%s" % (
        started, os.cpu_count(), *load0, " (quick)" if args.quick else ""))
    print("build: %s (%s)" % (build_flags(args.build), os.path.abspath(args.build)))
    print("training loop: MLP 512-1024-1024-10, global batch %d, %d timed steps, %d rounds, OMP_NUM_THREADS=1"
          % (GLOBAL_BATCH, args.steps, args.repeats), flush=True)
    b = Bench(args)
    b.failed = False
    t0 = time.perf_counter()
    only = set(args.only.split(",")) if args.only else None
    wanted = lambda name: only is None or name in only
    device = b.run_section("training loop", b.training) if wanted("training") else None
    if wanted("grad_sync"):
        b.run_section("grad_sync", b.grad_sync)
    if wanted("loader"):
        b.run_section("loader", b.loader)
    if wanted("checkpoint"):
        b.run_section("checkpoint", b.checkpoint)
    if wanted("shm"):
        b.run_section("shm", b.shm)
    if wanted("fsdp"):
        b.run_section("fsdp", b.fsdp)
    if not args.no_tool and wanted("tool"):
        b.run_section("tool", b.tool_time)
    if wanted("gpu"):
        b.run_section("gpu", b.gpu, device)
    if wanted("multinode") and (only is not None or not args.quick):  # needs root: bench/multinode_bench.py
        import multinode_bench
        b.run_section("multinode", multinode_bench.run, b, Skip)
    load1 = os.getloadavg()
    total = time.perf_counter() - t0

    print("\n%-10s %-48s %9s  %-22s %s" % ("section", "ratio", "value", "better", "note"))
    for r in b.rows:
        print("%-10s %-48s %9s  %-22s %s" % (r["section"], r["ratio"], r["value"] or "skipped", r["better"], r["note"]))
    print("load average %.2f at start, %.2f at end (%d CPUs); %.0f s in all" % (load0[0], load1[0], os.cpu_count(), total))

    csv_path = os.path.join(out_dir, "benchmarks.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["section", "ratio", "value", "baseline", "better", "note"])
        w.writeheader()
        w.writerows(b.rows)
    png_path = os.path.join(out_dir, "benchmarks.png")
    title = "Accelerate for LibTorch, %s, %d CPUs, load %.1f-%.1f%s" % (
        started, os.cpu_count(), load0[0], load1[0], " (quick)" if args.quick else "")
    drew = plot(b.rows, png_path, title)
    print("wrote %s%s" % (csv_path, (" and " + png_path) if drew else ""))
    shutil.rmtree(b.tmp, ignore_errors=True)
    if args.strict:
        missing = [r["ratio"] for r in b.rows
                   if not r["value"] and r["section"] != "gpu" and "--no-python" not in r["note"]
                   and "skipped: --quick" not in r["note"]]
        if missing:
            print("missing rows: " + "; ".join(missing), file=sys.stderr)
            return 1
    return 1 if b.failed else 0


if __name__ == "__main__":
    sys.exit(main())
