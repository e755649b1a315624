#!/usr/bin/env python3
"""Step-by-step verdicts from step traces (issue 48, item 3; the traces: docs/runtime-api.md,
"The step trace"). The first half of `accelerate verify`: given the trace of a reference run
(the migrated program on 1 process, or a traced original), the trace of a candidate run (the
same program on N processes) and the traces of control runs of the reference (order controls:
the same run with the items of each batch shuffled, ACCELERATE_BATCH_ORDER_CONTROL=<seed>,
another summation order each), it says for the candidate one of:

- bit-identical: every step's parameters hash alike and every loss is equal;
- within spread: each step's gap is at most SPREAD_FACTOR times what the controls differ by
  at that point (the largest gap of MIN_CONTROLS or more control runs up to that step; the
  factor: verdicts.py), both shown;
- DIVERGED at step k: the first step whose gap leaves that spread (or any gap, with fewer
  than MIN_CONTROLS controls: one control is one sample, not a bound), the parameter with
  the largest relative gap, and the gaps of the following steps (does it grow?);
- not split: on some step a process of the candidate held more than its per-process batch
  (the global batch over N), or their samples do not add up to the reference's, whatever
  the numbers;
  and a run whose replicas differ after a step (the processes no longer train one model).

A run is a directory of trace-rank<R>.jsonl files. A gap is the largest relative difference
of a parameter's L2 norm (FSDP: the norm of the ranks' shards together). Python 3 standard
library only, as verdicts.py, whose rel() and MIN_CONTROLS it shares.

  trace_compare.py REFERENCE CANDIDATE [--control DIR]... [--json FILE]
Exit 0: bit-identical or within spread; 1: diverged or not split; 2: unreadable or
mismatched traces (a missing rank, runs of different lengths), with the reason.
"""
import argparse
import glob
import json
import math
import os
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdicts import MIN_CONTROLS, SPREAD_FACTOR, rel  # noqa: E402  (one definition of each)

BIT_IDENTICAL, WITHIN_SPREAD, DIVERGED, NOT_SPLIT = "bit-identical", "within spread", "DIVERGED", "not split"


class TraceError(Exception):
    """Traces that cannot be compared (exit 2): the message says which file and why."""


@dataclass
class Step:
    samples: list  # per rank
    loss: float  # the ranks' mean losses weighted by their samples (a plain mean without samples)
    norms: list  # per parameter, over the whole model (the ranks' shards combined)
    hashes: list  # per rank: the parameters' xxh3s (a replica's, or a shard's)
    sharded: bool


@dataclass
class Verdict:
    category: str
    text: str
    step: int = 0  # the first diverging step (DIVERGED), or the step that was not split
    gaps: list = field(default_factory=list)  # per step


def read_rank(path):
    steps = []
    with open(path) as f:
        for num, line in enumerate(f, 1):
            try:
                s = json.loads(line)
                steps.append(s)
                if s["step"] != num:
                    raise TraceError(f"{path}:{num}: step {s['step']} where {num} was expected")
            except (ValueError, KeyError) as e:
                raise TraceError(f"{path}:{num}: not a step line ({e})")
    return steps


def read_run(directory):
    """[steps of rank 0, steps of rank 1, ...]; every rank present and as long as the others."""
    paths = glob.glob(os.path.join(directory, "trace-rank*.jsonl"))
    if not paths:
        raise TraceError(f"{directory}: no trace-rank*.jsonl (was the run launched with --trace, "
                         "and does it step a prepared optimizer?)")
    ranks = {}
    for p in paths:
        steps = read_rank(p)
        rank = int(os.path.basename(p)[len("trace-rank"):-len(".jsonl")])
        ranks[rank] = steps
    n = len(ranks)
    if sorted(ranks) != list(range(n)):
        raise TraceError(f"{directory}: traces of ranks {sorted(ranks)}, expected 0..{n - 1}")
    lengths = {r: len(s) for r, s in ranks.items()}
    if len(set(lengths.values())) != 1:
        raise TraceError(f"{directory}: the ranks took different numbers of steps {lengths}")
    return [ranks[r] for r in range(n)]


