#!/usr/bin/env python3
"""Writes a compile_commands.json for the toy project in Inputs/project (absolute paths of
this test run); the project tests run it into a build directory inside the copied project,
which project mode must skip.

  make_project_db.py SRC_ROOT BUILD_DIR "FLAGS" FILE...   (FILE relative to SRC_ROOT)
A file starting with '@' is written relative to the build directory, as some generators do.
FILE=TARGET writes the object file as CMake does for target TARGET
(`-o <dir>/CMakeFiles/TARGET.dir/<file>.o`): project mode reads the target from it.
"""
import json
import os
import sys

src, build, flags, files = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]
entries = []
for f in files:
    f, _, target = f.partition("=")
    obj = os.path.basename(f) + ".o"
    if target:
        obj = os.path.join(os.path.dirname(f.lstrip("@")), "CMakeFiles", target + ".dir",
                           os.path.basename(f) + ".o")
    rel = f.startswith("@")
    path = os.path.join(src, f.lstrip("@"))
    name = os.path.relpath(path, build) if rel else path
    entries.append({
        "directory": build,
        "arguments": ["/usr/bin/clang++", "-std=c++17"] + flags +
                     ["-I" + os.path.join(src, "include"), "-o", obj,
                      "-c", name],
        "file": name,
    })
os.makedirs(build, exist_ok=True)
with open(os.path.join(build, "compile_commands.json"), "w") as out:
    json.dump(entries, out, indent=1)
