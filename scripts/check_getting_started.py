#!/usr/bin/env python3
"""Runs the commands of docs/getting-started.md on a built tree and checks the outputs the
page shows (issue 50 item 3: "a test runs the commands of docs/getting-started.md").

Every indented block (four spaces) of the page is preceded by a marker comment that says
what it is, so that no block goes unchecked by accident:

    <!-- test: run -->               shell commands, run in order in one bash session
    <!-- test: output -->            what the preceding run block printed: each line must appear
    <!-- test: output of CMD -->     what CMD (run here, not shown as a block) printed on stdout
    <!-- test: skip WHY -->          not run, with the reason

In an output line, "<...>" and a timing in brackets ("[14.52 s, LibTorch PCH built]") stand
for any text; anything else must match exactly, so a changed number or rewrite count fails. The page's paths are mapped to the test's
own: `build/` is a folder of links to the build tree under test (so that an install there
goes to the test's folder), `/tmp/gs` is the test's work folder, and the commands run from a
folder that links every entry of the repository (setup() says why).

  check_getting_started.py --root REPO --build BUILD_TREE --work DIR [--no-outputs]
--no-outputs: run the commands and check their exit status only (the page's numbers are
Debian 12's, LibTorch 1.13; another LibTorch may print others). Exit 0 when all hold.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

MARK = re.compile(r"^<!-- test: (run|output of (.+?)|output|skip (.+?)) -->$")


def blocks(text):
    """[(kind, argument, [lines]), ...] in page order; kind is run, output, output-of or skip.
    An indented block without a marker on the line before its blank line is an error."""
    lines = text.splitlines()
    out, i, pending = [], 0, None
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            pending = ("run", None) if m.group(1) == "run" else \
                ("output-of", m.group(2)) if m.group(2) else \
                ("skip", m.group(3)) if m.group(3) else ("output", None)
            i += 1
            continue
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            if pending is None:
                raise SystemExit(f"getting-started: a block without a marker at line {i - len(body) + 1}: "
                                 f"{body[0]!r} (add <!-- test: run|output|skip WHY --> before it)")
            out.append((pending[0], pending[1], body))
            pending = None
            continue
        i += 1
    return out


def mapped(text, work):
    return text.replace("/tmp/gs", os.path.join(work, "gs"))


def matches(expected, got_lines):
    """Whether the expected line (with <...> as any text) is one of the output's lines."""
    # A timing in brackets ("[14.52 s, LibTorch PCH built]") is one run's: any text.
    expected = re.sub(r"\[\d+(\.\d+)? s, [^\]]*\]", "<timing>", expected)
    parts = re.split(r"<[^<>]*>", expected.strip())
    pattern = re.compile(".*".join(re.escape(p) for p in parts))
    return any(pattern.fullmatch(g.strip()) for g in got_lines)


def setup(root, build, work):
    """The page's world: work/build links every entry of the build tree, and work links every
    entry of the repository beside it, as the build tree has it; commands run in work.

    Why the whole repository: ninja's dependency log names sources and headers relative to the
    build tree ("../rewriters/..."; ccache with CCACHE_BASEDIR, cmake/AccelCcache.cmake, makes
    the compiler write them so). With only examples/ and scripts/ beside work/build, ninja took
    every such header for missing and recompiled the runtime, the launcher, the rewriters and
    the tool into the tree under test (49 objects: 372-445 s where the test takes 59 s), where
    the page's targeted build must be a no-op (results/2026-11-30-d12-tests-cold-cpu.txt)."""
    if os.path.exists(work):
        shutil.rmtree(work)
    if os.path.realpath(os.path.dirname(build)) != os.path.realpath(root):
        sys.exit(f"check_getting_started: the build tree {build} must be a folder of {root}: "
                 "ninja's dependency log names the sources relative to it")
    os.makedirs(os.path.join(work, "build"))
    os.makedirs(os.path.join(work, "gs"))
    for entry in os.listdir(build):
        if entry != "install":
            os.symlink(os.path.join(build, entry), os.path.join(work, "build", entry))
    for entry in os.listdir(root):
        if entry not in ("build", "gs"):
            os.symlink(os.path.join(root, entry), os.path.join(work, entry))


def run_all(page, work, check_outputs):
    """Runs the run blocks in one bash session, each followed by a separator, and checks each
    output block against its run block's output. Returns the failures."""
    script, checks, n = ["set -e"], [], 0
    for kind, arg, body in page:
        if kind == "run":
            n += 1
            script += [mapped("\n".join(body), work), f"echo '=== end of block {n} ==='"]
        elif kind == "output-of":
            n += 1
            # Its standard output only: stderr written into the same pipe can land inside a line.
            script += [mapped(arg, work) + f" 2> block{n}.stderr", f"echo '=== end of block {n} ==='"]
            checks.append((n, body))
        elif kind == "output":
            checks.append((n, body))
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=1200)
    with open(os.path.join(work, "commands.log"), "w") as f:  # for whoever reads a failure
        f.write("--- the commands\n" + "\n".join(script) + "\n--- stdout\n" + r.stdout + "\n--- stderr\n" + r.stderr)
    outputs = re.split(r"^=== end of block \d+ ===$", r.stdout + "\n" + r.stderr, flags=re.M)
    failures = []
    done = r.stdout.count("=== end of block")
    if r.returncode != 0:
        failures.append(f"block {done + 1} failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    if not check_outputs:
        return failures, done
    for k, body in checks:
        if k > done:
            continue
        # stderr comes after stdout in the split; a block's lines may be in either half.
        got = (outputs[k - 1] if k - 1 < len(outputs) else "").splitlines() + r.stderr.splitlines()
        for line in body:
            if line.strip() and not matches(mapped(line, work), got):
                failures.append(f"block {k}: the page shows {line.strip()!r}; not in its output")
    return failures, done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--no-outputs", action="store_true")
    a = ap.parse_args()
    page = blocks(open(os.path.join(a.root, "docs", "getting-started.md")).read())
    setup(os.path.abspath(a.root), os.path.abspath(a.build), os.path.abspath(a.work))
    failures, done = run_all(page, os.path.abspath(a.work), not a.no_outputs)
    runs = sum(1 for k, _, _ in page if k in ("run", "output-of"))
    outs = sum(1 for k, _, _ in page if k in ("output", "output-of"))
    skips = [arg for k, arg, _ in page if k == "skip"]
    print(f"getting-started: {done} of {runs} command blocks ran, {outs} output blocks "
          f"{'checked' if not a.no_outputs else 'not checked (--no-outputs)'}, {len(skips)} skipped: "
          + "; ".join(skips))
    for f in failures:
        print("FAILED", f)
    if failures:
        return 1
    print("PASSED getting-started")
    return 0


if __name__ == "__main__":
    sys.exit(main())