def merge(run):
    """One Step per optimizer step, the ranks' lines combined."""
    steps = []
    for lines in zip(*run):
        samples = [l["samples"] for l in lines]
        # float(): a NaN or an infinity is written as a string ("nan", "inf", "-inf").
        means = [sum(map(float, l["loss"])) / len(l["loss"]) if l["loss"] else float("nan") for l in lines]
        total = sum(samples)
        loss = sum(s * m for s, m in zip(samples, means)) / total if total else sum(means) / len(means)
        sharded = any(l.get("sharded", False) for l in lines)
        if sharded:  # the shards of one parameter together: sqrt of the summed squares
            norms = [math.sqrt(sum(float(l["params"][j]["norm"]) ** 2 for l in lines))
                     for j in range(len(lines[0]["params"]))]
        else:
            norms = [float(p["norm"]) for p in lines[0]["params"]]
        steps.append(Step(samples, loss, norms, [[p["xxh3"] for p in l["params"]] for l in lines], sharded))
    return steps


def step_gap(step, ref):
    """(largest relative gap of a parameter's norm, its index)."""
    if len(step.norms) != len(ref.norms):
        return math.inf, -1
    gaps = [rel(a, b) for a, b in zip(step.norms, ref.norms)]
    j = max(range(len(gaps)), key=gaps.__getitem__, default=-1)
    return (gaps[j] if gaps else 0.0), j


def split_problem(step, ref, k, cap):
    """Why step k was not split (None when it was): the samples must add up to the reference
    step's, and no process may hold more than its per-process batch `cap` (the global batch
    over N, rounded up). Not "about 1/N of each step": the runtime cuts a short step into
    per-process slices (41 samples on 2 processes: 32 and 9, docs/data-loader.md), so only a
    process holding more than its slice shows work that was not shared. A step with no sample
    in either run is a second optimizer's step on the same batch (a GAN's generator): its
    samples were charged to the first one's line."""
    n, total = len(step.samples), sum(step.samples)
    want = sum(ref.samples)
    shown = f"step {k}: samples per process {'/'.join(map(str, step.samples))}"
    if want and total != want:
        why = ("more than the data: samples trained twice (padding counted as real samples, or processes reading "
               "the same ones)") if total > want else "fewer than the data: samples dropped"
        return f"{shown} add up to {total}, the reference step has {want}: {why}"
    if not want and total:
        return f"{shown} add up to {total}, the reference step has none"
    over = [r for r, c in enumerate(step.samples) if c > cap]
    if n > 1 and over:
        return f"{shown}: rank(s) {over} hold more than a per-process batch ({cap} of a global batch of " \
               f"{cap * n} at most)"
    return None


def replica_problem(step, k):
    if step.sharded or len(step.hashes) < 2 or all(h == step.hashes[0] for h in step.hashes):
        return None
    differ = [r for r, h in enumerate(step.hashes) if h != step.hashes[0]]
    return f"step {k}: the replicas of rank(s) {differ} differ from rank 0's after the step"


def running_spread(runs, centre):
    """Per step, the largest gap of any of `runs` against `centre` up to that step."""
    out, top = [], 0.0
    for k in range(len(centre)):
        top = max([top] + [step_gap(r[k], centre[k])[0] for r in runs])
        out.append(top)
    return out


def spreads(ref, controls, cand=None, own=()):
    """Per step, SPREAD_FACTOR times the largest gap up to that step of any order control of
    the reference's configuration (1 process) against the reference, or of any order control
    of the candidate's own configuration (`own`: N processes, each shuffling its share)
    against the candidate (None: too few 1-process controls). The second kind exists because
    N processes round their reduction in a way the 1-process controls do not model: two
    partial means averaged (pc-logistic-regression: a bias gradient 1.8e-8 apart, beyond 40
    one-process controls at steps 5-6). A bug moves every run of its configuration alike, so
    its own controls stay close to the candidate and far from the reference."""
    if len(controls) < MIN_CONTROLS:
        return None
    one = running_spread(controls, ref)
    mine = running_spread(own, cand) if own else [0.0] * len(ref)
    return [SPREAD_FACTOR * max(a, b) for a, b in zip(one, mine)]


