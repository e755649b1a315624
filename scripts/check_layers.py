#!/usr/bin/env python3
"""Checks that a part's include graph goes only downwards through its rooms.

Parts (PARTS): the runtime (rooms: folders of runtime/src, public headers in the folders of
their rooms under runtime/include/accelerate, data file runtime/layers.txt), the rewriters
(rooms: folders of rewriters/, the library's interface in the rooms' folders under
rewriters/include/accel/rewriters, data file rewriters/layers.txt) and the launcher (rooms:
folders of launcher/, no public headers, data file launcher/layers.txt);
docs/dev/architecture.md. A part's rooms, lowest first, and the few allowed upward includes
(each with its reason) are declared in its data file. A file's room is its folder, read the
same way for sources and public headers: src/data/x.cpp and include/accelerate/data/x.h are
both in the room data. Files directly in the public folder (an umbrella header, the flat
names kept for old programs) belong to the room a `top ROOM` line names, normally the highest.

Fails (exit 1) and prints file:line -> target with both rooms for:
  - an include of a file in a higher room (unless declared as an exception),
  - an include of a room's private header from another room,
  - a cycle of includes between files,
  - a source file or public header that belongs to no declared room (a public header in a
    folder that is not a room, or directly in the public folder without a `top` room),
  - an include of a public path that names no file (a forwarder left pointing at a header
    that moved),
  - a data-file line that names a room, header or exception that does not exist.
Declared exceptions are printed on every run, so they stay in sight.

Usage: check_layers.py [--root DIR] [--part runtime|rewriters|launcher] [--layers FILE]
"""

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = (".h", ".cpp", ".h.in")


@dataclass(frozen=True)
class Part:
    src: str      # the rooms' folders are under it
    include: str  # the public headers (skipped when under src)
    prefix: str   # how sources include a public header: <PREFIX/name.h>
    layers: str   # the data file


PARTS = {
    "runtime": Part("runtime/src", "runtime/include/accelerate", "accelerate/", "runtime/layers.txt"),
    "rewriters": Part("rewriters", "rewriters/include/accel/rewriters", "accel/rewriters/", "rewriters/layers.txt"),
    # An executable: no public headers (the include folder does not exist).
    "launcher": Part("launcher", "launcher/include", "accelerate/launcher/", "launcher/layers.txt"),
}


class Layers:
    """The parsed data file: rooms in order, the top room, exceptions, private headers."""

    def __init__(self):
        self.rank = {}        # room -> position, 0 = lowest
        self.top = None       # the room of the files directly in the public folder
        self.files = {}       # file directly in the part's src -> room (a flat tree only)
        self.allowed = {}     # (from file, to file) -> reason
        self.private = set()  # files only their own room may include
        self.errors = []


def strip_comment(line):
    text, _, comment = line.partition("#")
    return text.split(), comment.strip()


def parse_layers(path):
    layers = Layers()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        words, comment = strip_comment(line)
        if not words:
            continue
        where = f"{path}:{number}"
        kind, args = words[0], words[1:]
        if kind == "room" and len(args) == 1:
            layers.rank[args[0]] = len(layers.rank)
        elif kind == "top" and len(args) == 1:
            layers.top = args[0]
        elif kind == "file" and len(args) == 2:
            layers.files[args[0]] = args[1]
        elif kind == "private" and len(args) == 1:
            layers.private.add(args[0])
        elif kind == "allow" and len(args) == 3 and args[1] == "->":
            if not comment:
                layers.errors.append(f"{where}: an exception needs its reason as a comment")
            layers.allowed[(args[0], args[2])] = comment
        else:
            layers.errors.append(f"{where}: cannot read '{line.strip()}'")
    for name, room in list(layers.files.items()) + ([("top", layers.top)] if layers.top else []):
        if room not in layers.rank:
            layers.errors.append(f"{path}: '{name}' is in room '{room}', which is not declared")
    return layers


