#!/usr/bin/env python3
"""Counts and names in the docs that go stale when a rule is added (issue 50 item 3).

accel-migrate's rules register themselves, one object at the end of each rule file
(rewriters/engine/RegisterRule.h), and the clang-tidy module offers one check per file rule
(tidy/AccelerateTidyModule.cpp): nothing makes a writer revisit "15 file rules" in the
README when a sixteenth file appears, and the README and docs/clang-tidy.md had drifted
that way. This test reads the counts and ids from the sources' text (not from a built
binary: it runs before any build, and in under a second) and fails when a doc states
another count or leaves out an id where it lists them.
ctest test ci.report_parsers; by hand: cd test/ci && python3 -m unittest -v test_doc_counts
"""
import glob
import os
import re
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RULE_ID = r"accelerate-[a-z][a-z0-9-]*[a-z0-9]"  # not the glob `accelerate-*`

# Where each doc states a count, as it states it. Every claim must be found, so that a
# reworded sentence is taught here instead of going unchecked; every other occurrence of
# the same phrase in the same doc must agree too. The kinds are Sources' attributes.
CLAIMS = [
    ("README.md", "file_rules", r"([\w-]+) file rules\b"),
    ("README.md", "rewriting", r"([\w-]+) (?:rules )?that rewrite\b"),
    ("README.md", "warning_only", r"([\w-]+) warning-only\b"),
    ("README.md", "project_rules", r"([\w-]+) project-mode rules\b"),
    ("README.md", "checks", r"([\w-]+) checks\b"),
    ("docs/status.md", "file_rules", r"([\w-]+) file rules\b"),
    ("docs/status.md", "rewriting", r"([\w-]+) (?:rules )?that rewrite\b"),
    ("docs/status.md", "warning_only", r"([\w-]+) warning-only\b"),
    ("docs/status.md", "project_rules", r"([\w-]+) project-mode rules\b"),
    ("docs/clang-tidy.md", "checks", r"([\w-]+) checks\b"),
    ("docs/clang-tidy.md", "rewriting", r"([\w-]+) (?:rules )?that rewrite\b"),
    ("docs/clang-tidy.md", "warning_only", r"([\w-]+) warning-only\b"),
    ("docs/clang-tidy.md", "project_rules", r"([\w-]+) project-mode rules\b"),
    ("docs/rules.md", "project_rules", r"([\w-]+) rules need the whole program\b"),
]

SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
         "fourteen fifteen sixteen seventeen eighteen nineteen").split()
TENS = {"twenty": 20, "thirty": 30, "forty": 40}


def number(word):
    """The value of '19', 'nineteen' or 'twenty-one'; None for a word that is no number
    ('other file rules'), which is then not a count."""
    w = word.lower()
    if w.isdigit():
        return int(w)
    if w in SMALL:
        return SMALL.index(w)
    tens, _, unit = w.partition("-")
    if tens in TENS and (not unit or unit in SMALL[1:10]):
        return TENS[tens] + (SMALL.index(unit) if unit else 0)
    return None


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def code(text):
    """C++ text without whole-line comments, where a registration shown as an example (as
    RegisterRule.h has one) would count as a rule. Comments after code stay: string
    literals in the rules contain '//'."""
    return re.sub(r"(?m)^\s*//.*$", "", text)


def rewriter_sources():
    """The rule files' text: rules register from .cpp files only (RegisterRule.h)."""
    return {p: code(read(p)) for p in
            sorted(os.path.relpath(f, ROOT) for f in glob.glob(os.path.join(ROOT, "rewriters", "*", "*.cpp")))}


def rule_infos(sources):
    """{RuleInfo variable: id} of every `const RuleInfo NameInfo = {"accelerate-...",`."""
    infos = {}
    for text in sources.values():
        for name, rid in re.findall(r'const\s+RuleInfo\s+(\w+)\s*=\s*\{\s*"([^"]+)"', text):
            infos[name] = rid
    return infos


def registrations(sources, kind):
    """[(info variable, run function)] of each `static const KIND NameEntry({Info, run,`."""
    pattern = r"static\s+const\s+%s\s+\w+\s*\(\s*\{\s*(\w+)\s*,\s*(\w+)\s*," % kind
    return [m for text in sources.values() for m in re.findall(pattern, text)]


def tidy_check_ids(file_rule_ids):
    """The ids the clang-tidy module registers: a loop over fileRuleInfos() registers every
    file rule's id; string literals register themselves. Empty when neither form is there."""
    text = code(read("tidy/AccelerateTidyModule.cpp"))
    ids = set(re.findall(r'registerCheck<\w+>\(\s*"([^"]+)"\s*\)', text))
    loop = (r"for\s*\(\s*const\s+RuleInfo\s*&\s*(\w+)\s*:\s*fileRuleInfos\(\)\s*\)\s*"
            r"Factories\.registerCheck<\w+>\(\s*\1\.Id\s*\)")
    if re.search(loop, text):
        ids |= set(file_rule_ids)
    return ids


