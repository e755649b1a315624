#!/usr/bin/env python3
"""The test command's per-stage time table and its budget check (issue 28, items 1 and 4).

scripts/test.sh appends 'PLATFORM STAGE SECONDS' lines to a stage file per platform (the
Debian 13 run writes build-debian13/stage-times.txt from inside its chroot) and, at the end:

  stage_times.py table FILE...                    the table, stages by platforms
  stage_times.py check --budgets BUDGETS FILE...  one verdict per stage; exit 1 when a stage
                                                  took longer than its budget or has none

BUDGETS (test/expected/budgets.txt) has 'PLATFORM STAGE BUDGET MEASURED  why' lines;
PLATFORM '*' applies to every platform. A budget catches growth when it happens rather than
when CI's 90-minute limit kills the run. It must not fail a good run on a slower machine of
the same kind (issue 46): MEASURED is the stage's time in a cold run on the developers'
machine, and BUDGET must be at least SPREAD times it (machines of this kind differ by up to
1.6x, runs of one commit on one machine by up to 20 %: 1.6 x 1.2 = 1.92), which the reader
enforces. So the same commit passes on a machine 1.6x slower, while a change that doubles a
stage fails. BUDGET 'none' records a stage that has no budget on purpose (the lint's wall
time: it waits for the CPU that other stages leave, so it measures them, not the lint).
A stage past WARN of its budget is marked in the table and named in the verdicts, so growth
is seen a few commits before it fails a run. Standard library only.
"""
import argparse
import os
import sys

# The order of the table's rows: the order the stages run in.
ORDER = ["packages", "root", "configure", "build", "build-cpu", "tests", "lint", "lint-cpu", "total"]

# The least budget / measured ratio a budget may have, and the share of a budget past which a
# stage is reported as near it (both explained in the docstring above).
SPREAD = 1.9
WARN = 0.8


def read_times(paths):
    """{(platform, stage): seconds}; a stage recorded twice (a rerun) keeps the last time."""
    times = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[2].isdigit():
                    times[(parts[0], parts[1])] = int(parts[2])
    return times


def read_budgets(path):
    """[(platform, stage, seconds or None, why, line number, measured)]. A line without a why
    or a measurement, or whose budget covers less than SPREAD times its measurement, is an
    error: such a budget would fail a good run on a slower machine."""
    budgets = []
    with open(path) as f:
        for num, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(None, 4)
            if len(parts) < 5 or not (parts[2].isdigit() or parts[2] == "none") or not parts[3].isdigit():
                raise ValueError("%s:%d: expected 'PLATFORM STAGE BUDGET MEASURED  why' (BUDGET a number "
                                 "of seconds or 'none')" % (path, num))
            seconds = None if parts[2] == "none" else int(parts[2])
            measured = int(parts[3])
            if seconds is not None and seconds < SPREAD * measured:
                raise ValueError("%s:%d: budget %d s is less than %.1f x the measured %d s (%d s): it would "
                                 "fail the same commit on a slower machine" % (path, num, seconds, SPREAD,
                                                                               measured, SPREAD * measured))
            budgets.append((parts[0], parts[1], seconds, parts[4].strip(), num, measured))
    return budgets


def budget_for(budgets, platform, stage):
    """The platform's own line wins over a '*' line."""
    own = [b for b in budgets if b[0] == platform and b[1] == stage]
    wild = [b for b in budgets if b[0] == "*" and b[1] == stage]
    return (own or wild or [None])[0]


def _rows(times):
    """Stages in the order they run; platforms as columns: the outer run's own stages
    ('setup') first, the whole command ('all') last."""
    stages = sorted({s for _, s in times}, key=lambda s: (ORDER.index(s) if s in ORDER else len(ORDER), s))
    edge = {"setup": 0, "all": 2}
    platforms = sorted({p for p, _ in times}, key=lambda p: (edge.get(p, 1), p))
    return stages, platforms


def table(times, budgets=None):
    """Stages down, platforms across: 'seconds' or 'seconds / budget'; '-' where a stage does
    not exist on a platform (lint runs on debian12 only, the root is debian13's)."""
    stages, platforms = _rows(times)
    lines = ["stage times in seconds (/ budget, %s):" % "test/expected/budgets.txt",
             ("  %-10s" % "stage" + "".join("%14s  " % p for p in platforms)).rstrip()]
    for s in stages:
        cells = []
        for p in platforms:
            t = times.get((p, s))
            b = budget_for(budgets or [], p, s) if t is not None else None
            if b is None or b[2] is None:
                cells.append("-  " if t is None else "%d  " % t)
                continue
            # The verdicts below say why: '!' over the budget, '~' past WARN of it.
            mark = " !" if t > b[2] else " ~" if t > WARN * b[2] else "  "
            cells.append("%d / %d%s" % (t, b[2], mark))
        lines.append(("  %-10s" % s + "".join("%16s" % c for c in cells)).rstrip())
    return lines


def verdicts(times, budgets, budget_path):
    """(lines, number of failures): each stage against its budget; a stage past WARN of its
    budget gets a warning line (not a failure)."""
    lines, failed, near = [], 0, 0
    stages, platforms = _rows(times)
    for p in platforms:
        for s in stages:
            t = times.get((p, s))
            if t is None:
                continue
            b = budget_for(budgets, p, s)
            if b is None:
                lines.append("budget: stage %s %s took %d s and has no budget in %s: add a line "
                             "'%s %s SECONDS  why'" % (p, s, t, budget_path, p, s))
                failed += 1
            elif b[2] is None:
                continue
            elif t > b[2]:
                lines.append("budget: stage %s %s took %d s, budget %d s (%s:%d): %s" % (p, s, t, b[2], budget_path, b[4], b[3]))
                failed += 1
            elif t > WARN * b[2]:
                lines.append("budget: warning: stage %s %s took %d s, %d %% of its budget %d s (%s:%d; measured %d s "
                             "on the developers' machine): it grew, or this machine is slow"
                             % (p, s, t, round(100.0 * t / b[2]), b[2], budget_path, b[4], b[5]))
                near += 1
    if not failed:
        lines.append("budget: every stage within its budget (%s)%s"
                     % (budget_path, ", %d near it" % near if near else ""))
    return lines, failed


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["table", "check"])
    ap.add_argument("--budgets", default="test/expected/budgets.txt")
    ap.add_argument("files", nargs="+", help="stage files: 'PLATFORM STAGE SECONDS' lines")
    args = ap.parse_args(argv)
    try:
        times, budgets = read_times(args.files), read_budgets(args.budgets)
    except (OSError, ValueError) as e:
        print("stage_times: %s" % e, file=sys.stderr)
        return 2
    if args.cmd == "table":
        print("\n".join(table(times, budgets)))
        return 0
    lines, failed = verdicts(times, budgets, args.budgets)
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