class Tree:
    """The runtime's files, each with its room and its includes of other runtime files."""

    def __init__(self, root, layers, part):
        self.part = part
        self.src = root / part.src
        self.include = root / part.include
        self.layers = layers
        self.room = {}      # key -> room; keys: "src/<path>" and "include/<path>"
        self.includes = {}  # key -> [(line, target key)]
        self.errors = []

    def key_of_public(self, name):
        return "include/" + name

    def scan(self):
        for path in sorted(self.src.rglob("*")):
            if path.suffix in (".h", ".cpp") and self.include not in path.parents:
                self.add_source(path)
        for path in sorted(self.include.rglob("*")):
            if path.is_file() and path.name.endswith(SOURCE_SUFFIXES):
                self.add_public(path)
        for key in self.includes:
            # A public path that names no file: a flat-name forwarder (or any include) left
            # pointing at a header that moved would otherwise be skipped without a word.
            for n, t in self.includes[key]:
                if t.startswith("include/") and t not in self.room:
                    self.errors.append(f"{display(key, self.part)}:{n}: includes <{self.part.prefix}{short(t)}>, "
                                       f"which is no file of {self.part.include}")
            self.includes[key] = [(n, t) for n, t in self.includes[key] if t in self.room]

    def add_source(self, path):
        rel = path.relative_to(self.src)
        key = "src/" + rel.as_posix()
        if len(rel.parts) > 1:
            room = rel.parts[0]
        else:
            room = self.layers.files.get(rel.name)
        if room is None:
            self.errors.append(f"{self.part.src}/{rel}: not in a room's folder ({self.part.layers})")
        elif room not in self.layers.rank:
            self.errors.append(f"{self.part.src}/{rel}: its folder '{room}' is not a declared room "
                               f"({self.part.layers})")
        self.room[key] = room
        self.includes[key] = list(self.read_includes(path, rel.parent))

    def add_public(self, path):
        name = path.relative_to(self.include).as_posix()
        if name.endswith(".h.in"):
            name = name[: -len(".in")]  # configured into the build tree under its .h name
        key = self.key_of_public(name)
        folder, _, rest = name.partition("/")
        room = folder if rest else self.layers.top
        if rest and folder not in self.layers.rank:
            self.errors.append(f"{self.part.include}/{name}: its folder '{folder}' is not a declared "
                               f"room ({self.part.layers})")
        elif room is None:
            self.errors.append(f"{self.part.include}/{name}: directly in the public folder, whose "
                               f"files belong to no room ({self.part.layers}: top ROOM); put it in "
                               f"its room's folder")
        self.room[key] = room
        self.includes[key] = list(self.read_includes(path, None))

    def read_includes(self, path, folder):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = self.resolve(match.group(1), match.group(2), folder)
            if target:
                yield number, target

    def resolve(self, bracket, name, folder):
        if name.startswith(self.part.prefix):
            return self.key_of_public(name[len(self.part.prefix):])
        if bracket != '"':
            return None
        # "x.h" is looked up beside the including file first, then from the part's src.
        for base in ([folder] if folder is not None else []) + [Path(".")]:
            candidate = (self.src / base / name)
            if candidate.is_file():
                return "src/" + candidate.resolve().relative_to(self.src.resolve()).as_posix()
        return None


def display(key, part):
    area, _, rest = key.partition("/")
    return (part.src if area == "src" else part.include) + "/" + rest


def short(key):
    return key.partition("/")[2]


def check_edges(tree):
    """Upward and private includes; returns (offences, exceptions used)."""
    layers, offences, used = tree.layers, [], []
    for key, targets in tree.includes.items():
        here = tree.room[key]
        for number, target in targets:
            there = tree.room[target]
            if here not in layers.rank or there not in layers.rank:
                continue  # already reported as undeclared
            where = f"{display(key, tree.part)}:{number} -> {display(target, tree.part)}"
            if short(target) in layers.private and there != here:
                offences.append(f"{where}: private to room '{there}', included from room '{here}'")
            elif layers.rank[there] > layers.rank[here]:
                reason = layers.allowed.get((short(key), short(target)))
                if reason is None:
                    offences.append(f"{where}: room '{here}' (layer {layers.rank[here]}) includes "
                                    f"the higher room '{there}' (layer {layers.rank[there]})")
                else:
                    used.append(((short(key), short(target)), f"{where} ({here} -> {there}): {reason}"))
    return offences, used


def find_cycles(tree):
    """Each include cycle between files once, as a list of file keys."""
    state, stack, cycles = {}, [], []

    def visit(key):
        state[key] = "open"
        stack.append(key)
        for _, target in tree.includes.get(key, []):
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[key] = "done"

    for key in sorted(tree.includes):
        if key not in state:
            visit(key)
    return cycles


def stale_exceptions(tree, used):
    """Exceptions that no longer match an upward include: they would hide a future one."""
    seen = {pair for pair, _ in used}
    return [f"{tree.part.layers}: exception {source} -> {target} matches no upward include"
            for source, target in tree.layers.allowed if (source, target) not in seen]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root_default = Path(__file__).resolve().parent.parent
    parser.add_argument("--root", type=Path, default=root_default)
    parser.add_argument("--part", choices=sorted(PARTS), default="runtime")
    parser.add_argument("--layers", type=Path, default=None)
    args = parser.parse_args()
    part = PARTS[args.part]
    layers = parse_layers(args.layers or args.root / part.layers)
    tree = Tree(args.root, layers, part)
    tree.scan()
    offences, used = check_edges(tree)
    cycles = [" -> ".join(display(k, part) for k in c) for c in find_cycles(tree)]
    problems = layers.errors + tree.errors + offences + [f"include cycle: {c}" for c in cycles]
    problems += stale_exceptions(tree, used)
    for _, line in used:
        print(f"exception: {line}")
    for line in problems:
        print(f"error: {line}")
    files = len(tree.room)
    edges = sum(len(t) for t in tree.includes.values())
    print(f"{args.part}: {files} files, {edges} includes between them, {len(layers.rank)} rooms; "
          f"{len(offences)} upward or private includes, {len(cycles)} cycles, "
          f"{len(used)} declared exceptions; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