class Sources:
    """What the sources say: the ids of file rules (those that rewrite and the warning-only
    ones, whose run function is nullptr), project rules and clang-tidy checks."""

    def __init__(self):
        sources = rewriter_sources()
        infos = rule_infos(sources)
        files = registrations(sources, "RegisterRule")
        projects = registrations(sources, "RegisterProjectRule")
        self.unresolved = [i for i, _ in files + projects if i not in infos]
        self.file_ids = [infos.get(i, i) for i, _ in files]
        self.warning_ids = [infos.get(i, i) for i, run in files if run == "nullptr"]
        self.project_ids = [infos.get(i, i) for i, _ in projects]
        self.check_ids = tidy_check_ids(self.file_ids)

    def count(self, kind):
        return {"file_rules": len(self.file_ids), "warning_only": len(self.warning_ids),
                "rewriting": len(self.file_ids) - len(self.warning_ids),
                "project_rules": len(self.project_ids), "checks": len(self.check_ids)}[kind]


SOURCES = Sources()


def section(text, heading):
    """The text under a markdown heading, up to the next heading of its level or higher."""
    level = len(heading) - len(heading.lstrip("#"))
    m = re.search(r"(?m)^%s\s*$" % re.escape(heading), text)
    if not m:
        return None
    end = re.search(r"(?m)^#{1,%d} " % level, text[m.end():])
    return text[m.end():m.end() + end.start()] if end else text[m.end():]


def stated_counts(text, pattern):
    """(value, line number, phrase) of each numeric match of pattern in text."""
    out = []
    for m in re.finditer(pattern, text, re.IGNORECASE):
        value = number(m.group(1))
        if value is not None:
            out.append((value, text.count("\n", 0, m.start()) + 1, m.group(0)))
    return out


class TheSourcesAreRead(unittest.TestCase):
    """The counts below are only as good as the reading of the sources: a registration
    written in a new form would make every doc 'agree' with a count of zero."""

    def test_rules_are_found(self):
        self.assertGreater(len(SOURCES.file_ids), 0, "no RegisterRule object in rewriters/*/*.cpp")
        self.assertGreater(len(SOURCES.project_ids), 0, "no RegisterProjectRule object in rewriters/*/*.cpp")

    def test_every_registration_names_a_rule_info_with_an_id(self):
        self.assertEqual(SOURCES.unresolved, [], "registrations whose RuleInfo was not found")
        for rid in SOURCES.file_ids + SOURCES.project_ids:
            self.assertRegex(rid, "^%s$" % RULE_ID)

    def test_ids_are_unique(self):
        ids = SOURCES.file_ids + SOURCES.project_ids
        self.assertEqual(len(ids), len(set(ids)), "an id registered twice")

    def test_the_tidy_module_registers_checks(self):
        self.assertTrue(SOURCES.check_ids, "tidy/AccelerateTidyModule.cpp: no registerCheck form recognised")


class StatedCounts(unittest.TestCase):
    def test_each_claim_is_present_and_right(self):
        for doc, kind, pattern in CLAIMS:
            with self.subTest(doc=doc, kind=kind):
                found = stated_counts(read(doc), pattern)
                self.assertTrue(found, "%s states no count matching /%s/ (reworded? update CLAIMS "
                                       "in test/ci/test_doc_counts.py)" % (doc, pattern))
                for value, line, phrase in found:
                    self.assertEqual(value, SOURCES.count(kind), "%s:%d says '%s'; the sources have %d"
                                     % (doc, line, phrase, SOURCES.count(kind)))


class ListedNames(unittest.TestCase):
    def assert_lists(self, where, text, wanted, allowed):
        named = set(re.findall(RULE_ID, text))
        self.assertEqual(sorted(set(wanted) - named), [], "%s leaves these out" % where)
        self.assertEqual(sorted(named - set(allowed)), [], "%s names what the sources lack" % where)

    def test_clang_tidy_md_lists_every_check(self):
        checks = section(read("docs/clang-tidy.md"), "## Checks")
        self.assertIsNotNone(checks, "docs/clang-tidy.md has no '## Checks' section")
        self.assert_lists("docs/clang-tidy.md '## Checks'", checks, SOURCES.check_ids, SOURCES.check_ids)

    def test_rules_md_has_a_section_per_rule(self):
        headings = "\n".join(re.findall(r"(?m)^#{2,3} (%s)\b" % RULE_ID, read("docs/rules.md")))
        every = SOURCES.file_ids + SOURCES.project_ids
        self.assert_lists("docs/rules.md's headings", headings, every, every)

    def test_rules_md_table_lists_every_rule(self):
        table = section(read("docs/rules.md"), "## The rule table")
        self.assertIsNotNone(table, "docs/rules.md has no '## The rule table' section")
        rows = "\n".join(re.findall(r"(?m)^\|[^|]*\| `(%s)` \|" % RULE_ID, table))
        every = SOURCES.file_ids + SOURCES.project_ids
        self.assert_lists("docs/rules.md's rule table", rows, every, every)


if __name__ == "__main__":
    unittest.main()
