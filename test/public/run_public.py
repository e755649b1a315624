#!/usr/bin/env python3
"""Public LibTorch programs (issue 29 item 10): original, migrated 1 process, 2 processes.

Not part of ctest: it needs snapshots of public repositories that are not in this tree.
For each manifest entry (or those named with --only):
1. export the pinned commit's files of the entry's directory from a bare git mirror
   (--mirrors DIR/<owner>+<name>/repo, as the `fetch` tool leaves them, or any bare clone);
   files whose objects the mirror lacks (large data files) are skipped;
2. apply the entry's fixes (sed -E expressions, each on one file; @MNIST@ and @DATA@ are
   replaced by the generated data directories) -- build fixes, shortening, a seed;
3. build the ORIGINAL with a generated CMake project linking Torch (mode: file) or its own
   CMakeLists.txt (mode: project);
4. migrate with the INSTALLED accel-migrate: each source alone (file mode: F -o OUT, the
   include directories passed after --) or project mode (-p BUILD --in-root --out-root);
5. build the migrated program against the installed package, and the TRACED original
   (`accel-migrate --trace-only` on each source and header of the fixed original, linked
   against the package's Accelerate::trace: LibTorch and the step trace, no runtime);
6. run the original (no launcher, no trace); then `accelerate verify --cpu --original TRACED
   --notes <the tool's output> MIGRATED ARGS` (docs/verify.md): the traced original, the
   migrated program on 1 process and on 2 with --split_batches, compared step by step (every
   parameter's hash and norm, every loss, the samples of every process at every step), order
   controls when the traces differ;
7. verdict (verdict()): verify's verdict on the traces (1 process against the traced
   original must be bit-identical; 2 processes against 1: bit-identical -> reproduced, within
   spread, announced, DIVERGED -> FAILED, not split -> not distributed), then, as a second
   check on the same runs, scripts/verify/verdicts.py's judge() on the LAST match of the
   entry's metric regex (group 1) printed by the untraced original and verify's runs (its
   order controls as the spread, and beyond ten of them five of the 2-process configuration,
   measured from the 2-process value; the traced original must print what the original prints).
   The line takes the worse of the two categories and shows both texts; not comparable
   (reason) for entries the manifest marks so. The last line counts each category, a
   program listed twice (same repo, commit, dir, sources, fixes) once.
Writes <work>/<name>/... logs and <work>/verdicts.json; prints one verdict line per entry.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "verify"))
import verdicts  # noqa: E402  (the verdict rules, shared with test/fidelity and accelerate verify)


class Failure(Exception):
    pass


def sh(cmd, log, env, cwd=None, timeout=None, check=True):
    with open(log, "w") as f:
        f.write("+ " + " ".join(cmd) + "\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                timeout=timeout, start_new_session=True).returncode
        except subprocess.TimeoutExpired:
            rc = None
    text = open(log).read()
    if check and rc != 0:
        what = f"did not end within {timeout} s" if rc is None else f"exit {rc}"
        raise Failure(f"{os.path.basename(cmd[0])} {what} (log {log})\n{text[-1500:]}")
    return rc, text


def export(git_dir, commit, subdir, dest):
    """The pinned commit's files under subdir, skipping objects the mirror lacks."""
    ls = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", commit, "--", subdir or "."],
                        capture_output=True, check=True).stdout.decode().split("\0")
    for entry in filter(None, ls):
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind != "blob" or mode == "120000":
            continue
        blob = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "blob", sha], capture_output=True)
        if blob.returncode != 0:
            continue
        rel = os.path.relpath(path, subdir) if subdir else path
        os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
        open(os.path.join(dest, rel), "wb").write(blob.stdout)


