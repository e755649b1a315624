#!/usr/bin/env python3
"""accelerate verify: does a migrated program train on N processes as it trains on 1?

  accelerate verify [--num_processes N] [--work DIR] [--cpu] [--launch FLAGS] [--notes FILE]
                    [--timeout S] [--original TRACED] [--detail] PROGRAM [ARGS...]
  accelerate verify [options] [--prefix PREFIX] train.cpp [ARGS...]

Runs PROGRAM (a program migrated to libaccelerate) through `accelerate launch` with the step
trace on (ACCELERATE_TRACE, docs/runtime-api.md): once on 1 process, once on N processes with
the same global batch (--split_batches), and, when the two differ, five order controls (1
process, each batch's items shuffled: ACCELERATE_BATCH_ORDER_CONTROL=1..5, the summation
order N processes change; five more for a gap beyond the first five's bound; beyond ten, five
of the N-process configuration, each process shuffling its share, measured against the
N-process run), unless the tool's notes (--notes) announce the difference. It compares the traces step by step (trace_compare.py) and prints
one verdict for the N-process run (docs/verify.md):

  bit-identical | within spread | announced | DIVERGED at step k | not split

Everything goes under the work directory (default ./accelerate-verify, which must not exist
or be empty: nothing is overwritten): each run's log and trace, report.json and gaps.svg (the
relative gap per step, the controls' spread as a band). Every run must start from the
working directory as it was before the first: a run that writes there (a checkpoint it would
resume from) stops verify (exit 2, naming the files), unless --reset_cwd says the folder is
the program's alone: then what each run writes there is moved to <work>/<tag>.files; a run
that changes or removes a file that was there before always stops it. Exit 0: bit-identical, within spread
or announced; 1: diverged or not split; 2: bad usage or traces that cannot be compared (a
program that never steps a prepared optimizer, a run that failed), with the reason.

With --original TRACED (the original program built from `accel-migrate --trace-only`'s
output, run with the same ARGS), it first runs TRACED and judges the 1-process run against it:
bit-identical, or DIVERGED at the first step whose bits differ (no spread: on 1 process the
migration must compute what the original computes). A divergence there exits 1 too.

Given the original's source instead (one .cpp file), verify makes both programs itself under
<work>/source (from_source.py): the traced original and the migrated program, built against the
installed package (--prefix, default the one verify is installed in), the migration's messages
as --notes; then as with --original.

With --detail, a DIVERGED run is run again, on 1 and on N processes, recording every
parameter's gradient up to the diverging step k (ACCELERATE_TRACE_DETAIL=k): as the optimizer
stepped with it and, on each process, as it computed it before the gradient synchronisation;
the report then says whether the processes' own gradients already differed (the data each
saw) or only their synchronisation (a sum loss averaged, unequal shares), or neither (the
optimizer step). Python 3 standard library only.
"""
import argparse
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import from_source  # noqa: E402
import trace_compare as tc  # noqa: E402
import verdicts  # noqa: E402

ANNOUNCED = "announced"


class UsageError(Exception):
    """Exit 2 with the message."""


