#!/usr/bin/env python3
"""Migration fidelity: real-style programs through the installed tool, build and launcher.

Each program is a directory of test/fidelity/ with an EXPECT file (see README.md). For every
program (or those named with --only):
1. migrate it with the INSTALLED accel-migrate: file by file (mode: file) or in project mode
   with the compile_commands.json of its own CMake project (mode: project);
2. migrate the output again: nothing may change (idempotence);
3. build the output against the installed package (file mode: one CMake project for all of
   them sharing a precompiled <torch/torch.h>; project mode: the migrated CMakeLists.txt);
4. expect: reproduce  -> judged by `accelerate verify` (installed; docs/verify.md) and, on
   the same runs' printed values, by scripts/verify/verdicts.py: verify runs the migrated
   program traced on 1 and 2 processes with --split_batches (order controls when the traces
   differ) and must say bit-identical or within spread, the work split on every step; then
   (the printed numbers as a second check, judge_traced) each run printed exactly one
   `final:` line and verdicts.judge must pass: 1 process prints the original's line
   exactly, 2 processes print 1 process's values or within the controls' printed spread.
   A program that halves its batch on 2 processes itself (args-2, no --split_batches) goes
   through verify with --args_n. One launched otherwise runs on 1 and 2 processes through
   `accelerate launch` itself: both
   end within the timeout (a hang fails the test) and print exactly one `final:` line; the
   verdict is scripts/verify/verdicts.py's (judge): 1 process prints the original's line
   exactly (see original: below), the work was split (the runtime's work reports,
   ACCELERATE_WORK_REPORT=<run dir>/work: each process ~1/N of the samples; none, or
   unsplit, is "not distributed": a failure), and 2 processes print exactly what 1 process
   prints ("reproduced") or differ by at most verdicts.SPREAD_FACTOR times the largest gap of
   5 order controls (the migrated program on 1 process with the items of each batch
   shuffled, ACCELERATE_BATCH_ORDER_CONTROL=1..5: "within spread"); anything else fails;
   expect: announced RULE -> the same, and the tool's note/warning [RULE] must be in its
                         output; a gap beyond the spread that the rule announces
                         ("announced", verdicts.ANNOUNCES) passes too;
   expect: runs       -> both runs end well within the timeout (numbers not compared; the
                         work split is shown, not judged);
   expect: refuse ID  -> the output carries `accel-migrate(ID)` or the tool warned with [ID];
   expect: fails-fast SECONDS -> the 2-process run fails (exit != 0) within SECONDS, with
                         the EXPECT's `message:` in its output;
   no-warning: RULE-ID... -> in any case, the tool must not have warned with these ids (an
                         idiom it handles instead of refusing).
   original: exact (default) -> for reproduce and runs, the UNMIGRATED program is built and run
                         too (same arguments, no launcher), and the migrated program on 1
                         process must print exactly its `final:` line;
   original: keys KEY... -> only these `final:` values must be the original's exactly (the
                         EXPECT says in a comment why the others differ, e.g. the original
                         miscounts a short last batch and the migration counts it right);
   original: not-comparable REASON -> the original is not compared, for the reason given
                         (e.g. it is not seeded); printed in the verdict.
Prints one verdict line per program and "PASSED fidelity" at the end when all pass.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "verify"))
import verdicts  # noqa: E402  (the verdict rules, shared with test/public and accelerate verify)

# The programs are built as a CMake project without a build type builds them (no -O flags:
# what a user's project gets by default). Release (-O3) doubled each unit's compile time
# (a fidelity program with the LibTorch PCH: 14.2 s -> 7.1 s of CPU at -O0, 2026-11-26,
# issue 28) and changes nothing compared here: the numbers come from LibTorch's own
# compiled code, and GCC does not reorder floating-point arithmetic without -ffast-math.
BUILD_TYPE = ""

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULTS = {"mode": "file", "expect": "reproduce", "args": "", "args-2": "", "launch": "--split_batches",
            "timeout": "120", "message": "", "no-warning": "",
            "program": "", "original": "exact"}


class Failure(Exception):
    pass


# Wall seconds and CPU seconds of the children by phase (migrate, configure, build, run), summed
# over every command the harness ran: the closing lines say where the suite's time goes
# (issue 46: find what is repeated before cutting it). Threads add concurrently, so the wall
# sums can exceed the suite's own wall time.
PHASES = {}


def phase_of(log):
    """The phase a command's log names (its file name says what ran)."""
    base = os.path.basename(log)
    for key, phase in (("configure", "configure"), ("build", "build"), ("again", "idempotence"), ("migrate", "migrate"),
                       ("run-", "run"), ("verify", "run")):
        if key in base:
            return phase
    return "other"


