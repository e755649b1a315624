#!/usr/bin/env python3
"""The measuring half of bench/gpu/run.sh: runs what a build made, writes raw results.

    measure.py --build BUILD --work DIR [--quick] [--only tests,resident,examples,bench] [--examples a,b]
               [--deadline EPOCH]

- tests: the CUDA tests (CudaRuntime.*, the fp16 scaler test, the fused-kernel check) of
  precision_tests; a skip counts as not run.
- examples: each example as built (original) and as migrated by accel-migrate on another
  machine (<name>_migrated, ACCEL_MIGRATED_DIR), the migrated one alone and under
  `accelerate launch --num_processes 1`; their `final:` lines side by side.
- resident: bench/resident_train, whose data set lives on the device (batches cut by hand
  from it), so that a step is the model's work: a ~105M-parameter MLP, original and migrated
  fp32/bf16/fp16 through the launcher, and hf_train.py --resident (PyTorch alone; Hugging Face
  Accelerate fp32/bf16/fp16), rounds interleaved (issue 51: migrated/original <= 1.03 and
  bf16/fp32 <= 0.6 expected on a GPU). Runs before the examples, so a slice cut short still
  has it.
- bench: bench/overhead_train (original and migrated, fp32/bf16/fp16 through the launcher)
  and bench/gpu/hf_train.py (PyTorch alone; Hugging Face Accelerate fp32/bf16/fp16), two model
  sizes, rounds interleaved; one CSV row per run.

Everything goes to DIR: results.csv (one row per run, with the device each program named),
summary.txt (ratios: medians of per-round ratios, with their range), and one log per run. Stops starting new
runs after --deadline (seconds since the epoch) and says so in summary.txt. With --quick
(the CPU dry run) every part runs with tiny sizes on whatever device there is.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["part", "name", "program", "precision", "config", "round", "rc", "wall_s", "device",
          "step_ms", "mean_ms", "cpu_ms", "final", "note"]
EXAMPLE_ARGS = {
    "regression": ["--epochs", "3", "--batch-size", "32"],
    "trainer_class": ["--epochs", "3", "--batch-size", "32"],
    "gan": ["--epochs", "2", "--batch-size", "64"],
    "mnist_cnn": ["--epochs", "1", "--train-size", "1024", "--batch-size", "64"],
}
# (name, batch, hidden): the benchmark's default model (a few kernel launches a step on a GPU)
# and a wide one whose matrix products dominate, where bf16/fp16 can show their speed.
CONFIGS = [("mlp1024_b256", 256, 1024), ("mlp4096_b1024", 1024, 4096)]
# resident_train's model, (name, batch, hidden, layers, features): 1024 -> 7 x 4096 -> 10,
# ~105M parameters, large enough for tensor cores to decide the step.
RESIDENT = [("mlp1024-4096x7_b512", 512, 4096, 7, 1024)]


class Runner:
    def __init__(self, a):
        self.a = a
        self.rows = []
        self.notes = []
        self.device = ""  # what the original program ran on (the first bench run says)
        self.no_hf = False
        self.different = []  # examples whose final lines differ between the three runs
        self.csv_path = os.path.join(a.work, "results.csv")
        self.env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "4"), PYTHONUNBUFFERED="1")
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            self.env.pop(k, None)

    def late(self):
        return self.a.deadline and time.time() > self.a.deadline

    def run(self, part, name, cmd, program, precision="", config="", rnd=0, timeout=300):
        """Runs one command, logs it, parses the lines our programs print; returns the row."""
        row = dict.fromkeys(FIELDS, "")
        row.update(part=part, name=name, program=program, precision=precision, config=config, round=rnd)
        log = os.path.join(self.a.work, "%s-%s-%s-%s-%s.log" % (part, name, program, precision or "x", rnd))
        t0 = time.time()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=self.env, timeout=timeout, cwd=self.a.work)
            out, row["rc"] = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out, row["rc"] = (e.stdout or "") if isinstance(e.stdout, str) else "", "timeout"
        except OSError as e:
            out, row["rc"] = str(e), "missing"
        row["wall_s"] = "%.2f" % (time.time() - t0)
        with open(log, "w") as f:
            f.write("$ %s\n%s" % (" ".join(cmd), out))
        parse_output(out, row)
        self.rows.append(row)
        self.save()
        return row

    def save(self):
        with open(self.csv_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(self.rows)


def parse_output(out, row):
    dev = re.findall(r"^(?:\[rank0\]: )?device: (\S+)", out, re.M)
    cuda = re.search(r"CUDA available! Training on GPU", out)
    row["device"] = dev[-1] if dev else ("cuda" if cuda else "")
    m = re.findall(r"bench: step_ms=([\d.]+) mean_ms=([\d.]+) cpu_ms=([\d.]+)", out)
    if m:
        row["step_ms"], row["mean_ms"], row["cpu_ms"] = m[-1]
    fin = re.findall(r"^(?:\[rank0\]: )?final: (.*)$", out, re.M)
    row["final"] = fin[-1].strip() if fin else ""
    gt = re.search(r"\[  PASSED  \] (\d+) test", out)
    skipped = re.search(r"\[  SKIPPED \] (\d+) test", out)
    failed = re.search(r"\[  FAILED  \] (\d+) test", out)
    if gt or failed:
        row["note"] = "passed %s, skipped %s, failed %s" % (gt.group(1) if gt else 0,
                                                            skipped.group(1) if skipped else 0,
                                                            failed.group(1) if failed else 0)


def exe(a, rel):
    return os.path.join(a.build, rel)


def launcher_cmd(a, program, precision, args):
    return [exe(a, "launcher/accelerate"), "launch", "--num_processes", "1", "--mixed_precision",
            precision, "--main_process_port", "0", program] + args


def part_tests(r):
    a = r.a
    for binary, flt in (("precision_tests", "CudaRuntime.*:PrecisionAccelerator.Fp16OnCuda*:GradScaler*Fused*"),
                        ("data_loader_tests", "PreparedLoader.DeviceTransferCustomisationPoint")):
        row = r.run("tests", "cuda", [exe(a, "test/unit/" + binary), "--gtest_filter=" + flt], binary, timeout=300)
        r.notes.append("tests: %s %s -> rc %s (%s)" % (binary, flt, row["rc"], row["note"] or "no gtest summary"))


def part_examples(r):
    a = r.a
    for name, args in EXAMPLE_ARGS.items():
        if r.late():
            r.notes.append("examples: deadline reached before %s" % name)
            return
        finals = {}
        for program, cmd in (
                ("original", [exe(a, "examples/" + name)]),
                ("migrated", [exe(a, "examples/%s_migrated" % name)]),
                ("migrated_launch", launcher_cmd(a, exe(a, "examples/%s_migrated" % name), "no", []))):
            out = os.path.join(a.work, "ex-%s-%s" % (name, program))
            extra = ["--out", out] + (["--data", os.path.join(a.work, "mnist-data")] if name == "mnist_cnn" else [])
            row = r.run("examples", name, cmd + args + extra, program, timeout=300)
            finals[program] = row["final"]
        same = len(set(finals.values())) == 1 and finals["original"]
        if not same:
            r.different.append(name)
        r.notes.append("examples: %-13s %s | original: %s | migrated: %s | migrated under launch: %s" % (
            name, "SAME" if same else "DIFFERENT", finals["original"], finals["migrated"], finals["migrated_launch"]))


def program_runs(a, binary, args, py_args):
    """(program, precision, command) of one round: the C++ original, the migrated program under
    the launcher in fp32/bf16/fp16, PyTorch alone and Hugging Face Accelerate."""
    py = [sys.executable, os.path.join(HERE, "hf_train.py")]
    runs = [("cxx_original", "no", [exe(a, "bench/" + binary)] + args)]
    for p in ("no", "bf16", "fp16"):
        runs.append(("cxx_migrated", p, launcher_cmd(a, exe(a, "bench/%s_migrated" % binary), p, args)))
    runs.append(("py_plain", "no", py + ["--mode", "plain"] + args + py_args))
    for p in ("no", "bf16", "fp16"):
        runs.append(("py_hf_accelerate", p, py + ["--mode", "hf", "--mixed-precision", p] + args + py_args))
    return runs


def bench_runs(a, batch, hidden):
    steps = ["--steps", str(a.steps), "--warmup", "5", "--batch-size", str(batch), "--hidden", str(hidden)]
    return program_runs(a, "overhead_train", steps, [])


def resident_runs(a, batch, hidden, layers, features):
    args = ["--steps", str(a.steps), "--warmup", "5", "--batch-size", str(batch), "--hidden", str(hidden),
            "--layers", str(layers), "--features", str(features)]
    return program_runs(a, "resident_train", args, ["--resident"])


def measure_rounds(r, part, configs, runs_of):
    """Every config's runs, a.rounds times, the order alternating between rounds."""
    a = r.a
    for rnd in range(a.rounds):
        for config in configs:
            runs = runs_of(a, *config[1:])
            if rnd % 2:  # alternate the order, so that no program always runs first (but the
                runs = runs[:1] + runs[:0:-1]  # original, whose device decides about fp16)
            for program, precision, cmd in runs:
                if r.late():
                    r.notes.append("%s: deadline reached in round %d" % (part, rnd))
                    return
                if precision == "fp16" and r.device == "cpu":
                    continue  # the runtime refuses fp16 on a CPU (docs/mixed-precision.md)
                if program == "py_hf_accelerate" and r.no_hf:
                    continue
                row = r.run(part, "overhead" if part == "bench" else part, cmd, program, precision, config[0], rnd,
                            timeout=240)
                if program == "py_hf_accelerate" and row["rc"] == 3:  # hf_train.py: not installed
                    row.update(rc="skipped", note="Hugging Face Accelerate is not installed")
                    r.no_hf = True
                    r.notes.append("%s: Hugging Face Accelerate is not installed: its rows are skipped" % part)
                    r.save()
                if program == "cxx_original":
                    r.device = row["device"]
            same_numbers(r, part, config[0], rnd)