def write_cmake(d, name, sources, includes, package, standard):
    """package: torch (the original), accelerate (the migrated program) or trace (the traced
    original: LibTorch and the package's small trace library, no runtime)."""
    if package == "torch":
        find, link = "find_package(Torch REQUIRED)", "${TORCH_LIBRARIES}"
    else:
        find = "find_package(Accelerate REQUIRED CONFIG)"
        link = "Accelerate::trace" if package == "trace" else "Accelerate::accelerate"
    lines = ["cmake_minimum_required(VERSION 3.18)", f"project({name} CXX)",
             f"set(CMAKE_CXX_STANDARD {standard})", find,
             f"add_executable(prog {' '.join(sources)})",
             f"target_link_libraries(prog PRIVATE {link})"]
    if includes:
        lines.append(f"target_include_directories(prog PRIVATE {' '.join(includes)})")
    open(os.path.join(d, "CMakeLists.txt"), "w").write("\n".join(lines) + "\n")


class Runner:
    def __init__(self, a):
        self.a = a
        self.tool = os.path.join(a.prefix, "bin", "accel-migrate")
        self.launcher = os.path.join(a.prefix, "bin", "accelerate")
        self.env = dict(os.environ, OMP_NUM_THREADS="1")
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            self.env.pop(k, None)
        self.ccache = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []

    def data_dirs(self):
        """@MNIST@: full-size MNIST IDX files from the project's synthetic writer."""
        mnist = os.path.join(self.a.data, "mnist")
        if not os.path.exists(os.path.join(mnist, "t10k-labels-idx1-ubyte")):
            os.makedirs(self.a.data, exist_ok=True)
            sh([self.a.mnist_writer, "--epochs", "1", "--train-size", "64", "--batch-size", "64",
                "--data", mnist, "--out", os.path.join(self.a.data, "writer-out")],
               os.path.join(self.a.data, "mnist-writer.log"), self.env)
        return {"@MNIST@": mnist, "@DATA@": self.a.data}

    def build(self, src, b, name, log):
        sh(["cmake", "-S", src, "-B", b, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={self.a.prefix}"] + self.ccache, log + ".configure", self.env)
        sh(["cmake", "--build", b, "-j", "2"], log + ".build", self.env)

    def run(self, e, exe, n, wd, tag=None, control=None):
        tag = tag or f"run-{n}"
        cwd = os.path.join(wd, tag)
        shutil.rmtree(cwd, ignore_errors=True)
        os.makedirs(os.path.join(cwd, e.get("cwd", ".")), exist_ok=True)
        cwd = os.path.join(cwd, e.get("cwd", "."))
        cmd = [exe] + e.get("args", [])
        if n:
            cmd = [self.launcher, "launch", "--cpu", "--num_processes", str(n), "--split_batches",
                   "--main_process_port", "0"] + cmd
        env = dict(self.env, OMP_NUM_THREADS="1")
        if control is not None:  # an order control (verdicts.CONTROL_SEEDS)
            env[verdicts.CONTROL_ENV] = str(control)
        if n:  # the runtime's work reports (verdicts.read_work_reports)
            shutil.rmtree(os.path.join(wd, f"{tag}-work"), ignore_errors=True)
            os.makedirs(os.path.join(wd, f"{tag}-work"))
            env["ACCELERATE_WORK_REPORT"] = os.path.join(wd, f"{tag}-work")
        _, text = sh(cmd, os.path.join(wd, f"{tag}.log"), env, cwd=cwd, timeout=e.get("timeout", 600))
        values = re.findall(e["metric"], text, re.M)
        if not values:
            raise Failure(f"run {'original' if not n else n}: no match of {e['metric']!r}\n{text[-1200:]}")
        v = values[-1]
        v = v if isinstance(v, str) else v[0]
        try:
            float(v)
        except ValueError:  # e.g. "-" of "-nan": a Failure of this entry, not a crash of the run
            raise Failure(f"run {'original' if not n else n}: the last match of {e['metric']!r} is {v!r}, "
                          f"not a number\n{text[-1200:]}")
        return v

    def prepare(self, e):
        """Steps 1, 2 and 4: the exported and fixed sources (src), the migrated copy (out);
        (wd, src, out, the tool's output, the verdict line's note on what it said)."""
        wd = os.path.join(self.a.work, e["name"])
        shutil.rmtree(wd, ignore_errors=True)
        src, out = os.path.join(wd, "src"), os.path.join(wd, "out")
        git_dir = os.path.join(self.a.mirrors, e["repo"].replace("/", "+"), "repo")
        if not os.path.isdir(git_dir):
            raise Failure(f"no mirror {git_dir} (fetch github:{e['repo']})")
        export(git_dir, e["commit"], e.get("dir", ""), src)
        subst = self.data_dirs()
        for fix in e.get("fixes", []):
            expr = fix["sed"]
            for k, v in subst.items():
                expr = expr.replace(k, v)
            before = open(os.path.join(src, fix["file"])).read()
            sh(["sed", "-i", "-E", expr, fix["file"]], os.path.join(wd, "fix.log"), self.env, cwd=src)
            if open(os.path.join(src, fix["file"])).read() == before:
                raise Failure(f"fix {fix['sed']!r} changed nothing in {fix['file']} (stale manifest?)")
        shutil.copytree(src, out)  # file mode overwrites the migrated sources
        migrate_log = os.path.join(wd, "migrate.log")
        std = str(e.get("std", 17))
        if e.get("mode", "file") == "file":
            srcs, incs = e["sources"], e.get("include", [])
            write_cmake(src, e["name"], srcs, incs, "torch", std)
            text = ""
            for f in srcs + e.get("headers", []):
                _, t = sh([self.tool, os.path.join(src, f), "-o", os.path.join(out, f), "--"] + self.flags(e, src),
                          migrate_log + "." + f.replace("/", "_"), self.env, check=False)
                text += t
            write_cmake(out, e["name"], srcs, incs, "accelerate", std)
        else:
            cc = os.path.join(wd, "src-cc")
            sh(["cmake", "-S", os.path.join(src, e.get("project_dir", "")), "-B", cc, "-G", "Ninja", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
               migrate_log + ".configure", self.env)
            shutil.rmtree(out)
            _, text = sh([self.tool, "-p", cc, "--in-root", src, "--out-root", out, "-j", "2"],
                         migrate_log, self.env, check=False)
        with open(os.path.join(wd, "migrate-notes.txt"), "w") as f:
            f.write(text)
        warned, noted = verdicts.tool_messages(text)
        marked = set()
        for r, _, fs in os.walk(out):
            for f in fs:
                if f.endswith((".cpp", ".cc", ".h", ".hpp")):
                    marked |= set(re.findall(r"accel-migrate\((accelerate-[a-z-]+)\)", open(os.path.join(r, f)).read()))
        rules = sorted(warned | marked)
        note = (f" [tool warned/marked: {', '.join(rules)}]" if rules else "") + \
               (f" [tool noted: {', '.join(sorted(noted))}]" if noted else "")
        return wd, src, out, text, note

    def flags(self, e, src):
        return [f"-I{os.path.join(src, i)}" for i in e.get("include", [])] + [f"-std=c++{e.get('std', 17)}"]

    def traced(self, e, wd, src):
        """The traced original (accelerate verify --original): `accel-migrate --trace-only` on
        each source and header of the fixed original, in a copy of its tree, built against the
        installed package's Accelerate::trace (LibTorch and the trace, no runtime). Project-mode
        entries too: --trace-only works a file at a time, and the same files are listed."""
        traced = os.path.join(wd, "traced")
        shutil.copytree(src, traced)
        # A file the tool cannot parse alone (a header that relies on its includer's includes)
        # stays as it is here, as in the migrated tree (prepare(), where the tool says "not
        # migrated"); if it held a step, the traces differ in length and verify says so.
        for f in e["sources"] + e.get("headers", []):
            sh([self.tool, "--trace-only", os.path.join(src, f), "-o", os.path.join(traced, f), "--"]
               + self.flags(e, src), os.path.join(wd, "trace-only." + f.replace("/", "_") + ".log"), self.env,
               check=False)
        write_cmake(traced, e["name"], e["sources"], e.get("include", []), "trace", str(e.get("std", 17)))
        self.build(traced, os.path.join(wd, "build-traced"), e["name"], os.path.join(wd, "traced"))
        return os.path.join(wd, "build-traced", "prog")

    def builds(self, e, wd, src, out, note):
        """Steps 3 and 5 and the traced original: {original, traced, migrated: executable}."""
        pdir, prog = e.get("project_dir", ""), e.get("program", "prog")
        self.build(os.path.join(src, pdir), os.path.join(wd, "build-original"), e["name"], os.path.join(wd, "original"))
        try:
            self.build(os.path.join(out, pdir), os.path.join(wd, "build-migrated"), e["name"],
                       os.path.join(wd, "migrated"))
        except Failure as x:
            errors = [l for l in str(x).splitlines() if "error" in l][:4]
            raise Failure("the migrated program does not compile: " + " | ".join(errors) + note)
        return {"original": os.path.join(wd, "build-original", prog), "traced": self.traced(e, wd, src),
                "migrated": os.path.join(wd, "build-migrated", prog)}

    def verify(self, e, wd, exes):
        """Step 6: `accelerate verify` (docs/verify.md) of the migrated program: the traced
        original, 1 process, 2 processes with --split_batches, compared step by step with the
        work split checked on every step, order controls when the traces differ, the tool's
        notes as announcements. Its runs share one working folder (the entry's cwd inside a
        fresh one). (exit status, its output, report or None, {tag: printed metric})."""
        work = os.path.join(wd, "verify")
        cwd = os.path.join(wd, "verify-cwd", e.get("cwd", "."))
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(cwd, exist_ok=True)
        timeout = e.get("timeout", 600)
        cmd = [self.launcher, "verify", "--cpu", "--reset_cwd", "--work", work, "--notes", os.path.join(wd, "migrate-notes.txt"),
               "--timeout", str(timeout), "--original", exes["traced"], exes["migrated"]] + e.get("args", [])
        rc, text = sh(cmd, os.path.join(wd, "verify.log"), self.env, cwd=cwd, timeout=20 * timeout, check=False)
        report = os.path.join(work, "report.json")
        printed = {}
        for f in os.listdir(work) if os.path.isdir(work) else []:
            if f.endswith(".log"):
                printed[f[:-4]] = metric(e, open(os.path.join(work, f), errors="replace").read(), f[:-4])
        return rc, text, json.load(open(report)) if rc in (0, 1) and os.path.exists(report) else None, printed

    def one(self, e):
        wd, src, out, text, note = self.prepare(e)
        exes = self.builds(e, wd, src, out, note)
        try:
            original = self.run(e, exes["original"], 0, wd)
        except Failure as x:
            raise Failure(f"original failed: {str(x).splitlines()[0]}{note}")
        rc, vtext, report, printed = self.verify(e, wd, exes)
        prog = exes["migrated"]

        def controls(seeds, n=1):  # the printed check's order controls: verify's, else run here
            got = {}
            for seed in seeds:
                tag = f"control-{seed}" if n == 1 else f"control-n{n}-{seed}" if seed else f"n{n}-repeat"
                v = printed.get(tag)
                if v is None:
                    try:
                        v = self.run(e, prog, n, wd, tag=tag, control=seed or None)
                    except Failure:
                        continue
                got[seed] = {"metric": float(v)}
            return got
        return verdict(e, original, rc, vtext, report, printed, text, note, controls,
                       own=lambda seeds: controls(seeds, 2))


def metric(e, text, what):
    """The last match of the entry's metric regex (group 1) in a run's output, or None."""
    values = re.findall(e["metric"], text, re.M)
    if not values:
        return None
    v = values[-1] if isinstance(values[-1], str) else values[-1][0]
    try:
        float(v)
    except ValueError:  # e.g. "-" of "-nan"
        return None
    return v


def unmigrated(e, migrate_text):
    """When accel-migrate said "not migrated" for every source of the entry: its reason and the
    first compiler error; else ''."""
    said = re.findall(r"accel-migrate: not migrated: (\S+) \(([^)]*)\)", migrate_text)
    if not e.get("sources") or not all(any(path.endswith("/" + f) for path, _ in said) for f in e["sources"]):
        return ""
    first = next((l.split(" error: ", 1)[1] for l in migrate_text.splitlines() if " error: " in l), "no error shown")
    return f"{said[0][1]}; the first error: {first}"


# verify's verdict on the traces, as a category of the table; and which of two categories is
# worse (the line takes the worse of the traces' and the printed values' verdicts).
TRACE_CATEGORY = {"bit-identical": verdicts.REPRODUCED, "within spread": verdicts.WITHIN_SPREAD,
                  "announced": verdicts.ANNOUNCED, "DIVERGED": verdicts.FAILED, "not split": verdicts.NOT_DISTRIBUTED}
SEVERITY = (verdicts.REPRODUCED, verdicts.WITHIN_SPREAD, verdicts.ANNOUNCED, verdicts.REFUSED,
            verdicts.NOT_DISTRIBUTED, verdicts.FAILED)


def verdict(e, original, rc, vtext, report, printed, migrate_text, note, controls, own=None):
    """The verdict line (step 7): accelerate verify's on the traces (1 process against the
    traced original, which must be bit-identical; 2 processes against 1), then, as a second
    check on the same runs, scripts/verify/verdicts.py's judge() on the printed metric (the
    untraced original, verify's 1- and 2-process runs; its order controls as the spread).
    The line's category is the worse of the two; both texts are shown."""
    nc = e.get("not_comparable")
    shown = f"original {original}, 1 process {printed.get('one')}, 2 processes {printed.get('n2')}"
    if nc:
        return f"not comparable ({nc}): {shown}{note}"
    refused = unmigrated(e, migrate_text)
    if refused:
        # The tool refused every source (it cannot parse them): the program runs as it was, each
        # process doing all the work; the tool said so when it ran, with the compiler's errors.
        return f"{verdicts.NOT_DISTRIBUTED}: the tool did not migrate it ({refused}): {shown}{note}"
    if report is None:
        why = next((l for l in vtext.splitlines() if "accelerate verify: error:" in l), vtext.strip()[-300:])
        # A program whose 1-process run steps no prepared optimizer is not distributed at all
        # (the tool did not migrate it, or it has no optimizer to prepare).
        category = verdicts.NOT_DISTRIBUTED if "wrote no step" in why else verdicts.FAILED
        return f"{category}: accelerate verify (exit {rc}): {why}: {shown}{note}"
    against = report["original"]
    trace = TRACE_CATEGORY[report["verdict"]]
    if against["verdict"] != "bit-identical":
        trace = verdicts.FAILED
    traces = (f"traces: 1 process against the original: {against['verdict']}: {against['text']}; "
              f"2 processes against 1: {report['verdict']}: {report['text']}")
    if printed.get("original") != original:
        return (f"{verdicts.FAILED}: the traced original prints {printed.get('original')}, the original "
                f"{original} (--trace-only must change nothing else); {traces}: {shown}{note}")
    if printed.get("one") is None or printed.get("n2") is None:
        return f"{verdicts.FAILED}: no match of {e['metric']!r} in verify's runs; {traces}: {shown}{note}"
    warned, noted = verdicts.tool_messages(migrate_text)
    split = verdicts.Split("split", "work split on every step (accelerate verify)") \
        if report["verdict"] != "not split" else verdicts.Split("not split", report["text"])
    ev = verdicts.Evidence(one={"metric": float(printed["one"])}, many={"metric": float(printed["n2"])},
                           split=split, original={"metric": float(original)}, original_text=original,
                           one_text=printed["one"], warned=set(warned), noted=set(noted), controls=controls,
                           own_controls=own)
    v = verdicts.judge(ev)
    category = max(trace, v.category, key=SEVERITY.index)
    return f"{category}: {traces}; printed: {v.category}: {v.text}: {shown}{note}"


def identity(e):
    """Entries that run the same program (same files, same fixes of its code) count once: a
    fix of the build files only (soumik-mlp-project builds soumik-mlp in project mode) makes
    no other program."""
    code = [f["file"] + "\0" + f["sed"] for f in e.get("fixes", [])
            if not f["file"].endswith(("CMakeLists.txt", ".cmake"))]
    return json.dumps([e["repo"], e["commit"], e.get("dir", ""), sorted(e["sources"]), code])


def print_summary(manifest, got):
    counts = verdicts.summary([(identity(e), verdicts.category_of(got[e["name"]]))
                               for e in manifest if e["name"] in got])
    programs = len({identity(e) for e in manifest if e["name"] in got})
    print(f"summary ({programs} distinct programs of {len(manifest)} entries; a duplicated program counts once): "
          + ", ".join(f"{c} {counts[c]}" for c in verdicts.CATEGORIES))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True, help="installed Accelerate prefix")
    ap.add_argument("--mirrors", default="/work/.mirror", help="DIR/<owner>+<name>/repo bare git dirs")
    ap.add_argument("--work", default="/tmp/public-programs")
    ap.add_argument("--data", default="/tmp/public-programs-data", help="generated data sets")
    ap.add_argument("--mnist-writer", required=True,
                    help="the project's examples/mnist_cnn binary (writes synthetic MNIST IDX files)")
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--table", nargs="*", metavar="VERDICTS_JSON",
                    help="print the manifest as a markdown table with the verdicts of these files; run nothing")
    a = ap.parse_args()
    # CMake and the runs work in other folders: relative paths would name nothing there.
    a.prefix, a.mnist_writer, a.work, a.data = map(os.path.abspath, (a.prefix, a.mnist_writer, a.work, a.data))
    manifest = json.load(open(a.manifest))["programs"]
    if a.table is not None:
        got = {}
        for f in a.table:
            got.update(json.load(open(f)))
        print("| program | repo@commit | path | style | data | seeded | verdict |")
        print("|---|---|---|---|---|---|---|")
        for e in manifest:
            v = got.get(e["name"], "not measured yet" if not e.get("skip") else f"not comparable ({e['skip']})")
            path = ", ".join(os.path.join(e.get("dir", ""), f) for f in e["sources"])
            print(f"| {e['name']} | {e['repo']}@{e['commit'][:10]} | {path} | {e['style']} | {e['data']} | "
                  f"{'yes' if e.get('seeded') else 'no (seed added by a fix)' if not e.get('skip') else 'no'} | "
                  f"{v.replace('|', '/')} |")
        print_summary(manifest, {e["name"]: got.get(e["name"], f"not comparable ({e.get('skip')})")
                                 for e in manifest if e["name"] in got or e.get("skip")})
        return 0
    if a.only:
        manifest = [e for e in manifest if e["name"] in a.only]
    os.makedirs(a.work, exist_ok=True)
    r, results = Runner(a), {}
    vpath = os.path.join(a.work, "verdicts.json")
    if os.path.exists(vpath):
        results = json.load(open(vpath))
    for e in manifest:
        t0 = time.time()
        if e.get("skip"):
            v = f"not comparable ({e['skip']})"
        else:
            try:
                v = r.one(e)
            except Failure as x:
                v = "FAILED: " + str(x).splitlines()[0]
        results[e["name"]] = v
        json.dump(results, open(vpath, "w"), indent=1)
        print(f"{e['name']} ({time.time() - t0:.0f} s): {v}", flush=True)
    print_summary(manifest, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