def account(log, wall, cpu):
    w, c, n = PHASES.get(phase_of(log), (0.0, 0.0, 0))
    PHASES[phase_of(log)] = (w + wall, c + cpu, n + 1)


def read_expect(path):
    spec = dict(DEFAULTS)
    for line in open(path):
        line = line.split("#", 1)[0].strip() if not line.startswith("message:") else line.strip()
        if not line:
            continue
        key, _, value = line.partition(":")
        if key.strip() not in DEFAULTS and key.strip() not in ("style", "idioms"):
            raise Failure(f"{path}: unknown key '{key.strip()}'")
        spec[key.strip()] = value.strip()
    return spec


def wait_with_cpu(p, timeout):
    """(exit code or None on timeout, CPU seconds of the child and what it waited for). wait4
    on this child alone: threads run commands concurrently, so RUSAGE_CHILDREN would mix them.
    A command past its timeout is killed with its whole session (it may have started others)."""
    deadline = None if timeout is None else time.time() + timeout
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return p.returncode, usage.ru_utime + usage.ru_stime
        if deadline is not None and time.time() > deadline:
            os.killpg(p.pid, 9)
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            return None, usage.ru_utime + usage.ru_stime
        time.sleep(0.02)


def sh(cmd, log, env, cwd=None, timeout=None, check=True):
    t0 = time.time()
    with open(log, "w") as f:
        f.write("+ " + " ".join(cmd) + "\n")
        f.flush()
        try:
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                 start_new_session=True)
        except OSError as e:
            f.write(f"cannot start: {e}\n")
            p = None
        rc, cpu = wait_with_cpu(p, timeout) if p else (127, 0.0)
    account(log, time.time() - t0, cpu)
    text = open(log).read()
    if check and rc != 0:
        what = f"did not end within {timeout} s (hang)" if rc is None else f"exit {rc}"
        raise Failure(f"{' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))}: "
                      f"{what}\n{text[-2500:]}")
    return rc, text, time.time() - t0


def sources(d):
    # "build" is tested relative to d: the harness's own work tree may sit under a build dir.
    return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs
                  if f.endswith((".cpp", ".cc", ".h", ".hpp"))
                  and "build" not in os.path.relpath(r, d).split(os.sep))


def tree(d, skip=()):
    out = {}
    for r, dirs, fs in os.walk(d):
        dirs[:] = [x for x in dirs if os.path.join(r, x) not in skip]
        for f in fs:
            p = os.path.join(r, f)
            if not f.startswith("accel-migrate-report."):  # the reports of each run differ
                out[os.path.relpath(p, d)] = open(p, "rb").read()
    return out