def same_numbers(r, part, config, rnd):
    """The migrated program on 1 process computes what the original computes: their `final:`
    lines (fp32) must be equal; a difference is recorded (--require-same fails on it)."""
    finals = {x["program"]: x["final"] for x in r.rows if x["part"] == part and x["config"] == config
              and x["round"] == rnd and x["precision"] == "no" and x["program"] in ("cxx_original", "cxx_migrated")}
    if len(finals) == 2 and finals["cxx_original"] != finals["cxx_migrated"]:
        r.different.append("%s %s round %d" % (part, config, rnd))
        r.notes.append("%s %s round %d: DIFFERENT final lines: original %s, migrated %s" % (
            part, config, rnd, finals["cxx_original"], finals["cxx_migrated"]))


def part_resident(r):
    measure_rounds(r, "resident", RESIDENT, resident_runs)


def part_bench(r):
    measure_rounds(r, "bench", CONFIGS, bench_runs)


def ratio_stats(rows, num, den, field="step_ms"):
    """Per-round ratios field(num) / field(den) (num/den are (program, precision)): their
    median, lowest and highest, and how many rounds had both."""
    by = {}
    for row in rows:
        if row[field]:
            by[(row["program"], row["precision"], row["round"])] = float(row[field])
    ratios = [by[num + (k,)] / by[den + (k,)] for k in sorted({x[2] for x in by})
              if num + (k,) in by and den + (k,) in by]
    return (statistics.median(ratios), min(ratios), max(ratios), len(ratios)) if ratios else (None, None, None, 0)


