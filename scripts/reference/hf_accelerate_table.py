#!/usr/bin/env python3
"""Writes the table of Hugging Face Accelerate's `accelerate launch` flags, config-file keys,
distributed types and commands that the launcher must handle (issue 50), read from the
reference's own source at a release tag:

    python3 scripts/reference/hf_accelerate_table.py --repo /work/.mirror/huggingface+accelerate/repo \
        --tag v1.14.0 --older v0.20.0 v0.25.0 v0.30.0 v1.0.0 v1.2.0 v1.5.0 v1.10.0 \
        > test/expected/hf-accelerate.txt

The flags are the `add_argument` calls of launch.py (read with Python's ast, not run), the
keys the fields of config_args.py's BaseConfig and ClusterConfig, the distributed types the
members of DistributedType, the commands those accelerate_cli.py registers. Entries only the
`--older` tags have are written as `older-flag` / `older-key`: configs and command lines
written by those versions must keep working. The table is read by test/launcher's
ReferenceTableTests; this script needs a clone of the reference and is run by hand when a
new release is adopted, not by the test command (nothing is downloaded at test time).
"""
import argparse
import ast
import re
import subprocess
import sys


def show(repo, tag, path):
    r = subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def launch_flags(source):
    """{name: 'switch' | 'value'} of launch.py's parser, without help and positionals."""
    flags = {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        longs = [n[2:] for n in names if n.startswith("--")]
        if not longs or longs[0] == "help":
            continue
        action = {k.arg: k.value for k in node.keywords}.get("action")
        action = action.value if isinstance(action, ast.Constant) else None
        flags[longs[0].replace("-", "_")] = "switch" if action in ("store_true", "store_false") else "value"
    return flags


def config_keys(source):
    """Field names of the dataclasses BaseConfig and ClusterConfig."""
    keys = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name in ("BaseConfig", "ClusterConfig"):
            keys.update(s.target.id for s in node.body if isinstance(s, ast.AnnAssign))
    return keys


def distributed_types(source):
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "DistributedType":
            return {s.targets[0].id for s in node.body if isinstance(s, ast.Assign)}
    return set()


def commands(repo, tag):
    cli = show(repo, tag, "src/accelerate/commands/accelerate_cli.py") or ""
    names = set()
    for module in re.findall(r"from accelerate\.commands\.(\w+) import \w+_parser", cli):
        text = show(repo, tag, f"src/accelerate/commands/{module}.py")
        if text is None:
            text = show(repo, tag, f"src/accelerate/commands/{module}/__init__.py") or ""
        names.update(re.findall(r'add_parser\(\s*"([\w-]+)"', text))
    config = show(repo, tag, "src/accelerate/commands/config/update.py") or ""
    if 'add_parser("update"' in config:
        names.add("config update")
    return names


def read_release(repo, tag):
    launch = show(repo, tag, "src/accelerate/commands/launch.py")
    config = show(repo, tag, "src/accelerate/commands/config/config_args.py")
    if launch is None or config is None:
        sys.exit(f"hf_accelerate_table: {tag}: launch.py or config_args.py not found in {repo}")
    types = distributed_types(show(repo, tag, "src/accelerate/utils/dataclasses.py") or "")
    return launch_flags(launch), config_keys(config), types


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="a clone of huggingface/accelerate")
    ap.add_argument("--tag", required=True, help="the release the table describes")
    ap.add_argument("--older", nargs="*", default=[], help="older releases whose spellings must keep working")
    args = ap.parse_args()
    flags, keys, types = read_release(args.repo, args.tag)
    older_flags, older_keys = {}, set()
    for tag in args.older:
        f, k, _ = read_release(args.repo, tag)
        older_flags.update({n: a for n, a in f.items() if n not in flags})
        older_keys |= k - keys
    commit = subprocess.run(["git", "-C", args.repo, "rev-list", "-n1", args.tag], capture_output=True,
                            text=True).stdout.strip()
    print(f"# Hugging Face Accelerate {args.tag} ({commit}): what `accelerate launch` and the config file")
    print("# accept there. Written by scripts/reference/hf_accelerate_table.py; read by test/launcher's")
    print("# ReferenceTableTests, which fail when the launcher leaves an entry unhandled (issue 50).")
    print(f"# older-*: entries of {' '.join(args.older) or 'no older release'} that {args.tag} no longer has.")
    for name in sorted(commands(args.repo, args.tag)):
        print(f"command {name}")
    for name, arity in sorted(flags.items()):
        print(f"flag {name} {arity}")
    for name, arity in sorted(older_flags.items()):
        print(f"older-flag {name} {arity}")
    for name in sorted(keys):
        print(f"key {name}")
    for name in sorted(older_keys):
        print(f"older-key {name}")
    for name in sorted(types):
        print(f"distributed_type {name}")


if __name__ == "__main__":
    main()
