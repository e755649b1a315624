"""accel-migrate's speed, as ratios against `clang++-16 -fsyntax-only` on the same files
measured in the same run (imported by run.py; see docs/benchmarks.md).

Per file (median over files of the per-file ratio):
  cold  - an empty PCH cache: the run builds the LibTorch PCH, then parses with it
  warm  - the PCH is cached: what repeated runs, --check in CI and project mode pay
  no-pch - --no-pch: a plain parse, as before the cache existed
Project mode: N files of compile_commands.json at -j1 and -j2 with a warm cache.
"""
import json
import os
import shutil
import statistics

TORCH_API = "/usr/include/torch/csrc/api/include"


def _files(root, quick):
    # Real LibTorch programs of this repository: the examples, then the corpus.
    names = [os.path.join(root, "examples", d, "main.cpp") for d in ("mnist_cnn", "regression", "gan", "trainer_class")]
    corpus = os.path.join(root, "test", "corpus")
    names += sorted(os.path.join(corpus, f) for f in os.listdir(corpus) if f.endswith(".cpp"))
    names = [n for n in names if os.path.isfile(n)]
    return names[:1] if quick else names[:3], names[:2] if quick else names[:8]


def _flags(src):
    # The tool adds these itself (-std=c++17 and LibTorch's include directories). The
    # examples' own headers are included with quotes, found next to the including file.
    return ["-std=c++17", "-I" + TORCH_API, "-w"]


def measure(bench, run_timed, Skip):
    tool = bench.exe("tool/accel-migrate")
    clang = shutil.which("clang++-16")
    if not clang:
        raise Skip("clang++-16 not found")
    per_file, project_files = _files(bench.root, bench.args.quick)
    tmp = os.path.join(bench.tmp, "tool")
    os.makedirs(tmp, exist_ok=True)
    env = dict(bench.env)
    env.pop("ACCEL_MIGRATE_CACHE_DIR", None)

    ratios = {"cold": [], "warm": [], "no-pch": []}
    secs = {"clang": [], "cold": [], "warm": [], "no-pch": []}
    for i, src in enumerate(per_file):
        cache = os.path.join(tmp, "cache-%d" % i)
        out = os.path.join(tmp, "out-%d.cpp" % i)
        tool_cmd = lambda *extra: [tool, "--cache-dir", cache] + list(extra) + [src, "-o", out, "--"] + _flags(src)
        _, clang_s, _ = run_timed([clang, "-fsyntax-only"] + _flags(src) + [src], env=env)
        _, cold_s, _ = run_timed(tool_cmd(), env=env)           # builds the PCH
        _, warm_s, _ = run_timed(tool_cmd(), env=env)           # reuses it
        _, nopch_s, _ = run_timed(tool_cmd("--no-pch"), env=env)
        for k, v in (("clang", clang_s), ("cold", cold_s), ("warm", warm_s), ("no-pch", nopch_s)):
            secs[k].append(v)
        ratios["cold"].append(cold_s / clang_s)
        ratios["warm"].append(warm_s / clang_s)
        ratios["no-pch"].append(nopch_s / clang_s)
    med = {k: statistics.median(v) for k, v in secs.items()}
    n = len(per_file)
    bench.add("tool", "accel-migrate warm / clang -fsyntax-only", statistics.median(ratios["warm"]),
              "clang -fsyntax-only", "lower",
              "median of %d files: %.1f s vs %.1f s (PCH cached)" % (n, med["warm"], med["clang"]))
    bench.add("tool", "accel-migrate cold / clang -fsyntax-only", statistics.median(ratios["cold"]),
              "clang -fsyntax-only", "lower",
              "median %.1f s: builds the PCH, then parses with it" % med["cold"])
    bench.add("tool", "accel-migrate --no-pch / clang -fsyntax-only", statistics.median(ratios["no-pch"]),
              "clang -fsyntax-only", "lower", "median %.1f s" % med["no-pch"])

    # Project mode over N files with their own compile_commands.json (warm cache: the
    # first, untimed run fills it).
    src_root = os.path.join(tmp, "project")
    build = os.path.join(tmp, "project-build")
    shutil.rmtree(src_root, ignore_errors=True)
    os.makedirs(src_root)
    os.makedirs(build, exist_ok=True)
    commands = []
    for i, f in enumerate(project_files):
        d = os.path.join(src_root, "f%d" % i)
        os.makedirs(d)
        for h in os.listdir(os.path.dirname(f)):
            if h.endswith(".h"):
                shutil.copy(os.path.join(os.path.dirname(f), h), d)
        dst = os.path.join(d, os.path.basename(f))
        shutil.copy(f, dst)
        commands.append({"directory": build, "file": dst,
                         "arguments": ["clang++", "-std=c++17", "-I" + TORCH_API, "-c", dst, "-o", dst + ".o"]})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f)
    cache = os.path.join(tmp, "project-cache")
    walls = {}
    for label in ("fill", "-j1", "-j2"):
        out = os.path.join(tmp, "project-out" + label)
        shutil.rmtree(out, ignore_errors=True)
        jobs = "2" if label == "-j2" else "1"
        _, w, _ = run_timed([tool, "--cache-dir", cache, "-p", build, "--in-root", src_root,
                             "--out-root", out, "-j", jobs], env=env, timeout=1800)
        walls[label] = w
    m = len(project_files)
    bench.add("tool", "project mode -j2 / -j1 wall (%d files)" % m, walls["-j2"] / walls["-j1"], "-j1", "lower",
              "-j1 %.1f s, -j2 %.1f s (warm cache; 0.5 is the limit on 2 cores)" % (walls["-j1"], walls["-j2"]))
    bench.add("tool", "project mode -j1 / (%d x clang -fsyntax-only)" % m, walls["-j1"] / (m * med["clang"]),
              "clang -fsyntax-only per file", "lower",
              "first (cold) run %.1f s" % walls["fill"])
