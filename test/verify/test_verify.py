#!/usr/bin/env python3
"""`accelerate verify` on a migrated program and on deliberately broken migrations of it
(verify_probe.cpp, one mode each): each must get its verdict, exit status and step.

  test_verify.py --accelerate BUILT_LAUNCHER --probe VERIFY_PROBE --original VERIFY_ORIGINAL --work DIR

What each case shows (issue 48, "Done when"): a correct migration passes (bit-identical or
within the order controls' spread, the work split on every step); a loader left unprepared
is "not split"; a model prepared after the training loop, and a synchronisation skipped on
step 5 only, leave replicas that differ, named at their step (1 and 5); a sum loss averaged
like a mean DIVERGES at step 1; a data set padded to the global batch on 2 processes, the
padding trained as real samples, is "not split" at step 16 (the short last step: 64 samples
where 1 process has 41); full-batch training without a loader (full_batch) has all its 30 steps
traced, the last one seen only when the Accelerator ends; dropout with the tool's note is "announced", quoting it.
With --detail (the gradients before and after the synchronisation, recorded up to the
diverging step): the sum loss is "each process's own gradient was right ... their sum", and
inputs shifted on process 1 only (rank_data) are "already differ before the synchronisation".
Dropout without a note is not a case: order controls shuffle which draw meets which sample,
so they cannot tell it from rounding (docs/verify.md, "What verify cannot see").
With --original (verify_original.cpp: the probe's original, plain LibTorch with the step
trace's calls as `accel-migrate --trace-only` writes them, linked without libaccelerate): the
good probe's 1-process run is bit-identical to it at every step; against an original with
another learning rate it is DIVERGED at step 1 and verify exits 1.
A program that resumes from a checkpoint it writes in its working directory (resume): with
--reset_cwd it is bit-identical or within spread, every run starting from the directory as it
was (what a run wrote there is moved to WORK/TAG.files, the directory is left as it was);
without it verify stops after the first run with exit 2, naming the file and the flag, and
leaves the file where it is; when that file was there before verify started, the first run
changes it and verify stops with exit 2, naming it;
verify's own output kept with `| tee verify.log` in that folder is not taken for the program's.
A source file given as PROGRAM: --original refused, a missing one, and no installed package
beside a build tree's verify, each exit 2 with its message (the source mode's builds run in
readme.main_job, scripts/main-job.sh).
Prints "PASSED verify" when all hold.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

BN_NOTE = ("train.cpp:12:3: note: batch norm now takes its statistics over the global batch on every process "
           "(accelerate::nn::SyncBatchNorm) [accelerate-sync-batch-norm]\n")
BN_WARNING = ("train.cpp:12:3: warning: batch norm keeps per-process statistics (--keep-batch-norm): on N processes "
              "each normalises its own share [accelerate-sync-batch-norm]\n")
# mode -> (exit status, verdict pattern at the start of the verdict text, step or None, notes,
#          --detail's pattern or None: without one, verify runs without --detail)
NOTE = ("train.cpp:41:5: note: [accelerate-per-sample-randomness] torch::nn::Dropout draws per "
        "batch row: on N processes each process draws for its share\n")
CASES = {
    "good": (0, r"(bit-identical|within spread)", None, None, None),
    # Full-batch training without a loader: all 30 steps traced, the last one when the
    # Accelerator ends (before, it was lost, and verify compared 29).
    "full_batch": (0, r"(bit-identical|within spread): 30 steps,", None, None, None),
    "unprepared": (1, r"not split: step 1: samples per process 0/0: no samples came through prepared loaders", 1, None,
                   None),
    "late": (1, r"not split: step 1: the replicas of rank\(s\) \[1\] differ", 1, None, None),
    "no_sync": (1, r"not split: step 5: the replicas of rank\(s\) \[1\] differ", 5, None, None),
    # Beyond ten 1-process controls, five of the 2-process configuration itself ran too (the
    # bound names both): a bug moves them alike, and it stays DIVERGED at its step.
    "sum": (1, r"DIVERGED: DIVERGED at step 1: .*the controls' spread of 1 and of 2 processes", 1, None,
            r"at step 1 each process's own gradient was right, but the synchronisation averaged them where the "
            r"1-process gradient is their sum .*a sum-reduced loss"),
    "rank_data": (1, r"DIVERGED: DIVERGED at step 1: .*the controls' spread of 1 and of 2 processes", 1, None,
                  r"at step 1 the processes' own gradients already differ before the synchronisation"),
    # Every 2-process run differs (noise from std::random_device on process 1): the repeat run
    # is not the run to the bit, so the 2-process configuration's own controls, as wide as the
    # noise, are not taken, and it stays DIVERGED at step 1.
    "racy": (1, r"DIVERGED: DIVERGED at step 1: .*did not repeat itself to the bit", 1, None, None),
    "padded": (1, r"not split: step 16: samples per process 32/32 add up to 64, the reference step has 41: more than "
                  r"the data: samples trained twice \(padding counted as real samples", 16, None, None),
    # The tool's note that batch norm now uses the global batch says what was rewritten: it
    # excuses nothing (verdicts.ANNOUNCES: that rule announces by its warning only).
    "sum-bnnote": (1, r"DIVERGED: DIVERGED at step 1: ", 1, BN_NOTE, None),
    # Its warning (batch norm left per process) announces a difference, but only one beyond
    # the order controls: they run first.
    "sum-bnwarning": (0, r"announced: accelerate-sync-batch-norm: batch statistics kept per process .*DIVERGED at "
                         r"step 1: parameter \d+ .*beyond", 1, BN_WARNING, None),
    "dropout-noted": (0, r"announced: accelerate-per-sample-randomness: per-sample randomness", 1, NOTE, None),
}


# mode -> (exit status, pattern of the "1 process against the original" verdict, step)
ORIGINAL_CASES = {
    "good": (0, r"bit-identical: 32 steps, every parameter and loss equal to the original's", None),
    "original_lr": (1, r"DIVERGED: DIVERGED at step 1: parameter \d+ ", 1),
}


def original_cases(a, env):
    """verify --original on the good probe and against a changed original: the problems."""
    failures = []
    for mode, (status, pattern, step) in ORIGINAL_CASES.items():
        work = os.path.join(a.work, f"original-{mode}")
        p = subprocess.run([a.accelerate, "verify", "--cpu", "--work", work, "--original", a.original,
                            a.probe, mode], capture_output=True, text=True, env=env, timeout=900,
                           cwd=os.path.join(a.work, "cwd"))
        out = p.stdout + p.stderr
        verdict = next((l.split(": ", 1)[1] for l in out.splitlines()
                        if l.startswith("1 process against the original: ")), "")
        report = json.load(open(os.path.join(work, "report.json"))) if os.path.exists(
            os.path.join(work, "report.json")) else {}
        problems = []
        if p.returncode != status:
            problems.append(f"exit {p.returncode}, expected {status}")
        if not re.match(pattern, verdict):
            problems.append(f"verdict {verdict!r} does not match {pattern!r}")
        if (report.get("original") or {}).get("verdict") != verdict.split(":")[0]:
            problems.append(f"report.json's original verdict {report.get('original')!r}")
        # The plot has one line per configuration: 1 process against the original, N against 1.
        gaps = (report.get("original") or {}).get("gaps") or []
        if len(gaps) != 32 or (step and not gaps[step - 1] > 0):
            problems.append(f"report.json's original gaps {gaps[:3]}... ({len(gaps)} steps, 32 expected)")
        plot = os.path.join(work, "gaps.svg")
        if not os.path.exists(plot) or open(plot).read().count("<polyline") != 2:
            problems.append("gaps.svg has not one line per configuration (2)")
        print(f"{'ok  ' if not problems else 'FAIL'} original {mode}: {verdict or out[-600:]}", flush=True)
        if problems:
            failures.append(f"original {mode}: {'; '.join(problems)}\n{out[-2000:]}")
    return failures


STATE = "verify-probe-state.pt"  # verify_probe.cpp's kState


def resume_cases(a, env):
    """The resume mode from a fresh working directory, then from one that already holds the
    state file: the problems."""
    failures = []
    cwd = os.path.join(a.work, "resume-cwd")
    os.makedirs(cwd)
    work = os.path.join(a.work, "resume")
    # Through `| tee verify.log` in the same folder, as users keep verify's output: the log
    # changes during every run but is tee's, held open after each run ends, not the program's.
    cmd = " ".join(shlex.quote(x) for x in [a.accelerate, "verify", "--cpu", "--reset_cwd", "--work", work, a.probe,
                                            "resume"])
    p = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd} 2>&1 | tee verify.log"], capture_output=True,
                       text=True, env=env, timeout=900, cwd=cwd)
    out = p.stdout + p.stderr
    verdict = next((l.split(": ", 1)[1] for l in out.splitlines() if l.startswith("2 processes against 1: ")), "")
    problems = []
    if p.returncode != 0 or not re.match(r"(bit-identical|within spread)", verdict):
        problems.append(f"exit {p.returncode}, verdict {verdict!r}")
    if os.listdir(cwd) != ["verify.log"]:
        problems.append(f"the working directory is left with {os.listdir(cwd)}, not only verify.log")
    if "verify.log changed during the one run, held open by" not in out:
        problems.append("verify did not say that verify.log is another process's output")
    # Runs from one start differ by the summation order only (9.4e-08 measured); runs that
    # resumed from each other's checkpoint differ from step 1 on (0.28 without the
    # directory's reset, and the controls as wide, so "within spread" alone does not show it).
    gaps = (json.load(open(os.path.join(work, "report.json"))).get("gaps") or [1.0]) \
        if os.path.exists(os.path.join(work, "report.json")) else [1.0]
    if max(gaps) > 1e-4:
        problems.append(f"largest gap {max(gaps):.3g} > 1e-4: the runs did not start from the same state")
    for tag in ("one", "n2"):
        if not os.path.isfile(os.path.join(work, f"{tag}.files", STATE)):
            problems.append(f"{tag}'s {STATE} not kept in {tag}.files")
    print(f"{'ok  ' if not problems else 'FAIL'} resume: {verdict or out[-600:]}", flush=True)
    if problems:
        failures.append(f"resume: {'; '.join(problems)}\n{out[-2000:]}")
    # Without --reset_cwd: the first run writes the state file; verify stops, names it and
    # leaves it where it is (it cannot tell the run's files from other processes').
    cwd = os.path.join(a.work, "resume-noreset-cwd")
    os.makedirs(cwd)
    p = subprocess.run([a.accelerate, "verify", "--cpu", "--work", os.path.join(a.work, "resume-noreset"), a.probe,
                        "resume"], capture_output=True, text=True, env=env, timeout=900, cwd=cwd)
    ok = p.returncode == 2 and re.search(r"the one run wrote " + re.escape(STATE) + r" in .* \(left there\).*"
                                         r"--reset_cwd", p.stderr) and os.listdir(cwd) == [STATE]
    print(f"{'ok  ' if ok else 'FAIL'} resume-noreset: exit {p.returncode}: {p.stderr.strip()[-200:]}", flush=True)
    if not ok:
        failures.append(f"resume-noreset: exit {p.returncode}, expected 2 naming {STATE} and --reset_cwd, the file "
                        f"left ({os.listdir(cwd)})\n{(p.stdout + p.stderr)[-2000:]}")
    # A state file there before verify: the first run changes it; verify stops and names it.
    cwd = os.path.join(a.work, "resume-existing-cwd")
    os.makedirs(cwd)
    subprocess.run([os.path.abspath(a.probe), "resume"], capture_output=True, env=env, timeout=300, cwd=cwd,
                   check=True)
    p = subprocess.run([a.accelerate, "verify", "--cpu", "--reset_cwd", "--work",
                        os.path.join(a.work, "resume-existing"), a.probe, "resume"], capture_output=True, text=True, env=env, timeout=900,
                       cwd=cwd)
    ok = p.returncode == 2 and re.search(r"the one run changed or removed 1 file\(s\) that were in .* before verify "
                                         r"started: " + re.escape(STATE), p.stderr)
    print(f"{'ok  ' if ok else 'FAIL'} resume-existing: exit {p.returncode}: {p.stderr.strip()[-300:]}", flush=True)
    if not ok:
        failures.append(f"resume-existing: exit {p.returncode}, expected 2 naming {STATE}\n{(p.stdout + p.stderr)[-2000:]}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accelerate", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--original", required=True, help="verify_original: the probe's traced original")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.accelerate, a.probe, a.original = map(os.path.abspath, (a.accelerate, a.probe, a.original))
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    failures = []
    # verify watches its working directory (nothing may change there between runs): an empty
    # folder of the test's own, not ctest's, where tests running beside this one write.
    quiet = os.path.join(a.work, "cwd")
    os.makedirs(quiet)
    for name, (status, pattern, step, notes, detail) in CASES.items():
        mode = name.split("-")[0]
        work = os.path.join(a.work, name)
        cmd = [a.accelerate, "verify", "--cpu", "--work", work] + (["--detail"] if detail else [])
        if notes:
            os.makedirs(work)  # an empty directory is accepted
            with open(os.path.join(a.work, f"{name}.notes"), "w") as f:
                f.write(notes)
            cmd += ["--notes", os.path.join(a.work, f"{name}.notes")]
        p = subprocess.run(cmd + [a.probe, mode], capture_output=True, text=True, env=env, timeout=900, cwd=quiet)
        out = p.stdout + p.stderr
        verdict = next((l.split(": ", 1)[1] for l in out.splitlines() if l.startswith("2 processes against 1: ")), "")
        report = {}
        if os.path.exists(os.path.join(work, "report.json")):
            report = json.load(open(os.path.join(work, "report.json")))
        problems = []
        if p.returncode != status:
            problems.append(f"exit {p.returncode}, expected {status}")
        if not re.match(pattern, verdict):
            problems.append(f"verdict {verdict!r} does not match {pattern!r}")
        if step is not None and report.get("step") != step:
            problems.append(f"report step {report.get('step')}, expected {step}")
        said = next((l[len("detail: "):] for l in out.splitlines() if l.startswith("detail: ")), "")
        if detail and not (re.match(detail, said) and re.match(detail, report.get("detail") or "")):
            problems.append(f"detail {said!r} (report: {report.get('detail')!r}) does not match {detail!r}")
        if not os.path.exists(os.path.join(work, "gaps.svg")):
            problems.append("no gaps.svg")
        print(f"{'ok  ' if not problems else 'FAIL'} {name}: {verdict or out[-600:]}", flush=True)
        if problems:
            failures.append(f"{name}: {'; '.join(problems)}\n{out[-2000:]}")
    failures += original_cases(a, env)
    failures += resume_cases(a, env)
    # Bad usage: exit 2 with a message, nothing overwritten.
    keep = os.path.join(a.work, "good", "report.json")
    before = open(keep).read() if os.path.exists(keep) else None
    p = subprocess.run([a.accelerate, "verify", "--cpu", "--work", os.path.join(a.work, "good"), a.probe],
                       capture_output=True, text=True, env=env, timeout=60)
    if p.returncode != 2 or "is not an empty directory" not in p.stderr or \
            (before is not None and open(keep).read() != before):
        failures.append(f"an existing work directory: exit {p.returncode}, {p.stderr!r}")
    p = subprocess.run([a.accelerate, "verify", "--cpu", "--work", os.path.join(a.work, "none"),
                        os.path.join(a.work, "no-such-program")], capture_output=True, text=True, env=env, timeout=60)
    if p.returncode != 2 or "not an executable file" not in p.stderr:
        failures.append(f"a missing program: exit {p.returncode}, {p.stderr!r}")
    # A source file: --original is verify's own then; a missing one; no installed package
    # beside a build tree's verify (the source mode needs the CMake package: exit 2, --prefix).
    src = os.path.join(a.work, "train.cpp")
    with open(src, "w") as f:
        f.write("int main() { return 0; }\n")
    for args, said in (([src, "--original", a.original], "--original with a source file"),
                       ([os.path.join(a.work, "missing.cpp")], "no such source file"),
                       ([src], "needs an installed Accelerate package")):
        extra = args[1:] if args[1:2] == ["--original"] else []
        p = subprocess.run([a.accelerate, "verify", "--cpu", "--work", os.path.join(a.work, "source-usage")] + extra
                           + args[:1], capture_output=True, text=True, env=env, timeout=60)
        if p.returncode != 2 or said not in p.stderr:
            failures.append(f"source usage {said!r}: exit {p.returncode}, {p.stderr!r}")
    for f in failures:
        print("FAILED", f)
    if failures:
        return 1
    print("PASSED verify")
    return 0


if __name__ == "__main__":
    sys.exit(main())
