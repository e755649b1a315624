#!/usr/bin/env python3
"""The Accelerator's public API and the docs cannot drift apart (issue 31 item 6).

Every public member function of accelerate::Accelerator (runtime/include/accelerate/
accelerator/accelerator.h, from `class Accelerator` to its `private:`) must be named in the user docs
(docs/*.md, as `name(` or `` `name` ``), and docs/comparison.md must not list as "Not available"
a name the class has. Exits 1 naming each offence; Python's standard library only.

    python3 scripts/check_api_docs.py [--root DIR]
"""
import argparse
import glob
import os
import re
import sys

# Members that are plumbing for the header's own templates or for other runtime parts
# (docs/runtime-api.md, "Internals for the other runtime parts"), not API to document by name.
INTERNAL = {"Accelerator", "operator", "step_optimizer", "module_ref", "temp_path_for", "commit_temp_file",
            "save_full_model", "module_state_dict", "save_module", "load_module",
            "prepare_sharded_model", "clip_sharded_grad_norm", "sharded_grad_targets"}


def public_members(header):
    text = open(header).read()
    start = text.index("class Accelerator {")
    body = text[start:]
    body = body[:body.index("\n private:")]
    body = re.sub(r"//[^\n]*", "", body)
    # Keep the class level only: inline bodies' statements are not declarations.
    level, kept = 0, []
    for c in body:
        if c == "{":
            level += 1
            kept.append(c if level == 1 else "")
        elif c == "}":
            level -= 1
            kept.append(";" if level == 1 else "")
        else:
            kept.append(c if level <= 1 else "")
    body = "".join(kept)
    names = set()
    # A declaration or definition: return type, then name, then '(' (templates included).
    for m in re.finditer(r"^\s+(?:template\s*<[^>]*>\s*)?(?:static\s+|virtual\s+|explicit\s+|inline\s+)*"
                         r"[\w:<>, \t\*&]+?[ \t\*&](\w+)\s*\(", body, re.M):
        names.add(m.group(1))
    return sorted(n for n in names if n not in INTERNAL and not n.startswith("_"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    a = ap.parse_args()
    header = os.path.join(a.root, "runtime/include/accelerate/accelerator/accelerator.h")
    names = public_members(header)
    docs = {p: open(p).read() for p in glob.glob(os.path.join(a.root, "docs", "*.md"))}
    problems = []
    for name in names:
        pattern = re.compile(r"(\b%s\(|`%s`)" % (re.escape(name), re.escape(name)))
        if not any(pattern.search(t) for t in docs.values()):
            problems.append(f"Accelerator::{name} is public (accelerator.h) but no page of docs/ names it "
                            f"(write `{name}(...)` where it belongs, e.g. docs/runtime-api.md)")
    comparison = docs.get(os.path.join(a.root, "docs", "comparison.md"), "")
    missing = re.search(r"\*\*Not available:\*\*(.*?)(\n\n|$)", comparison, re.S)
    if missing:
        for name in names:
            if re.search(r"`%s`" % re.escape(name), missing.group(1)):
                problems.append(f"docs/comparison.md lists `{name}` as not available, but Accelerator::{name} exists")
    for p in problems:
        print("error: " + p)
    print(f"{len(names)} public Accelerator members, {len(docs)} pages of docs/; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
