#!/usr/bin/env python3
"""Adds a migration rule: its file (which registers it in the rule table), its lit test and
its docs section. No other file is written.

    python3 scripts/new_rule.py NAME [--summary TEXT]
    python3 scripts/new_rule.py --update-docs PATH/TO/accel-migrate

NAME is lower-case words joined by '-' (`zero-grad` gives the id `accelerate-zero-grad`,
rewriters/rules/ZeroGradRule.cpp, test/lit/zero_grad.cpp). The rule starts as a skeleton that
recognises calls to a function named in its file and warns; build, make the lit test
describe what the rule must do, then write the rule. --update-docs regenerates the rule
table in docs/rules.md from the built tool (test/lit/rule_table.test compares them).
Nothing is overwritten: an existing id or file stops the script before it writes. The
new rule's rank (its place among rules free to run at the same time) is the highest rank
registered so far plus 10: it runs after every existing rule it does not depend on.
See docs/dev/adding-a-rule.md.
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

RULE_CPP = """\
// {id}: {summary}.
// TODO: say what the rule rewrites and why a distributed program needs it.

#include "analyses/RuleSupport.h"

using namespace clang;

namespace accel {{

const RuleInfo {camel}Info = {{
    "{id}", "{summary}",
    "TODO: the explanation written into warnings and comments"}};

void run{camel}(MigrationContext& Ctx, const RuleInfo& Info) {{
  for (const CallExpr* Call : userCalls(Ctx)) {{
    // TODO: recognise the idiom (a type or declaration test, not text).
    if (calleeName(Call) != "{placeholder}")
      continue;
    // From here the idiom is recognised: the rule must commit a change or warn.
    MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
    Ctx.warn(Call->getBeginLoc(), Info.Id, "TODO: rewrite this, or say why it cannot be");
  }}
}}

// The rule's entry in the rule table (RegisterRule.h): the analyses it needs and provides,
// and its rank among the rules free to run at the same time.
static const RegisterRule {camel}RuleEntry({{
    {camel}Info,
    run{camel},
    /*Needs=*/{{}},
    /*Provides=*/{{AnalysisId::AcceleratorRequests}},
    /*Rank=*/{rank},
}});

}}  // namespace accel
"""

LIT_TEST = """\
// {id}: {summary}.
// RUN: %check-rule
#include <torch/torch.h>

void {placeholder}();

int main() {{
  {placeholder}();
  // DIAG: {test_name}.cpp:[[@LINE-1]]:3: warning: TODO: rewrite this, or say why it cannot be [{id}]
  // CHECK: {placeholder}();
  return 0;
}}
"""

DOCS = """
## {id}
{summary}. TODO: what it rewrites, with a before/after example, and what it leaves with a
warning.
"""


def fail(msg):
    print(f"new_rule: {msg}", file=sys.stderr)
    sys.exit(2)


def update_docs(tool):
    table = subprocess.run([tool, "--rule-table"], check=True, capture_output=True,
                           text=True).stdout
    path = ROOT / "docs" / "rules.md"
    text = path.read_text()
    pattern = re.compile(r"(<!-- rule-table begin[^\n]*-->\n).*?(<!-- rule-table end -->)", re.S)
    if not pattern.search(text):
        fail(f"no rule-table markers in {path}")
    path.write_text(pattern.sub(lambda m: m.group(1) + table + m.group(2), text))
    print(f"new_rule: updated the rule table in {path.relative_to(ROOT)}")


RANK = re.compile(r"static\s+const\s+RegisterRule\s+\w+\s*\([^;]*?/\*Rank=\*/\s*(\d+)", re.S)


def next_rank(sources):
    """10 above the highest rank the per-file rules register (read, never rewritten)."""
    ranks = [int(r) for text in sources for r in RANK.findall(text)]
    return max(ranks, default=0) + 10


def add_docs_section(doc_text, section):
    # Per-file rules are documented before the project rules' section.
    marker = "\n---\n\n## Project rules"
    if marker not in doc_text:
        return doc_text.rstrip("\n") + "\n" + section
    at = doc_text.index(marker)
    return doc_text[:at].rstrip("\n") + "\n" + section.rstrip("\n") + "\n" + doc_text[at:]


def add_rule(name, summary):
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        fail(f"'{name}': use lower-case words joined by '-', e.g. zero-grad")
    rid = "accelerate-" + name
    camel = "".join(w.capitalize() for w in name.split("-"))
    test_name = name.replace("-", "_")
    files = {
        ROOT / "rewriters" / "rules" / f"{camel}Rule.cpp": RULE_CPP,
        ROOT / "test" / "lit" / f"{test_name}.cpp": LIT_TEST,
    }
    docs = ROOT / "docs" / "rules.md"
    doc_text = docs.read_text()
    sources = [p.read_text() for p in sorted((ROOT / "rewriters").glob("*/*.cpp"))]
    # Every check before the first write.
    for f in files:
        if f.exists():
            fail(f"{f.relative_to(ROOT)} exists already; nothing written")
    if f'"{rid}"' in "".join(sources):
        fail(f"the id {rid} exists already; nothing written")

    fields = dict(id=rid, camel=camel, summary=summary, test_name=test_name,
                  placeholder=test_name + "_idiom", rank=next_rank(sources))
    for f, template in files.items():
        f.write_text(template.format(**fields))
    # The rule file in the project's style (scripts/lint.sh checks it); the lit test is an
    # input program and keeps its layout.
    fmt = shutil.which("clang-format-16") or shutil.which("clang-format")
    rule_files = [str(f) for f in files if f.parent.name == "rules"]
    if fmt and rule_files:
        subprocess.run([fmt, "-i"] + rule_files, check=False)
    docs.write_text(add_docs_section(doc_text, DOCS.format(**fields)))
    for f in list(files) + [docs]:
        print(f"new_rule: wrote {f.relative_to(ROOT)}")
    print(f"""new_rule: next steps
  1. cmake --build --preset ci --target accel-migrate   (the rule file is picked up by the glob)
  2. python3 scripts/new_rule.py --update-docs build/tool/accel-migrate
  3. describe the idiom in test/lit/{test_name}.cpp, then write rewriters/rules/{camel}Rule.cpp;
     declare at its end the analyses it needs and provides
  4. python3 /usr/lib/llvm-16/build/utils/lit/lit.py -sv build/test/lit --filter {test_name}""")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", nargs="?")
    ap.add_argument("--summary", default="TODO: one line")
    ap.add_argument("--update-docs", metavar="ACCEL_MIGRATE")
    a = ap.parse_args()
    if a.update_docs:
        update_docs(a.update_docs)
    elif a.name:
        add_rule(a.name, a.summary)
    else:
        ap.error("give a rule NAME or --update-docs")


if __name__ == "__main__":
    main()
