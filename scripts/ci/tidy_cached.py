#!/usr/bin/env python3
"""clang-tidy over a compile database, with a result cache kept outside the clone (issue 46).

run-clang-tidy (Debian's) analyses every unit on every run: ~530 s of CPU over ~140 units (since
issue 46 the lint passes ~55 whole unity units: 448 s on the slower CI kind of machine)
on 2 cores, most of it spent on units nobody changed. This driver runs the same clang-tidy
with the same arguments, but first preprocesses each unit with clang (-E -C: comments kept,
so a NOLINT change counts) and looks its findings up under a key made of:
  - the preprocessed text (every header it reads, at the content level, not by mtime),
  - the unit's compile arguments and its path,
  - every .clang-tidy file of the tree (the check list and its options),
  - clang-tidy's --version;
with the clone's own path replaced by a placeholder in all of them, so that a fresh clone
in another folder (CI's) finds the results of the last one. A miss runs clang-tidy and
stores its output and exit status; a hit prints them again with the paths of this clone.
A change of configuration or of the tool changes every key: a full run, as the issue asks.

  tidy_cached.py --db DIR --root ROOT --jobs N --clang-tidy BIN --clang BIN --cache DIR

Prints clang-tidy's output for every unit, then one line 'tidy_cached: N units, H from the
cache, M analysed'. Exit 1 when a clang-tidy run failed to analyse a unit (its status is
kept in the cache like its output). Standard library only: hashlib's SHA-256 is the key
(Debian's python3 has it; a hand-written hash would be the wrong choice for a solved
problem).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys

PLACEHOLDER = "@ACCEL_ROOT@"
# Arguments that name outputs or dependency files: they do not change what tidy sees, and
# they would make the preprocessing write files.
DROP_WITH_VALUE = {"-o", "-MF", "-MT", "-MQ"}
DROP_ALONE = {"-c", "-MD", "-MMD"}


def unit_args(entry):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in DROP_WITH_VALUE:
            skip = True
        elif a not in DROP_ALONE:
            out.append(a)
    return out


def without_pch(args):
    """args without CMake's clang precompiled-header flags (`-Xclang -include-pch -Xclang
    .../cmake_pch.hxx.pch` and the `-Xclang -include -Xclang .../cmake_pch.hxx` beside it). The key is made from the unit
    preprocessed without them: preprocessed with the PCH it would lack every header the PCH
    holds (LibTorch's), so a change there would not change the key. clang-tidy still parses
    with the PCH (the build made it from those headers just before): the same declarations,
    loaded instead of parsed, so the same findings."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "-Xclang" and i + 3 < len(args) and args[i + 1] in ("-include-pch", "-include") \
                and args[i + 2] == "-Xclang" and "cmake_pch" in os.path.basename(args[i + 3]):
            i += 4
        elif args[i] == "-Winvalid-pch":
            i += 1
        else:
            out.append(args[i])
            i += 1
    return out


def config_digest(root, clang_tidy):
    """The check list (every .clang-tidy of the tree, by relative path) and the tool's version."""
    h = hashlib.sha256()
    version = subprocess.run([clang_tidy, "--version"], capture_output=True, text=True).stdout
    h.update(version.encode())
    for d, dirs, files in sorted(os.walk(root)):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".git", "build")))
        if ".clang-tidy" in files:
            path = os.path.join(d, ".clang-tidy")
            h.update(os.path.relpath(path, root).encode() + b"\0" + open(path, "rb").read())
    return h.hexdigest()


def unit_key(entry, root, clang, config):
    """The cache key of one unit, or None when clang cannot preprocess it (then tidy runs)."""
    args = without_pch(unit_args(entry))
    pre = subprocess.run([clang, "-E", "-C", "-P", "-w"] + args, cwd=entry["directory"],
                         capture_output=True)
    if pre.returncode != 0:
        return None
    h = hashlib.sha256(config.encode())
    for part in (entry["file"], " ".join(args), entry["directory"]):
        h.update(part.replace(root, PLACEHOLDER).encode() + b"\0")
    h.update(pre.stdout.replace(root.encode(), PLACEHOLDER.encode()))
    return h.hexdigest()


def analyse(entry, db_dir, clang_tidy):
    p = subprocess.run([clang_tidy, "-quiet", "-p", db_dir, entry["file"]], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def has_finding(output):
    return ": warning: " in output or ": error: " in output


def one_unit(entry, a, config):
    """(output, status, from the cache)."""
    key = unit_key(entry, a.root, a.clang, config)
    path = os.path.join(a.cache, key[:2], key + ".json") if key else None
    if path and os.path.exists(path):
        try:
            saved = json.load(open(path))
            return saved["output"].replace(PLACEHOLDER, a.root), saved["status"], True
        except (OSError, ValueError, KeyError):
            pass  # a damaged entry is analysed again and rewritten
    status, output = analyse(entry, a.db, a.clang_tidy)
    # A run that failed without a finding (a crash, a kill for memory) is not kept: it may not
    # happen again, and a cached failure would outlive its cause. Nor is one with an error (the
    # unit did not compile): with a PCH its cause may lie outside the key (a PCH older than its
    # headers), and a failing lint is run again anyway.
    if path and (status == 0 or has_finding(output)) and ": error: " not in output:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".%d.tmp" % os.getpid()
        json.dump({"status": status, "output": output.replace(a.root, PLACEHOLDER)}, open(tmp, "w"))
        os.replace(tmp, path)  # atomic: a concurrent reader sees a whole entry or none
    return output, status, False


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True, help="directory of compile_commands.json")
    ap.add_argument("--root", required=True, help="the clone's root (replaced in keys and outputs)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--clang-tidy", required=True)
    ap.add_argument("--clang", required=True, help="clang++ of the same LLVM, for the preprocessing")
    ap.add_argument("--cache", required=True)
    a = ap.parse_args(argv)
    a.root = os.path.realpath(a.root)
    entries = json.load(open(os.path.join(a.db, "compile_commands.json")))
    config = config_digest(a.root, a.clang_tidy)
    hits = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for output, status, hit in pool.map(lambda e: one_unit(e, a, config), entries):
            sys.stdout.write(output)
            hits += hit
            # clang-tidy exits non-zero on findings too; the lint counts those from the text.
            failed += status != 0 and not has_finding(output)
    print("tidy_cached: %d units, %d from the cache (%s), %d analysed"
          % (len(entries), hits, a.cache, len(entries) - hits))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