class Harness:
    def __init__(self, a):
        self.prefix, self.work = a.prefix, a.work
        self.tool = os.path.join(a.prefix, "bin", "accel-migrate")
        self.launcher = os.path.join(a.prefix, "bin", "accelerate")
        self.env = dict(os.environ, OMP_NUM_THREADS="1")
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            self.env.pop(k, None)
        self.cmake_launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
        # The programs are compiled by the clang++ of the tool's LLVM when one is given (CMake
        # passes it): with a PCH, CMake has clang instantiate LibTorch's templates once in the PCH
        # (-fpch-instantiate-templates), where GCC loads its 568 MB PCH and instantiates them again
        # in every unit. A migrated fidelity program, 2026-11-28 on the CI kind of machine: GCC
        # with PCH 11.7 s, clang with PCH 4.2 s (results/2026-11-28-fidelity-clang.txt). The
        # numbers compared are unaffected: original and migration are built by the same compiler
        # at -O0, and what they compute comes from LibTorch's own compiled code. GCC builds users'
        # programs in install.deb, install.consumer, e2e.project, docs.getting_started and the
        # README's main job.
        self.gnu = "clang" not in os.path.basename(a.cxx or "c++")
        self.cmake_toolchain = [f"-DCMAKE_CXX_COMPILER={a.cxx}"] if a.cxx else []
        # The build's linker (ACCEL_LINKER, cmake/AccelLinker.cmake: gold in the ci preset, an
        # eighth of GNU ld's time per LibTorch program) for the 44 programs linked here too.
        if a.linker:
            self.cmake_toolchain.append(f"-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld={a.linker}")

    def migrate_files(self, name, src, out, log):
        files = sources(src)
        for f in files:
            os.makedirs(os.path.dirname(os.path.join(out, f)), exist_ok=True)
        text = ""
        for f in files:
            _, t, _ = sh([self.tool, os.path.join(src, f), "-o", os.path.join(out, f)],
                         f"{log}.{f.replace(os.sep, '_')}", self.env)
            text += t
        for f in files:  # idempotence, once every file (and header) is migrated
            again = os.path.join(self.work, name, "again", f)
            os.makedirs(os.path.dirname(again), exist_ok=True)
            sh([self.tool, os.path.join(out, f), "-o", again], f"{log}.again.{f.replace(os.sep, '_')}", self.env)
            if open(again).read() != open(os.path.join(out, f)).read():
                d = subprocess.run(["diff", "-u", os.path.join(out, f), again], capture_output=True, text=True)
                raise Failure(f"not idempotent: a second migration changes {f}\n{d.stdout[-2000:]}")
        return text

    def migrate_project(self, name, src, out, log):
        build = os.path.join(src, "build")
        sh(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
           log + ".configure", self.env)
        _, text, _ = sh([self.tool, "-p", build, "--in-root", src, "--out-root", out, "-j", "2"], log, self.env)
        # Idempotence: project mode over its own output (configured the same way).
        again = os.path.join(self.work, name, "again")
        out_build = os.path.join(self.work, name, "out-cc")
        sh(["cmake", "-S", out, "-B", out_build, "-G", "Ninja", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            f"-DCMAKE_PREFIX_PATH={self.prefix}"], log + ".configure-again", self.env)
        sh([self.tool, "-p", out_build, "--in-root", out, "--out-root", again, "-j", "2"], log + ".again", self.env)
        a, b = tree(out, skip=(os.path.join(out, "build"),)), tree(again)
        changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        if changed:
            raise Failure(f"not idempotent: project mode over its own output changes {changed}")
        return text

    def build_file_mode(self, programs, originals_only=False):
        """One CMake project building every file-mode program (shared PCH). With
        originals_only, the PCH and the unmigrated programs alone: main() builds them while
        the tool migrates (they need nothing from it), then calls again for everything, and
        the second build finds them up to date (the targets' commands are the same)."""
        proj = os.path.join(self.work, "_build-file-mode")
        os.makedirs(proj, exist_ok=True)
        lines = ["cmake_minimum_required(VERSION 3.22)", "project(fidelity CXX)",
                 "find_package(Accelerate REQUIRED CONFIG)",
                 'file(WRITE ${CMAKE_BINARY_DIR}/pch.cpp "")',
                 "add_library(fidelity_pch OBJECT ${CMAKE_BINARY_DIR}/pch.cpp)",
                 "target_link_libraries(fidelity_pch PRIVATE Accelerate::accelerate)",
                 "target_precompile_headers(fidelity_pch PRIVATE <torch/torch.h>)"]
        for name in programs:
            # The migrated program and the original (its unmigrated sources, for `original:`).
            for target, tree_dir in ((name, "out"), ("original_" + name, "src")):
                if originals_only and tree_dir == "out":
                    continue
                d = os.path.join(self.work, name, tree_dir)
                srcs = " ".join(os.path.join(d, f) for f in sources(d) if f.endswith((".cpp", ".cc")))
                # GCC ignores a PCH built with -fPIC in a -fPIE compile (a warning, then a
                # full parse of LibTorch per file): compile the executables with -fPIC too, as
                # cmake/AccelDependencies.cmake does, and make an unusable PCH an error.
                # (clang refuses an unusable PCH by itself.)
                strict = " -Werror=invalid-pch" if self.gnu else ""
                lines += [f"add_executable({target} {srcs})",
                          f"target_link_libraries({target} PRIVATE Accelerate::accelerate)",
                          f"set_target_properties({target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)",
                          f"target_compile_options({target} PRIVATE -fPIC{strict})",
                          f"target_precompile_headers({target} REUSE_FROM fidelity_pch)"]
        open(os.path.join(proj, "CMakeLists.txt"), "w").write("\n".join(lines) + "\n")
        b = os.path.join(proj, "build")
        step = "originals-" if originals_only else ""
        sh(["cmake", "-S", proj, "-B", b, "-G", "Ninja", f"-DCMAKE_BUILD_TYPE={BUILD_TYPE}",
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON", f"-DCMAKE_PREFIX_PATH={self.prefix}"]
           + self.cmake_launcher + self.cmake_toolchain,
           os.path.join(self.work, f"file-mode-{step}configure.log"), self.env)
        # -k 0: one program that does not build does not hide the others' results.
        rc, text, _ = sh(["cmake", "--build", b, "-j", "2", "--", "-k", "0"],
                         os.path.join(self.work, f"file-mode-{step}build.log"), self.env, check=False)
        return {name: os.path.join(b, name) for name in programs}, text, \
            {name: os.path.join(b, "original_" + name) for name in programs}

    def build_project(self, name, program="", tree_dir="out"):
        """Builds the migrated project (tree_dir "out") or the original ("src") and returns
        the program to run."""
        out = os.path.join(self.work, name, tree_dir)
        b = os.path.join(self.work, name, tree_dir + "-build")
        sh(["cmake", "-S", out, "-B", b, "-G", "Ninja", f"-DCMAKE_BUILD_TYPE={BUILD_TYPE}",
            f"-DCMAKE_PREFIX_PATH={self.prefix}"] + self.cmake_launcher + self.cmake_toolchain,
           os.path.join(self.work, name, f"configure-{tree_dir}.log"), self.env)
        sh(["cmake", "--build", b, "-j", "2"], os.path.join(self.work, name, f"build-{tree_dir}.log"), self.env)
        if program:  # a project with several programs: the one to run
            exe = os.path.join(b, program)
            if not os.access(exe, os.X_OK):
                raise Failure(f"the migrated project's build has no program {program}")
            return exe
        exes = [os.path.join(b, f) for f in os.listdir(b)
                if os.path.isfile(os.path.join(b, f)) and os.access(os.path.join(b, f), os.X_OK)]
        if len(exes) != 1:
            raise Failure(f"expected one executable at the top of the migrated project's build, found {exes}")
        return exes[0]

    def launch(self, name, exe, n, spec, check=True, control=None):
        """Runs the migrated program on n processes; the runtime writes its work reports
        (verdicts.read_work_reports) into <run dir>/work. control: an order control's seed."""
        tag = f"run-{n}" if control is None else f"run-control-{control}"
        cwd = os.path.join(self.work, name, tag)
        shutil.rmtree(cwd, ignore_errors=True)
        os.makedirs(cwd)
        cmd = [self.launcher, "launch", "--cpu", "--num_processes", str(n), "--main_process_port", "0"]
        args = spec["args-2"] if n == 2 and spec["args-2"] else spec["args"]
        cmd += spec["launch"].split() + [exe] + args.split()
        os.makedirs(os.path.join(cwd, "work"))  # made here: the runtime need not create it
        env = dict(self.env, ACCELERATE_WORK_REPORT=os.path.join(cwd, "work"))
        if control is not None:
            env[verdicts.CONTROL_ENV] = str(control)
        return sh(cmd, os.path.join(self.work, name, f"{tag}.log"), env, cwd=cwd,
                  timeout=float(spec["timeout"]), check=check)

    def verify(self, name, exe, spec, migrate_text):
        """`accelerate verify` of the migrated program (1 and 2 processes with --split_batches,
        traced; order controls when the traces differ): (report, {n: output of the n-process
        run}, {seed: output of that order control}). Its runs share one empty working folder."""
        base = os.path.join(self.work, name)
        work, cwd = os.path.join(base, "verify"), os.path.join(base, "verify-cwd")
        for d in (work, cwd):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(cwd)
        notes = os.path.join(base, "migrate-notes.txt")
        with open(notes, "w") as f:
            f.write(migrate_text)
        launch = [w for w in spec["launch"].split() if w != "--split_batches"]  # verify adds it
        cmd = [self.launcher, "verify", "--cpu", "--reset_cwd", "--work", work, "--notes", notes,
               "--timeout", spec["timeout"]]
        cmd += ["--args_n", spec["args-2"]] if spec["args-2"] else []  # the program halves its batch itself
        cmd += (["--launch", " ".join(launch)] if launch else []) + [exe] + spec["args"].split()
        rc, text, _ = sh(cmd, os.path.join(base, "verify.log"), self.env, cwd=cwd,
                         timeout=20 * float(spec["timeout"]), check=False)
        report_path = os.path.join(work, "report.json")
        if rc not in (0, 1) or not os.path.exists(report_path):
            raise Failure(f"accelerate verify could not judge the runs (exit {rc}):\n{text[-2000:]}")
        read = lambda tag: open(os.path.join(work, f"{tag}.log"), errors="replace").read()
        controls = {int(f[len("control-"):-len(".log")]): read(f[:-len(".log")]) for f in os.listdir(work)
                    if re.fullmatch(r"control-\d+\.log", f)}
        return json.load(open(report_path)), {1: read("one"), 2: read("n2")}, controls

    def work_reports(self, name, n):
        try:
            return verdicts.read_work_reports(os.path.join(self.work, name, f"run-{n}", "work"))
        except ValueError as e:
            raise Failure(f"unreadable work report: {e}")


def run_original(h, name, exe, spec):
    """The unmigrated program, alone, with the EXPECT's arguments: its `final:` text."""
    cwd = os.path.join(h.work, name, "run-original")
    os.makedirs(cwd, exist_ok=True)
    _, text, _ = sh([exe] + spec["args"].split(), os.path.join(h.work, name, "run-original.log"), h.env, cwd=cwd,
                    timeout=float(spec["timeout"]))
    return final_text(text, "the original program")


def controls(h, name, exe, spec, seeds):
    """The order controls `seeds` (verdicts.CONTROL_SEEDS, EXTRA_SEEDS): {seed: values} of the migrated program on
    1 process with each batch's items shuffled, every `final:` value (as the 1- and 2-process
    values compared); a control that fails is left out (fewer than verdicts.MIN_CONTROLS give
    no spread)."""
    got = {}
    for seed in seeds:
        try:
            _, text, _ = h.launch(name, exe, 1, spec, control=seed)
            got[seed] = pick(final_text(text, f"order control {seed}"))
        except Failure:
            pass
    return got


def pick(line, keys=None):
    """The `final:` text's values as floats (only `keys` when given)."""
    values = {k: float(v) for k, v in (kv.split("=", 1) for kv in line.split())}
    return {k: values[k] for k in keys if k in values} if keys else values


def final_text(text, what):
    lines = [l for l in text.splitlines() if re.match(r"^(\[rank\d+\]: )?final: ", l)]
    if len(lines) != 1:
        raise Failure(f"{len(lines)} 'final:' lines from {what} (expected one, from the main process)\n"
                      + text[-2000:])
    return lines[0].split("final: ", 1)[1].strip()


def compare_original(spec, original, one_text):
    """`original: exact`: the migrated program on 1 process prints the original's line."""
    mode = spec["original"].split(None, 1)
    if mode[0] == "not-comparable":
        return f"; original not compared ({mode[1] if len(mode) > 1 else 'no reason given'})"
    if mode[0] not in ("exact", "keys"):
        raise Failure(f"EXPECT original: '{spec['original']}' (exact | keys KEY... | not-comparable REASON)")
    one = final_text(one_text, "1 process")
    if mode[0] == "keys":
        wanted = mode[1].split() if len(mode) > 1 else []
        pick = lambda line: dict(kv.split("=", 1) for kv in line.split())
        a, b = pick(original), pick(one)
        missing = [k for k in wanted if k not in a or k not in b]
        if not wanted or missing:
            raise Failure(f"EXPECT original: keys {wanted}: not printed by both runs: {missing}")
        original, one = (" ".join(f"{k}={d[k]}" for k in wanted) for d in (a, b))
    if one != original:
        raise Failure(f"the migrated program on 1 process does not compute what the original computes:\n"
                      f"  original:  final: {original}\n  1 process: final: {one}")
    return "; 1 process = original exactly" + (f" ({' '.join(mode[1].split())})" if mode[0] == "keys" else "")


def final_values(text, what):
    lines = [l for l in text.splitlines() if re.match(r"^(\[rank\d+\]: )?final: ", l)]
    if len(lines) != 1:
        raise Failure(f"{len(lines)} 'final:' lines from {what} (expected one, from the main process)\n"
                      + text[-2000:])
    body = lines[0].split("final: ", 1)[1]
    return {k: float(v) for k, v in (kv.split("=", 1) for kv in body.split())}


def check_program(h, name, spec, exe, migrate_text, original_exe=None):
    for rule in spec["no-warning"].split():
        # A note with the rule's id says what was handled; only a warning is a refusal.
        lines = [l for l in migrate_text.splitlines() if f"[{rule}]" in l and "warning:" in l]
        if lines:
            raise Failure(f"the tool warned [{rule}] (it must handle this idiom, not refuse it):\n"
                          + "\n".join(lines[:5]))
    expect = spec["expect"].split()
    kind = expect[0]
    if kind == "refuse":
        rule = expect[1]
        out = os.path.join(h.work, name, "out")
        marked = any(f"accel-migrate({rule})" in open(os.path.join(out, f)).read() for f in sources(out))
        if not marked and f"[{rule}]" not in migrate_text:
            raise Failure(f"expected a refusal by {rule}: no accel-migrate({rule}) comment, no [{rule}] warning")
        return f"refused by {rule}"
    if kind == "fails-fast":
        limit = float(expect[1])
        rc, text, secs = h.launch(name, exe, 2, dict(spec, timeout=str(limit + 30)), check=False)
        if rc == 0 or rc is None or secs > limit:
            raise Failure(f"expected the 2-process run to fail within {limit} s: exit {rc} after {secs:.1f} s\n"
                          + text[-2000:])
        if spec["message"] and spec["message"] not in text:
            raise Failure(f"the failure does not say '{spec['message']}'\n{text[-2000:]}")
        return f"2 processes failed in {secs:.1f} s (exit {rc}) with the expected message"
    if kind not in ("reproduce", "runs", "announced"):
        raise Failure(f"EXPECT expect: '{spec['expect']}' (reproduce | runs | announced RULE | refuse RULE | "
                      "fails-fast SECONDS)")
    if kind != "runs" and traced(spec):
        return judge_traced(h, name, spec, exe, migrate_text, original_exe)
    texts, secs = {}, {}
    for n in (1, 2):
        _, texts[n], secs[n] = h.launch(name, exe, n, spec)
    split = verdicts.judge_split(h.work_reports(name, 1), h.work_reports(name, 2))
    if kind == "runs":
        comparable = spec["original"].split()[0] != "not-comparable"
        versus = compare_original(spec, run_original(h, name, original_exe, spec) if comparable else "", texts[1])
        return f"1 and 2 processes ran ({secs[1]:.1f} s, {secs[2]:.1f} s){versus}; {split.why}"
    return judge_values(h, name, spec, exe, texts, split, migrate_text, original_exe)


def traced(spec):
    """Whether accelerate verify judges the program: it keeps the global batch on 2 processes,
    by --split_batches (verify's default) or by its own 2-process arguments (args-2: verify
    --args_n, launched without --split_batches). Otherwise it is judged on its printed values
    alone."""
    return bool(spec["args-2"]) != ("--split_batches" in spec["launch"].split())


def judge_traced(h, name, spec, exe, migrate_text, original_exe):
    """expect: reproduce | announced RULE, judged twice on the same runs: by `accelerate
    verify` on the step traces (every step's parameters and loss, the work split on every
    step, order controls when the traces differ: docs/verify.md), and by verdicts.judge on the
    printed `final:` values (the original against 1 process exactly; the controls' printed
    values as the spread). Both must pass (issue 48 item 5: the printed numbers stay as a
    second check)."""
    report, texts, control_texts = h.verify(name, exe, spec, migrate_text)
    expect = spec["expect"].split()
    trace = f"{report['verdict']}: {report['text']}"
    accepted = ["bit-identical", "within spread"] + (["announced"] if expect[0] == "announced" else [])
    if report["verdict"] not in accepted:
        raise Failure(f"accelerate verify: {trace}")
    if report["verdict"] == "announced" and (len(expect) < 2 or expect[1] not in report["text"]):
        raise Failure(f"accelerate verify: announced by another rule than {expect[1:]}: {trace}")

    def control_values(seeds):
        # verify's own controls where it ran them (only when the traces differ); a seed it did
        # not run (the printed values differ where the traces did not, or more seeds) runs here.
        got = {t: pick(final_text(control_texts[t], f"order control {t}")) for t in seeds if t in control_texts}
        got.update(controls(h, name, exe, spec, [t for t in seeds if t not in control_texts]))
        return got

    split = verdicts.Split("split", "work split on every step (accelerate verify)")
    printed = judge_values(h, name, spec, exe, texts, split, migrate_text, original_exe, control_values)
    return f"traces: {trace}; printed: {printed}"


def judge_values(h, name, spec, exe, texts, split, migrate_text, original_exe, control_values=None):
    """expect: reproduce | announced RULE: the verdict of scripts/verify/verdicts.py on the
    original, 1 process and 2 processes, with the work reports' split (a run that cannot
    show its work was split is "not distributed": a failure here)."""
    mode, expect = spec["original"].split(None, 1), spec["expect"].split()
    if mode[0] not in ("exact", "keys", "not-comparable"):
        raise Failure(f"EXPECT original: '{spec['original']}' (exact | keys KEY... | not-comparable REASON)")
    keys = mode[1].split() if mode[0] == "keys" and len(mode) > 1 else None
    if mode[0] == "keys" and not keys:
        raise Failure("EXPECT original: keys with no key")
    one, two = (final_values(texts[n], f"{n} process(es)") for n in (1, 2))
    if one.keys() != two.keys():
        raise Failure(f"different final keys: {sorted(one)} vs {sorted(two)}")
    warned, noted = verdicts.tool_messages(migrate_text)
    e = verdicts.Evidence(one=one, many=two, split=split, warned=warned, noted=noted,
                          controls=control_values or (lambda seeds: controls(h, name, exe, spec, seeds)))
    if mode[0] == "not-comparable":
        e.original_why = mode[1] if len(mode) > 1 else "no reason given"
    else:
        lines = run_original(h, name, original_exe, spec), final_text(texts[1], "1 process")
        texts_by_key = [dict(kv.split("=", 1) for kv in line.split()) for line in lines]
        missing = [k for k in keys or [] if any(k not in t for t in texts_by_key)]
        if missing:
            raise Failure(f"EXPECT original: keys {keys}: not printed by both runs: {missing}")
        e.original = pick(lines[0], keys)
        e.original_text, e.one_text = (" ".join(f"{k}={t[k]}" for k in keys) if keys else line
                                       for t, line in zip(texts_by_key, lines))
    v = verdicts.judge(e)
    shown = f"{v.category}: {v.text} (" + " ".join(f"{k}={one[k]:.6g}/{two[k]:.6g}" for k in one) + ")"
    accepted = (verdicts.REPRODUCED, verdicts.WITHIN_SPREAD)
    if expect[0] == "announced":
        rule = expect[1] if len(expect) > 1 else ""
        if rule not in warned | noted:
            raise Failure(f"expected the tool to announce [{rule}]; it did not. {shown}")
        if v.category == verdicts.ANNOUNCED and rule not in v.text:
            raise Failure(f"announced by another rule than {rule}: {shown}")
        accepted += (verdicts.ANNOUNCED,)
    if v.category not in accepted:
        raise Failure(shown)
    return shown

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True, help="installed Accelerate prefix")
    ap.add_argument("--work", required=True)
    ap.add_argument("--corpus", default=HERE)
    ap.add_argument("--only", nargs="*", help="program names (default: all)")
    ap.add_argument("--cxx", default="", help="C++ compiler for the programs (default: CMake's choice)")
    ap.add_argument("--linker", default="", help="-fuse-ld= for the programs (default: the compiler's)")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    h = Harness(a)
    names = sorted(d for d in os.listdir(a.corpus) if os.path.isfile(os.path.join(a.corpus, d, "EXPECT")))
    if a.only:
        names = [n for n in names if n in a.only]
    specs, verdicts, migrated, t0 = {}, {}, {}, time.time()
    print(f"fidelity: {len(names)} programs", flush=True)
    # Migrations are single-threaded tool runs: two at a time use both cores (project mode's
    # own -j 2 shares them). Results are printed in the programs' order.
    def migrate(name):
        spec = specs[name]
        src, out = os.path.join(a.work, name, "src"), os.path.join(a.work, name, "out")
        log = os.path.join(a.work, name, "migrate.log")
        if spec["mode"] == "project":
            return h.migrate_project(name, src, out, log)
        return h.migrate_files(name, src, out, log)

    for name in names:
        specs[name] = read_expect(os.path.join(a.corpus, name, "EXPECT"))
        shutil.copytree(os.path.join(a.corpus, name), os.path.join(a.work, name, "src"),
                        ignore=shutil.ignore_patterns("EXPECT", "build"))
    # The unmigrated programs and the shared PCH build beside the migrations (which leave a
    # core idle in their single-threaded steps): 2026-11-26, the PCH alone was ~30 s of one
    # core before any program could start.
    all_file_mode = [n for n in names if specs[n]["mode"] == "file"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        originals_build = pool.submit(h.build_file_mode, all_file_mode, True) if all_file_mode else None
        futures = {name: pool.submit(migrate, name) for name in names}
        for i, name in enumerate(names, 1):
            try:
                migrated[name] = futures[name].result()
                print(f"[{i}/{len(names)}] {name}: migrated ({time.time() - t0:.0f} s)", flush=True)
            except Failure as e:
                verdicts[name] = f"FAILED: {e}"
                print(f"[{i}/{len(names)}] {name}: FAILED to migrate", flush=True)
        originals_text = originals_build.result()[1] if originals_build else ""
    file_mode = [n for n in names if n not in verdicts and specs[n]["mode"] == "file"]
    exes, build_text, originals = h.build_file_mode(file_mode) if file_mode else ({}, "", {})
    build_text = originals_text + build_text
    print(f"fidelity: file-mode programs built ({time.time() - t0:.0f} s)", flush=True)
    for name in names:
        if name in verdicts:
            continue
        try:
            if specs[name]["mode"] == "project":
                exe = h.build_project(name, specs[name]["program"])
                original = h.build_project(name, specs[name]["program"], "src")
            else:
                exe, original = exes[name], originals[name]
                for path, tree_dir, what in ((exe, "out", "migrated"), (original, "src", "original")):
                    if not os.path.exists(path):
                        errors = [l for l in build_text.splitlines() if f"/{name}/{tree_dir}/" in l and "error" in l]
                        raise Failure(f"the {what} program does not compile:\n" + "\n".join(errors[:15]))
            verdicts[name] = "ok: " + check_program(h, name, specs[name], exe, migrated[name], original)
        except Failure as e:
            verdicts[name] = f"FAILED: {e}"
        print(f"{name}: {verdicts[name]}", flush=True)
    failed = [n for n in names if not verdicts[n].startswith("ok")]
    print("\nfidelity time by phase (commands' wall seconds summed over threads / their CPU seconds / count):")
    for ph, (w, c, n) in sorted(PHASES.items(), key=lambda kv: -kv[1][1]):
        print(f"  {ph:10s} {w:7.1f} s wall {c:7.1f} s CPU {n:4d} commands")
    print("\nfidelity summary:")
    for n in names:
        print(f"  {'ok  ' if n not in failed else 'FAIL'} {n}: {verdicts[n].splitlines()[0][:150]}")
    json.dump(verdicts, open(os.path.join(a.work, "verdicts.json"), "w"), indent=1)
    if failed:
        print(f"FAILED fidelity: {len(failed)} of {len(names)}: {' '.join(failed)}")
        return 1
    print(f"PASSED fidelity: {len(names)} programs in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