RATIOS = (("1-process overhead: migrated fp32 / original", ("cxx_migrated", "no"), ("cxx_original", "no")),
          # The host's share: CPU time of the process per step (on a GPU, what the runtime adds
          # on the host shows here first; on a CPU it is the step itself).
          ("host CPU per step: migrated fp32 / original", ("cxx_migrated", "no"), ("cxx_original", "no"), "cpu_ms"),
          ("C++ bf16 / fp32", ("cxx_migrated", "bf16"), ("cxx_migrated", "no")),
          ("C++ fp16 / fp32", ("cxx_migrated", "fp16"), ("cxx_migrated", "no")),
          ("Python: HF Accelerate fp32 / PyTorch alone", ("py_hf_accelerate", "no"), ("py_plain", "no")),
          ("C++ migrated / HF Accelerate, fp32", ("cxx_migrated", "no"), ("py_hf_accelerate", "no")),
          ("C++ migrated / HF Accelerate, bf16", ("cxx_migrated", "bf16"), ("py_hf_accelerate", "bf16")),
          ("C++ migrated / HF Accelerate, fp16", ("cxx_migrated", "fp16"), ("py_hf_accelerate", "fp16")))


def summarise(r, part, configs):
    lines = []
    for config in configs:
        rows = [x for x in r.rows if x["part"] == part and x["config"] == config[0]]
        if not rows:
            continue
        med = {}
        for x in rows:
            if x["step_ms"]:
                med.setdefault((x["program"], x["precision"]), []).append(float(x["step_ms"]))
        lines.append("%s %s: median step_ms per program: %s" % (part, config[0], ", ".join(
            "%s/%s %.3f (n=%d)" % (k[0], k[1], statistics.median(v), len(v)) for k, v in sorted(med.items()))))
        for label, num, den, *field in RATIOS:
            ratio, lo, hi, n = ratio_stats(rows, num, den, *field)
            lines.append("%s %s: %s = %s (rounds %d%s)" % (
                part, config[0], label, "%.3f" % ratio if ratio else "n/a", n,
                ", range %.3f-%.3f" % (lo, hi) if ratio else ""))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (the CPU dry run)")
    ap.add_argument("--only", default="tests,resident,examples,bench")
    ap.add_argument("--deadline", type=float, default=0)
    ap.add_argument("--require-same", action="store_true",
                    help="fail when an example's, or a benchmark's original and migrated fp32, final lines differ "
                         "(on CPU they must be equal: the dry run)")
    ap.add_argument("--examples", default=",".join(EXAMPLE_ARGS),
                    help="comma-separated examples to run (default: all four)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    os.makedirs(a.work, exist_ok=True)
    a.steps, a.rounds = (3, 1) if a.quick else (40, 3)
    unknown = set(a.examples.split(",")) - set(EXAMPLE_ARGS)
    if unknown:
        ap.error("unknown example(s): %s" % ", ".join(sorted(unknown)))
    for name in list(EXAMPLE_ARGS):
        if name not in a.examples.split(","):
            del EXAMPLE_ARGS[name]
    if a.quick:
        EXAMPLE_ARGS.update({k: v[:1] + ["1"] + v[2:] for k, v in EXAMPLE_ARGS.items()})
        CONFIGS[:] = [("mlp64_b32", 32, 64)]
        RESIDENT[:] = [("mlp64-64x2_b32", 32, 64, 2, 64)]
    r = Runner(a)
    parts = a.only.split(",")
    for part, fn in (("tests", part_tests), ("resident", part_resident), ("examples", part_examples),
                     ("bench", part_bench)):
        if part in parts:
            fn(r)
    lines = r.notes + summarise(r, "resident", RESIDENT) + summarise(r, "bench", CONFIGS)
    with open(os.path.join(a.work, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    bad = [x for x in r.rows if x["rc"] not in (0, "skipped")]
    # A part that ran without a timed step of the original and of the migrated program
    # measured nothing (a parse that stopped matching, a program that printed no bench line).
    empty = [part for part in ("resident", "bench") if part in parts and not any(
        "%s: deadline reached" % part in n for n in r.notes) and not all(
        any(x["part"] == part and x["program"] == prog and x["precision"] == "no" and x["step_ms"] for x in r.rows)
        for prog in ("cxx_original", "cxx_migrated"))]
    if empty:
        print("measure: no timed step of the original and the migrated program in %s" % ", ".join(empty))
    if bad:
        print("measure: %d run(s) failed: %s" % (len(bad), ", ".join(
            "%s/%s/%s/%s rc=%s" % (x["part"], x["name"], x["program"], x["precision"], x["rc"]) for x in bad)))
    if a.require_same and r.different:
        print("measure: final lines differ for %s" % ", ".join(r.different))
    return 1 if bad or empty or (a.require_same and r.different) else 0


if __name__ == "__main__":
    sys.exit(main())