class WorkingDirectory:
    """The runs' working directory as it was before the first run. A program that resumes from
    a checkpoint it writes there (a common idiom: load 'model.pt' when it exists, save it at
    the end) would start the second run from the first one's result, and the traces would
    differ for a reason that is not the migration's (maverobot's cos-approx,
    test/public/README.md). So after each run verify looks for what changed there. What a run
    created is moved aside only with --reset_cwd: the user says the folder is the program's
    alone. Without it verify stops instead, because it cannot tell the run's files from those
    of other processes writing there at the same time (a build, an editor, /tmp), and moving
    theirs would break them. A file that was there before and is changed or removed cannot be
    put back (verify keeps no copy of a folder that may hold data sets): verify stops and
    names it. A file some live process still holds open after the run ended is that
    process's, not the run's (`accelerate verify ... | tee verify.log`)."""

    LIMIT = 200000  # entries: a home directory is not watched (1.3 s a scan for 15000 here)

    def __init__(self, root, skip, reset):
        self.root = os.path.abspath(root)
        self.skip = os.path.realpath(skip)
        self.reset = reset
        self.before = self.scan()
        self.excused = set()  # files said to be another process's output (said once)
        if self.before is None:
            print(f"verify: {self.root} holds more than {self.LIMIT} files and folders: it is not watched between "
                  "runs (run verify from the program's own folder)", flush=True)

    def scan(self):
        """{path relative to root: (inode, size, mtime) or 'dir'}, the work directory skipped;
        None past LIMIT entries."""
        seen = {}
        for top, dirs, files in os.walk(self.root):
            if len(seen) > self.LIMIT:
                return None
            dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(top, d)) != self.skip]
            for name in dirs + files:
                path = os.path.join(top, name)
                try:
                    st = os.lstat(path)
                except OSError:  # gone while walking
                    continue
                rel = os.path.relpath(path, self.root)
                seen[rel] = "dir" if name in dirs and not os.path.islink(path) else \
                    (st.st_ino, st.st_size, st.st_mtime_ns)
        return seen

    def others(self, tag, paths):
        """`paths` less those some live process holds open now that the run has ended."""
        holders = held_open([os.path.join(self.root, p) for p in paths])
        for p in [p for p in paths if os.path.join(self.root, p) in holders and p not in self.excused]:
            self.excused.add(p)
            print(f"verify: {p} changed during the {tag} run, held open by {holders[os.path.join(self.root, p)]} "
                  "after it ended: taken as that process's output, not the program's (said once)", flush=True)
        return [p for p in paths if os.path.join(self.root, p) not in holders]

    def settle(self, tag, aside, strict=True):
        """After the `tag` run: with --reset_cwd move what it created to `aside`; with strict, a
        UsageError for what it changed (and, without --reset_cwd, for what it created).
        Returns the paths moved."""
        if self.before is None:
            return []
        now = self.scan() or {}
        created = sorted(p for p in now if p not in self.before)
        tops = self.others(tag, [p for p in created if os.path.dirname(p) not in created])  # a new folder whole
        changed = self.others(tag, sorted(p for p, was in self.before.items() if now.get(p) != was and was != "dir"))
        shown = lambda ps: ", ".join(ps[:5]) + (f" and {len(ps) - 5} more" if len(ps) > 5 else "")
        moved = tops if self.reset else []
        for rel in moved:
            dest = os.path.join(aside, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.move(os.path.join(self.root, rel), dest)
        if moved:
            print(f"verify: the {tag} run wrote {shown(moved)} in {self.root}: moved to {aside} (--reset_cwd), so "
                  "that the next run starts from the same directory", flush=True)
        if strict and changed:
            raise UsageError(f"the {tag} run changed or removed {len(changed)} file(s) that were in {self.root} "
                             f"before verify started: {shown(changed)}. Each later run would start from what this "
                             "one left (a checkpoint it resumes from, a file it appends to), so the runs could not be "
                             "compared. Move them out of the working directory and run verify again")
        if strict and tops and not self.reset:
            raise UsageError(f"the {tag} run wrote {shown(tops)} in {self.root} (left there). Each later run would "
                             "start from what this one left (a checkpoint it resumes from), so the runs could not be "
                             "compared. Run verify from a folder of the program's own with --reset_cwd (verify then "
                             "moves what each run writes there to WORK/TAG.files), or write those files elsewhere")
        return moved


def held_open(paths):
    """{path: 'PID (name)'} for the paths some live process has open (Linux /proc; processes of
    other users are not visible, and then nothing is excused)."""
    wanted, found = {os.path.realpath(p): p for p in paths}, {}
    if not wanted:
        return found
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target in wanted and wanted[target] not in found:
                    name = open(f"/proc/{pid}/comm").read().strip()
                    found[wanted[target]] = f"process {pid} ({name})"
        except OSError:  # gone, or not ours
            continue
    return found


def parse(argv):
    ap = argparse.ArgumentParser(prog="accelerate verify", description=__doc__.split("\n")[0],
                                 usage="accelerate verify [options] PROGRAM [ARGS...]")
    ap.add_argument("--num_processes", type=int, default=2, help="processes of the run judged (default 2)")
    ap.add_argument("--work", default="accelerate-verify",
                    help="directory for logs, traces and the report; must not exist or be empty")
    ap.add_argument("--cpu", action="store_true", help="pass --cpu to accelerate launch")
    ap.add_argument("--launch", default="", help="more `accelerate launch` flags, one string")
    ap.add_argument("--notes", help="accel-migrate's output for this program: its notes can announce a gap")
    ap.add_argument("--reset_cwd", action="store_true",
                    help="the working directory is the program's alone: move what each run writes there to "
                         "WORK/TAG.files so that every run starts from it (without: verify stops when a run "
                         "writes there)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    ap.add_argument("--args_n", metavar="ARGS",
                    help="the program's arguments on N processes, one string, for a program that keeps the "
                         "global batch itself (e.g. '--batch-size 32' against 64 on 1 process): its runs are "
                         "launched without --split_batches")
    ap.add_argument("--original", help="the original program built from `accel-migrate --trace-only` output, "
                                       "run with the same arguments: the 1-process run is judged against it")
    ap.add_argument("--detail", action="store_true",
                    help="for a DIVERGED run: run again recording the gradients before and after the "
                         "synchronisation up to the diverging step, and say which differed")
    ap.add_argument("--prefix", help="for a source file: the installed Accelerate (`cmake --install` prefix) to "
                                     "build against; default: the one verify is installed in")
    ap.add_argument("--accelerate", default=os.environ.get("ACCELERATE_VERIFY_LAUNCHER", "accelerate"),
                    help=argparse.SUPPRESS)  # the launcher that started us
    ap.add_argument("program")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.num_processes < 2:
        raise UsageError(f"--num_processes {a.num_processes}: the run judged needs 2 or more processes")
    if from_source.is_source(a.program):
        if a.original:
            raise UsageError(f"--original with a source file: verify makes the traced original of {a.program} itself")
        a.source = a.program
    elif a.program.endswith(from_source.SUFFIXES):
        raise UsageError(f"{a.program}: no such source file")
    else:
        a.source = None
    for exe in ([] if a.source else [a.program]) + ([a.original] if a.original else []):
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise UsageError(f"{exe}: not an executable file")
    if os.path.exists(a.work) and (not os.path.isdir(a.work) or os.listdir(a.work)):
        raise UsageError(f"{a.work} exists and is not an empty directory; remove it or pass --work")
    return a


def run(a, tag, n, env_extra=None, progress="", program=None):
    """One traced launch into <work>/<tag> (of PROGRAM, or of `program`); its trace directory."""
    trace = os.path.join(a.work, tag)
    os.makedirs(trace)
    # The global batch stays the 1-process run's: split by the runtime (--split_batches), or,
    # with --args_n, by the program's own N-process arguments.
    own = a.args_n is not None
    cmd = [a.accelerate, "launch", "--num_processes", str(n)] + ([] if own else ["--split_batches"])
    cmd += ["--main_process_port", "0", "--trace", trace] + (["--cpu"] if a.cpu else []) + shlex.split(a.launch)
    cmd += [os.path.abspath(program or a.program)] + (shlex.split(a.args_n) if own and n > 1 else a.args)
    env = dict(os.environ, **(env_extra or {}))
    log = os.path.join(a.work, f"{tag}.log")
    print(f"verify: {progress} {tag}: {n} process(es)", end="", flush=True)
    t0 = time.time()
    with open(log, "w") as f:
        f.write("+ " + " ".join(map(shlex.quote, cmd)) + "\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=a.timeout).returncode
        except subprocess.TimeoutExpired:
            rc = None
        except OSError as e:
            raise UsageError(f"cannot run {a.accelerate}: {e}")
    print(f" ... {time.time() - t0:.1f} s", flush=True)
    a.written[tag] = a.cwd.settle(tag, os.path.join(a.work, f"{tag}.files"), strict=rc == 0)
    if rc != 0:
        tail = "".join(open(log).readlines()[-15:])
        why = f"timed out after {a.timeout:g} s" if rc is None else f"exit {rc}"
        raise UsageError(f"the {tag} run failed ({why}); its log {log} ends:\n{tail}")
    return trace


def announcements(notes_path, moving=False):
    """{rule: [lines]} of the tool's messages that announce an N-process gap, by verdicts.py's
    rules (one place): a rule of verdicts.ANNOUNCES in a message of a kind it announces by (a
    note that says what was rewritten, e.g. batch norm made global, excuses nothing); with
    moving, only mechanisms that move the order controls too (per-sample randomness), which
    are decided before any control runs."""
    if not notes_path:
        return {}
    found = {}
    for line in open(notes_path, errors="replace"):
        kind = verdicts.message_kind(line)
        for rule in verdicts.announcing(kind, set(re.findall(r"\[(accelerate-[a-z-]+)\]", line)), moving):
            found.setdefault(rule, []).append(line.strip())
    return found


def quoted(said):
    return "; ".join(f"{r}: {verdicts.ANNOUNCES[r].mechanism} (the tool: {lines[0]})" for r, lines in sorted(said.items()))


def svg(gaps, bound, path, original_gaps=None):
    """The relative gap per step (log scale), one line per configuration: N processes against
    1 (red), and with --original 1 process against the original (blue; at the floor where
    bit-identical), the controls' bound as a band."""
    w, h, pad = 640, 320, 40
    lines = [(gaps, "#c22", "N processes against 1")] + \
        ([(original_gaps, "#22c", "1 process against the original")] if original_gaps is not None else [])
    values = [g for g in sum((l for l, _, _ in lines), []) + (bound or []) if g > 0]
    lo = min(values, default=1e-12)
    hi = max(values, default=1.0)
    lo, hi = math.log10(lo) - 0.5, math.log10(hi) + 0.5
    n = max(max(len(l) for l, _, _ in lines), 2)

    def xy(k, g):
        y = math.log10(g) if g > 0 else lo
        return pad + (w - 2 * pad) * k / (n - 1), h - pad - (h - 2 * pad) * (y - lo) / (hi - lo)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">',
             f'<text x="{pad}" y="20" font-size="12">relative gap per step (log10 from {lo:.1f} to {hi:.1f})'
             '; band: the order controls\' bound</text>']
    if bound:
        top = " ".join("%.1f,%.1f" % xy(k, b) for k, b in enumerate(bound))
        bottom = " ".join("%.1f,%.1f" % xy(k, 0) for k in reversed(range(len(bound))))
        parts.append(f'<polygon points="{top} {bottom}" fill="#cde" stroke="none"/>')
    for i, (values_, colour, label) in enumerate(lines):
        line = " ".join("%.1f,%.1f" % xy(k, g) for k, g in enumerate(values_))
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        parts.append(f'<text x="{w - pad - 200}" y="{36 + 14 * i}" font-size="11" fill="{colour}">{label}</text>')
    parts.append("</svg>\n")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def judge_original(a, one):
    """The 1-process run against the traced original: (verdict, text), or None without
    --original. The original runs through the launcher on 1 process too (the same
    environment and trace directory handling); it uses nothing of it but ACCELERATE_TRACE."""
    if not a.original:
        return None
    trace = run(a, "original", 1, progress="[original]", program=a.original)
    original = tc.read_run(trace)
    if not original or not original[0]:
        raise UsageError(f"the original wrote no step ({a.original}: is it the --trace-only build of the "
                         "original, and does it step an optimizer?)")
    v = tc.against_original(original, tc.read_run(one))
    return v.category, v.text, v.gaps


def explain_divergence(a, k):
    """--detail: the 1- and N-process runs again with the gradients recorded up to step k."""
    env = {"ACCELERATE_TRACE_DETAIL": str(k)}
    one = run(a, "detail-one", 1, env, progress="[detail 1/2]")
    many = run(a, f"detail-n{a.num_processes}", a.num_processes, env, progress="[detail 2/2]")
    return tc.explain(tc.read_run(one), tc.read_run(many), k)


def judge(a):
    """(verdict, report dict). Controls run only when the runs differ and no message of the
    tool announces a mechanism that moves them too: under per-sample randomness (dropout) an
    order control also changes which random draw meets which sample, so the controls would
    measure the randomness, not the summation order, and could call an unannounced difference
    rounding. Another announced mechanism (batch statistics kept per process) excuses only a
    gap beyond the controls."""
    one = run(a, "one", 1, progress="[1/2]")
    original = judge_original(a, one)
    many = run(a, f"n{a.num_processes}", a.num_processes, progress="[2/2]")
    ref, cand = tc.read_run(one), tc.read_run(many)
    if not ref or not ref[0]:
        raise UsageError(f"the 1-process run wrote no step (does {a.program} step an optimizer it prepared?)")
    v = tc.compare(ref, cand)
    category, text, controls, own = v.category, v.text, [], []
    early = announcements(a.notes, moving=True)
    if category == tc.DIVERGED and early:
        category, text = ANNOUNCED, f"{quoted(early)}; the runs part at step {v.step} (no order controls: the " \
                                    f"announced mechanism moves them too)"
    elif category == tc.DIVERGED:
        # Five controls, and five more for a gap beyond the first five's bound (verdicts.py,
        # SPREAD_FACTOR's comment).
        for seeds in (verdicts.CONTROL_SEEDS, verdicts.EXTRA_SEEDS):
            for seed in seeds:
                d = run(a, f"control-{seed}", 1, {verdicts.CONTROL_ENV: str(seed)}, progress=f"[control {seed}]")
                controls.append(tc.read_run(d))
            v = tc.compare(ref, cand, controls)
            if v.category != tc.DIVERGED:
                break
        if v.category == tc.DIVERGED:
            # Beyond ten controls of 1 process: five of the N-process configuration itself
            # (trace_compare.spreads says why), measured against the N-process run.
            # Only if the N-process run repeats itself to the bit (trace_compare.repeats).
            n = a.num_processes
            repeat = tc.read_run(run(a, f"n{n}-repeat", n, progress=f"[repeat, {n} processes]"))
            for seed in verdicts.CONTROL_SEEDS if tc.repeats(cand, repeat) else ():
                d = run(a, f"control-n{n}-{seed}", n, {verdicts.CONTROL_ENV: str(seed)},
                        progress=f"[control {seed}, {n} processes]")
                own.append(tc.read_run(d))
            v = tc.compare(ref, cand, controls, own, repeat)
        category, text = v.category, v.text
        late = announcements(a.notes)  # a mechanism the controls do not move: beyond them only
        if category == tc.DIVERGED and late:
            category, text = ANNOUNCED, f"{quoted(late)}; {v.text}"
    bound = tc.spreads(tc.merge(ref), [tc.merge(c) for c in controls], tc.merge(cand),
                       [tc.merge(c) for c in own]) if controls else None
    detail = explain_divergence(a, v.step) if a.detail and category == tc.DIVERGED else None
    return category, {"detail": detail, "source": a.source, "program": a.program, "args": a.args, "num_processes": a.num_processes,
                      "verdict": category, "text": text, "step": v.step, "gaps": v.gaps, "bound": bound,
                      "controls": len(controls), "own_controls": len(own), "spread_factor": verdicts.SPREAD_FACTOR,
                      "written": {tag: paths for tag, paths in a.written.items() if paths},
                      "original": None if original is None else {"program": a.original, "verdict": original[0],
                                                                 "text": original[1], "gaps": original[2]}}


def main(argv):
    try:
        a = parse(argv)
        os.makedirs(a.work, exist_ok=True)
        if a.source:
            prefix = from_source.find_prefix(a.prefix, os.path.dirname(os.path.abspath(__file__)))
            a.program, a.original, notes = from_source.build(a.source, a.work, prefix)
            a.notes = a.notes or notes
        a.cwd, a.written = WorkingDirectory(os.getcwd(), a.work, a.reset_cwd), {}
        category, report = judge(a)
    except (UsageError, tc.TraceError, from_source.BuildError) as e:
        print(f"accelerate verify: error: {e}", file=sys.stderr)
        return 2
    with open(os.path.join(a.work, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    svg(report["gaps"], report["bound"], os.path.join(a.work, "gaps.svg"),
        report["original"]["gaps"] if report["original"] else None)
    original = report["original"]
    if original:
        print(f"1 process against the original: {original['verdict']}: {original['text']}")
    print(f"{a.num_processes} processes against 1: {category}: {report['text']}")
    if report["detail"]:
        print(f"detail: {report['detail']}")
    print(f"verify: report {os.path.join(a.work, 'report.json')}, plot {os.path.join(a.work, 'gaps.svg')}")
    good = category in (tc.BIT_IDENTICAL, tc.WITHIN_SPREAD, ANNOUNCED)
    return 0 if good and (not original or original["verdict"] == tc.BIT_IDENTICAL) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