def repeats(candidate, repeat):
    """Whether `repeat` (the candidate's configuration run again, no control) is the candidate
    to the bit at every step. Own controls count only then: an N-process run that does not
    repeat itself (a race in the synchronisation, unseeded randomness on some process) would
    give its own controls a spread as wide as its bug, and the bug would pass as rounding."""
    if repeat is None:
        return False
    a, b = merge(candidate), merge(repeat)
    return len(a) == len(b) and all(x.hashes == y.hashes and same_number(x.loss, y.loss) for x, y in zip(a, b))


def compare(reference, candidate, controls=(), own=(), repeat=None):
    """The candidate's verdict against the reference (each a read_run() result); `controls`:
    order controls of the reference's configuration, `own`: of the candidate's (spreads()),
    taken only when `repeat`, the candidate's configuration run again, equals it to the bit."""
    ref, cand = merge(reference), merge(candidate)
    steady = repeats(candidate, repeat)
    ctrl, mine = [merge(c) for c in controls], [merge(c) for c in own] if steady else []
    for name, run in [("candidate", cand)] + [(f"control {i + 1}", c) for i, c in enumerate(ctrl)] + \
            [(f"own control {i + 1}", c) for i, c in enumerate(mine)]:
        if len(run) != len(ref):
            raise TraceError(f"the {name} took {len(run)} steps, the reference {len(ref)}")
    n = len(candidate)
    global_batch = max((sum(r.samples) for r in ref), default=0) or max(sum(s.samples) for s in cand)
    cap = -(-global_batch // n)
    if n > 1 and not any(sum(s.samples) for s in cand):
        return Verdict(NOT_SPLIT, f"step 1: samples per process {'/'.join(map(str, cand[0].samples))}: no "
                       "samples came through prepared loaders in any step (the split cannot be shown)", 1)
    for k, (s, r) in enumerate(zip(cand, ref), 1):
        why = split_problem(s, r, k, cap) or replica_problem(s, k)
        if why:
            return Verdict(NOT_SPLIT, why, k)
    gaps = [step_gap(s, r) for s, r in zip(cand, ref)]
    values = [g for g, _ in gaps]
    same = all(s.hashes[0] == r.hashes[0] and s.loss == r.loss and s.norms == r.norms for s, r in zip(cand, ref)) and \
        not any(s.sharded or r.sharded for s, r in zip(cand, ref))
    if same:
        return Verdict(BIT_IDENTICAL, f"{len(ref)} steps, every parameter equal to the bit", 0, values)
    bound = spreads(ref, ctrl, cand, mine)
    both = f" of 1 and of {n} processes" if mine else ""
    if repeat is not None and not steady:
        both = f" (of 1 process only: the {n}-process run did not repeat itself to the bit, so its own order " \
               "controls would measure that, not rounding)"
    for k, (g, j) in enumerate(gaps, 1):
        if g > (0.0 if bound is None else bound[k - 1]):
            after = ", ".join(f"{x:.2g}" for x in values[k - 1:k + 4])
            limit = (f"beyond {bound[k - 1]:.2g}, {SPREAD_FACTOR:g} x the controls' spread{both} "
                     f"{bound[k - 1] / SPREAD_FACTOR:.2g}"
                     if bound is not None else f"no spread: {len(ctrl)} control run(s), {MIN_CONTROLS} needed")
            return Verdict(DIVERGED, f"DIVERGED at step {k}: parameter {j} {g:.2g} from the reference "
                           f"({limit}); the gap from there: {after}", k, values)
    if bound is None:  # no norm moved, yet some bits or a loss did
        k = next(k for k, (s, r) in enumerate(zip(cand, ref), 1)
                 if s.hashes[0] != r.hashes[0] or s.loss != r.loss or s.sharded or r.sharded)
        return Verdict(DIVERGED, f"DIVERGED at step {k}: the same norms, other bits or loss (no spread: "
                       f"{len(ctrl)} control run(s), {MIN_CONTROLS} needed)", k, values)
    worst = max(range(len(values)), key=values.__getitem__)
    return Verdict(WITHIN_SPREAD, f"{len(ref)} steps, largest gap {values[worst]:.2g} at step {worst + 1}, within "
                   f"{bound[worst]:.2g} there ({SPREAD_FACTOR:g} x the controls' spread{both} "
                   f"{bound[worst] / SPREAD_FACTOR:.2g})", 0, values)


def against_original(original, one):
    """The migrated program on 1 process against its traced original (accel-migrate
    --trace-only; each a read_run() result): bit-identical, or DIVERGED at the first step whose
    parameters' bits or losses differ. No spread applies: on 1 process the migration must
    compute what the original computes, to the bit where the original is deterministic (the
    project's contract); a difference is a bug or a mechanism the tool names. The original
    counts no samples (it has no prepared loader), so no split is checked."""
    ref, cand = merge(original), merge(one)
    if len(one) != 1:
        raise TraceError(f"the run compared with the original has {len(one)} processes, 1 expected")
    if len(cand) != len(ref):
        raise TraceError(f"the 1-process run took {len(cand)} steps, the original {len(ref)}")
    for k, (s, r) in enumerate(zip(cand, ref), 1):
        if s.hashes[0] != r.hashes[0] or not same_number(s.loss, r.loss):
            g, j = step_gap(s, r)
            what = "the loss passed to backward" if s.hashes[0] == r.hashes[0] else \
                f"parameter {j} {g:.2g} from the original's (relative gap of its norm)"
            if math.isnan(r.loss) and not math.isnan(s.loss):
                what += " (the original recorded no loss at this step: a backward call the trace-only pass " \
                    "did not trace?)"
            return Verdict(DIVERGED, f"DIVERGED at step {k}: {what}; loss {s.loss!r} against the "
                           f"original's {r.loss!r}", k, [step_gap(x, y)[0] for x, y in zip(cand, ref)])
    return Verdict(BIT_IDENTICAL, f"{len(ref)} steps, every parameter and loss equal to the original's, to the bit",
                   0, [0.0] * len(ref))


# How close two gradients must be to count as the same in explain(): relative to the
# gradient's scale (its norm times sqrt(numel) bounds its sum), far above float rounding
# (~1e-7 a step) and far below what a wrong count or a wrong reduction makes (a factor 2).
DETAIL_TOLERANCE = 1e-4


def _grad(entry):
    """(sum, norm, numel, hash) of a gradient entry; None for a parameter without one."""
    return None if entry is None else (float(entry["sum"]), float(entry["norm"]), int(entry["numel"]),
                                       entry.get("xxh3"))


def _close(a, b):
    """Two gradients' (sum, norm) agree within DETAIL_TOLERANCE of their scale."""
    if a is None or b is None:
        return a is b
    scale = max(a[1], b[1]) * math.sqrt(max(a[2], 1)) or 1e-30
    return abs(a[0] - b[0]) <= DETAIL_TOLERANCE * scale and rel(a[1], b[1]) <= DETAIL_TOLERANCE


def _combined(locals_, samples, how):
    """The sums of the processes' own gradients combined `how` (norms are not linear: the
    combination's norm is not known, only its sum), per parameter; None where one is missing."""
    out = []
    for j in range(len(locals_[0])):
        g = [loc[j] for loc in locals_]
        if any(x is None for x in g):
            out.append(None)
            continue
        weights = {"mean": [1 / len(g)] * len(g), "sum": [1.0] * len(g),
                   "samples-weighted mean": [s / sum(samples) if sum(samples) else 1 / len(g) for s in samples]}[how]
        out.append(sum(w * x[0] for w, x in zip(weights, g)))
    return out


def _sums_match(sums, ref):
    return all(s is not None and r is not None and
               abs(s - r[0]) <= DETAIL_TOLERANCE * (r[1] * math.sqrt(max(r[2], 1)) or 1e-30)
               for s, r in zip(sums, ref))


def explain(reference, candidate, k):
    """What differed at step k, from detailed traces (ACCELERATE_TRACE_DETAIL=k) of the
    reference (1 process) and the candidate (N processes): the gradient the optimizer stepped
    with, and each process's own gradient before the synchronisation. One sentence."""
    ref_line, lines = reference[0][k - 1], [r[k - 1] for r in candidate]
    if "grads" not in ref_line or any("grads" not in l for l in lines):
        return f"no gradients were recorded at step {k} (the step was noticed after the fact: an optimizer.step() " \
               "the runtime did not make)"
    ref = [_grad(e) for e in ref_line["grads"]]
    synced = [_grad(e) for e in lines[0]["grads"]]
    if all(_close(s, r) for s, r in zip(synced, ref)):
        if all((s is None and r is None) or (s and r and s[3] == r[3]) for s, r in zip(synced, ref)):
            return f"at step {k} the synchronised gradients equal the 1-process run's to the bit: the parameters " \
                   "parted in the optimizer step itself (an optimizer not prepared, or stepped with other settings)"
        # Not the same bits, but within DETAIL_TOLERANCE: the sum of the batch's per-sample
        # gradients, cut into N partial sums and averaged, rounded another way (pc-logistic-
        # regression: a bias gradient 1.8e-8 apart, float32's epsilon 1.2e-7).
        gap, j = max((rel(s[1], r[1]), j) for j, (s, r) in enumerate(zip(synced, ref)) if s and r)
        return f"at step {k} the synchronised gradients differ from the 1-process run's by rounding only (largest " \
               f"relative gap of a gradient's norm {gap:.2g}, parameter {j}; nothing beyond {DETAIL_TOLERANCE:g}): " \
               "the N processes' partial sums combined round differently from one process's sum, and the " \
               "parameters parted by that rounding (no other data, no wrong reduction)"
    if any("local_grads" not in l for l in lines):
        return f"at step {k} the gradients differ, and no gradients before the synchronisation were recorded " \
               "(FSDP reduces its own; a model not prepared synchronises nothing)"
    locals_ = [[_grad(e) for e in l["local_grads"]] for l in lines]
    samples = [l["samples"] for l in lines]
    plain = _combined(locals_, samples, "mean")
    if not _sums_match(plain, synced):
        return f"at step {k} the synchronised gradient is not the mean of the processes' own gradients: the " \
               "synchronisation itself went wrong"
    for how in ("samples-weighted mean", "sum"):
        if _sums_match(_combined(locals_, samples, how), ref):
            return f"at step {k} each process's own gradient was right, but the synchronisation averaged them " \
                   f"where the 1-process gradient is their {how} (samples per process " \
                   f"{'/'.join(map(str, samples))}): " + ("a sum-reduced loss averaged like a mean" if how == "sum"
                                                          else "processes with unequal shares of the step")
    return f"at step {k} the processes' own gradients already differ before the synchronisation (no mean, " \
           "samples-weighted mean or sum of them is the 1-process gradient): the forward or backward pass saw " \
           "other data (an unprepared loader, repeated padding samples, per-process randomness)"


def same_number(a, b):
    """Equal, NaN included (a run that diverged to NaN the same way as its original)."""
    return a == b or (math.isnan(a) and math.isnan(b))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reference", help="directory of the reference run's trace-rank*.jsonl")
    ap.add_argument("candidate", help="directory of the run to judge")
    ap.add_argument("--control", action="append", default=[], help="a control run of the reference")
    ap.add_argument("--json", help="write the verdict and the per-step gaps here")
    a = ap.parse_args(argv)
    try:
        v = compare(read_run(a.reference), read_run(a.candidate), [read_run(c) for c in a.control])
    except TraceError as e:
        print(f"trace_compare: {e}", file=sys.stderr)
        return 2
    print(f"{v.category}: {v.text}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"category": v.category, "text": v.text, "step": v.step, "gaps": v.gaps}, f, indent=1)
    return 0 if v.category in (BIT_IDENTICAL, WITHIN_SPREAD) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
