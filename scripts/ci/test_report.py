#!/usr/bin/env python3
"""What one platform's ctest run did, checked against the reviewed files in test/expected/.

ctest counts a skipped test as passed and a test family turned off at configure time as
nothing at all, so "39/39 passed" can hide missing coverage (issue 28, "No silent skips").
After the test stage, scripts/test.sh runs

  test_report.py check --platform P --build DIR [--regex R]

which reads DIR/ctest-junit.xml (every test's status, time and full output; DIR/ctest.log
when ctest wrote no JUnit file) and
  1. compares the registered ctest names with test/expected/tests-P.txt, so a family
     dropped because a dependency is missing shows up as missing names;
  2. checks that every selected test has a result (a ctest killed half-way does not pass);
  3. lists every skip by name with its reason: ctest's own (SKIP_RETURN_CODE, Disabled,
     Not Run), GoogleTest's GTEST_SKIP and DISABLED_ tests, Python unittest's skips and
     lit's UNSUPPORTED tests; a skip that test/expected/skips-P.txt does not allow fails;
  4. fails on any compiler or linker warning in DIR/build.log, the build's output that
     scripts/test.sh keeps (Debian 12 is compiled by GCC, Debian 13 by clang: each warns
     about what the other compiles silently);
  5. prints the 10 slowest tests.
It writes the same text to DIR/test-report.txt, which the outer run prints in its summary.

  test_report.py list --build DIR [--write FILE]   the registered names (--list-tests)

Exit status: 0 all checks passed, 1 a check failed, 2 bad usage or unreadable files.
Standard library only: it also runs inside the Debian 13 root.
"""
import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXPECTED_DIR = os.path.join(ROOT, "test", "expected")
REGENERATE = "bash scripts/test.sh --list-tests"


class Result:
    """One ctest test: status is passed, failed, skipped (SKIP_RETURN_CODE or
    SKIP_REGULAR_EXPRESSION), disabled or notrun."""

    def __init__(self, name, status, seconds, message="", output=""):
        self.name, self.status, self.seconds = name, status, seconds
        self.message, self.output = message, output


class Skip:
    """Something that did not run: a ctest test (ident = its name) or a case inside one
    (ident = 'ctest-name/inner-name')."""

    def __init__(self, ident, reason, kind):
        self.ident, self.reason, self.kind = ident, reason, kind


# ---- ctest's results -------------------------------------------------------------------

def parse_junit(path):
    """ctest --output-junit (3.21+): status run/fail/notrun/disabled, time, system-out.
    ctest escapes what XML cannot hold ([NON-XML-CHAR-0x1B]), so the file always parses."""
    results = []
    for case in ET.parse(path).getroot().iter("testcase"):
        status = {"run": "passed", "fail": "failed", "disabled": "disabled"}.get(case.get("status"), "notrun")
        message = ""
        for tag in ("skipped", "failure"):
            node = case.find(tag)
            if node is not None:
                message = node.get("message", "")
        if status == "notrun" and message.startswith("SKIP_"):
            status = "skipped"
        out = case.find("system-out")
        text = (out.text or "") if out is not None else ""
        results.append(Result(case.get("name"), status, float(case.get("time") or 0), message, text))
    return results


# "  12/39 Test  #5: e2e.fidelity ......   Passed  412.35 sec", "***Not Run (Disabled)", ...
_LOG_LINE = re.compile(r"Test\s+#\d+: (?P<name>\S+) \.*\s*(?P<status>.*?)\s+(?P<secs>[0-9.]+) sec\s*$")


def parse_ctest_log(text):
    """The fallback when there is no JUnit file (ctest killed, or too old): names, statuses
    and times from ctest's progress lines; no outputs, so no inner skips."""
    results = []
    for line in text.splitlines():
        m = _LOG_LINE.search(line)
        if not m:
            continue
        s = m.group("status")
        status = ("passed" if "Passed" in s else "disabled" if "Disabled" in s else
                  "skipped" if "Skipped" in s else "notrun" if "Not Run" in s else "failed")
        results.append(Result(m.group("name"), status, float(m.group("secs")), s.strip("* ")))
    return results


def load_results(build, junit=None, log=None):
    """(results, where they came from, problems)."""
    junit = junit or os.path.join(build, "ctest-junit.xml")
    log = log or os.path.join(build, "ctest.log")
    if os.path.exists(junit):
        try:
            return parse_junit(junit), junit, []
        except ET.ParseError as e:
            problem = "%s does not parse (%s)" % (junit, e)
    else:
        problem = "ctest wrote no %s" % junit
    if os.path.exists(log):
        with open(log, errors="replace") as f:
            return parse_ctest_log(f.read()), log, [problem + ": times and statuses from " + log +
                                                     ", skips inside tests NOT checked"]
    return [], None, [problem + " and no " + log + ": no test results"]


# ---- skips inside a test's output ------------------------------------------------------

_GTEST_RUN = re.compile(r"^\[ RUN      \] (\S+)")
_GTEST_SKIPPED = re.compile(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)")
_GTEST_DISABLED = re.compile(r"^\[ DISABLED \] (\S+)")
_GTEST_DISABLED_COUNT = re.compile(r"YOU HAVE (\d+) DISABLED TESTS?")


def gtest_skips(output):
    """GTEST_SKIP() << reason prints (GoogleTest 1.12, Debian 12)
         [ RUN      ] Suite.Name
         file.cpp:42: Skipped
         reason (maybe several lines, maybe none)
         [  SKIPPED ] Suite.Name (0 ms)
    The closing '[  SKIPPED ] Suite.Name' list has no '(N ms)' and is not counted twice.
    DISABLED_ tests never run: '[ DISABLED ] Suite.DISABLED_Name', and the closing
    'YOU HAVE N DISABLED TESTS' where a GoogleTest prints no names."""
    skips, reason = [], None
    for line in output.splitlines():
        skipped, disabled = _GTEST_SKIPPED.match(line), _GTEST_DISABLED.match(line)
        if _GTEST_RUN.match(line):
            reason = None
        elif line.endswith(": Skipped") and reason is None:
            reason = []
        elif skipped:
            text = next((r.strip() for r in reason or [] if r.strip()), "") or "(no reason given)"
            skips.append((skipped.group(1), text))
            reason = None
        elif disabled:
            skips.append((disabled.group(1), "a GoogleTest test named DISABLED_: never runs"))
        elif reason is not None:
            reason.append(line)
    named = sum(1 for _, why in skips if why.startswith("a GoogleTest test named DISABLED_"))
    counted = sum(int(m.group(1)) for m in _GTEST_DISABLED_COUNT.finditer(output))
    if counted > named:
        skips.append(("DISABLED_*", "%d GoogleTest test(s) named DISABLED_ never run" % (counted - named)))
    return skips


# 'test_mpirun (__main__.LaunchStylesTests.test_mpirun) ... skipped "no mpirun (...)"'
# (Python 3.11+ puts the method in the parentheses too; 3.10 and older only the class).
_UT_HEAD = re.compile(r"^(?P<method>\w+) \((?P<where>[\w.]+)\) \.\.\. ")
_UT_SKIP = re.compile(r"skipped (?P<reason>'.*'|\".*\")\s*$")
_UT_COUNT = re.compile(r"^(?:OK|FAILED) \(.*\bskipped=(\d+)")
_UT_DONE = re.compile(r"(?:^|\.\.\. )(?:ok|FAIL|ERROR|expected failure|unexpected success)\s*$")


def _unittest_name(method, where):
    where = where[len("__main__."):] if where.startswith("__main__.") else where
    return where if where.endswith("." + method) else where + "." + method


def unittest_skips(output):
    """Python unittest -v: one line per skipped test, the reason as Python's repr. The test's
    own output can land between ' ... ' and 'skipped' (stdout and stderr share ctest's
    pipe): a lone 'skipped ...' line belongs to the last test head seen. The closing
    'OK (skipped=N)' catches skips whose lines were not recognised."""
    skips, head, counted = [], None, 0
    for line in output.splitlines():
        m = _UT_HEAD.match(line)
        if m:
            head = _unittest_name(m.group("method"), m.group("where"))
        s = _UT_SKIP.search(line)
        if s and head:
            skips.append((head, s.group("reason")[1:-1]))
            head = None
        elif _UT_DONE.search(line):
            head = None  # that test ended: a later 'skipped' text is someone's output
        c = _UT_COUNT.match(line)
        if c:
            counted += int(c.group(1))
    if counted > len(skips):
        skips.append(("(unnamed)", "unittest reports skipped=%d, %d named above" % (counted, len(skips))))
    return skips


_LIT_GROUP = re.compile(r"^(Unsupported|Skipped|Excluded) Tests \((\d+)\):")
_LIT_COUNT = re.compile(r"^\s+(Unsupported|Skipped|Excluded)\s*: +(\d+)")


def _lit_requirement(name):
    """The REQUIRES/UNSUPPORTED line of a lit test in test/lit: its reason for not running."""
    path = os.path.join(ROOT, "test", "lit", name)
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip().lstrip("/ ") for ln in f if "REQUIRES:" in ln or "UNSUPPORTED:" in ln]
    except OSError:
        lines = []
    return "; ".join(lines) or "a required lit feature is missing"


def lit_skips(output):
    """lit lists the names of tests that did not run only when asked (scripts/test.sh sets
    LIT_OPTS=--show-unsupported --show-skipped --show-excluded):
         Unsupported Tests (1):
           accel-migrate :: torch2_idioms.test
    Its closing counts ('  Unsupported: 1') catch names missing from that list."""
    skips, group, counted = [], None, 0
    for line in output.splitlines():
        g = _LIT_GROUP.match(line)
        if g:
            group = g.group(1)
            continue
        if group and line.startswith("  ") and " :: " in line:
            name = line.split(" :: ", 1)[1].strip()
            skips.append((name, "lit %s: %s" % (group.lower(), _lit_requirement(name))))
            continue
        group = None
        c = _LIT_COUNT.match(line)
        if c:
            counted += int(c.group(2))
    if counted > len(skips):
        skips.append(("(unnamed)", "lit reports %d tests not run, %d named (LIT_OPTS lost?)" % (counted, len(skips))))
    return skips


def _ctest_skip_reason(result):
    """Why ctest did not run a test: its message plus the line of output that says so."""
    lines = [ln.strip() for ln in result.output.splitlines() if ln.strip()]
    said = next((ln for ln in lines if "skip" in ln.lower()), lines[-1] if lines else "")[:300]
    first = "Disabled (the DISABLED test property)" if result.status == "disabled" else result.message
    parts = [first] + ([said] if said and said != "Disabled" and said != first else [])
    return ": ".join(p for p in parts if p) or result.status


def collect_skips(results):
    skips = []
    for r in results:
        if r.status in ("skipped", "disabled", "notrun"):
            skips.append(Skip(r.name, _ctest_skip_reason(r), "ctest"))
        for kind, parse in (("gtest", gtest_skips), ("unittest", unittest_skips), ("lit", lit_skips)):
            for inner, reason in parse(r.output):
                skips.append(Skip(r.name + "/" + inner, reason, kind))
    return skips


# ---- the reviewed files ----------------------------------------------------------------

def read_lines(path):
    """(line number, text) of a reviewed file's entries: '#' comments and blanks skipped."""
    with open(path) as f:
        return [(i, ln.strip()) for i, ln in enumerate(f, 1) if ln.strip() and not ln.lstrip().startswith("#")]


def load_allowed(path):
    """skips-P.txt: 'PATTERN  why' per line; PATTERN is an fnmatch glob over the skip's name
    (ctest-name or ctest-name/inner-name). A line without a why is an error: the file is
    reviewed like code, and the why is what the reviewer checks."""
    rules = []
    for num, text in read_lines(path):
        parts = text.split(None, 1)
        if len(parts) < 2:
            raise ValueError("%s:%d: '%s' says no why (PATTERN  reason it is allowed)" % (path, num, text))
        rules.append((parts[0], parts[1], num))
    return rules


def allowed_by(skip, rules):
    return next((r for r in rules if fnmatch.fnmatchcase(skip.ident, r[0])), None)


def registered_tests(build):
    """Every test ctest knows in BUILD (configure's result, nothing is run): name -> properties."""
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return {t["name"]: {p["name"]: p["value"] for p in t.get("properties", [])}
            for t in json.loads(out)["tests"]}


def registered_names(build):
    return sorted(registered_tests(build))


def unmarked_tests(tests):
    """Tests that are neither RUN_SERIAL nor labelled "parallel" (cmake/AccelTests.cmake): a
    directory that registers tests without accel_tests_run_alone_unless_parallel() would let
    them run beside others under ctest -j 2 without anyone having decided that it is safe."""
    return sorted(n for n, p in tests.items()
                  if not p.get("RUN_SERIAL") and "parallel" not in (p.get("LABELS") or []))


def check_marks(build, regex, lines):
    bad = [n for n in unmarked_tests(registered_tests(build)) if not regex or re.search(regex, n)]
    if not bad:
        return []
    lines.append("tests neither RUN_SERIAL nor labelled parallel (call accel_tests_run_alone_unless_parallel() "
                 "in their CMakeLists.txt; cmake/AccelTests.cmake): " + ", ".join(bad))
    return ["%d tests without a serial/parallel mark" % len(bad)]


def compare_lists(expected, registered, regex):
    """(missing, unexpected) among the names ACCEL_TEST_REGEX selects (all without one)."""
    pick = (lambda n: re.search(regex, n) is not None) if regex else (lambda n: True)
    exp = {n for n in expected if pick(n)}
    reg = {n for n in registered if pick(n)}
    return sorted(exp - reg), sorted(reg - exp)


# ---- the report -------------------------------------------------------------------------

def rel(path):
    """Paths in messages as a reviewer finds them: relative to the clone when inside it."""
    r = os.path.relpath(os.path.abspath(path), ROOT)
    return path if r.startswith("..") else r


def check_list(platform, build, regex, expected_dir, lines):
    """Test list against tests-P.txt; returns (problems, registered names)."""
    path = os.path.join(expected_dir, "tests-%s.txt" % platform)
    expected = [text for _, text in read_lines(path)]
    registered = registered_names(build)
    missing, unexpected = compare_lists(expected, registered, regex)
    scope = " matching ACCEL_TEST_REGEX '%s'" % regex if regex else ""
    if not missing and not unexpected:
        lines.append("%s test list: the %d registered tests%s are those of %s" %
                     (platform, len([n for n in registered if not regex or re.search(regex, n)]), scope, rel(path)))
        return [], registered
    lines.append("%s test list differs from %s%s (a family turned off by a missing dependency, or a test "
                 "added or removed without updating the file: %s):" % (platform, rel(path), scope, REGENERATE))
    lines += ["  missing (expected, not registered): " + n for n in missing]
    lines += ["  unexpected (registered, not expected): " + n for n in unexpected]
    return ["test list differs from %s (%d missing, %d unexpected)" % (rel(path), len(missing), len(unexpected))], registered


def check_ran(registered, results, regex, lines):
    """Every selected registered test has a result: a ctest run cut short does not pass."""
    seen = {r.name for r in results}
    absent = [n for n in registered if (not regex or re.search(regex, n)) and n not in seen]
    if not absent:
        return []
    lines.append("tests registered and selected but without a result: " + ", ".join(absent))
    return ["%d selected tests have no result" % len(absent)]


def check_skips(platform, skips, expected_dir, lines):
    path = os.path.join(expected_dir, "skips-%s.txt" % platform)
    rules = load_allowed(path)
    allowed = [(s, allowed_by(s, rules)) for s in skips]
    ok = [(s, r) for s, r in allowed if r]
    bad = [s for s, r in allowed if not r]
    if ok:
        lines.append("%s skipped (allowed on this machine: CPU only; %s):" % (platform, rel(path)))
        lines += ["  %s: %s  [allowed, line %d: %s]" % (s.ident, s.reason, r[2], r[1]) for s, r in ok]
    if bad:
        lines.append("%s skipped, NOT allowed (no line of %s matches; make it run, or add 'PATTERN  why' "
                     "there in a reviewed commit):" % (platform, rel(path)))
        lines += ["  %s (%s): %s" % (s.ident, s.kind, s.reason) for s in bad]
        return ["%d skips not allowed by %s (listed above)" % (len(bad), rel(path))]
    if not skips:
        lines.append("%s skipped: nothing" % platform)
    return []


def check_truncation(results, lines):
    """ctest keeps only the first --test-output-size-passed bytes of an output: a skip past
    that point would be silent."""
    cut = [r.name for r in results if "The rest of the test output was removed" in r.output]
    if not cut:
        return []
    lines.append("outputs cut by ctest (skips after the cut are not seen; raise --test-output-size-* "
                 "in scripts/test.sh): " + ", ".join(cut))
    return ["%d test outputs truncated" % len(cut)]


# A compiler's or linker's warning as GCC, clang and the linkers print it: FILE:LINE:COL:
# warning: ..., or [PATH/]TOOL: warning: ... (cc1plus about an unusable PCH, gold about a
# library).
# Not the tool's own summaries ("0 warnings") nor CMake's "CMake Warning" at configure time.
WARNING_LINE = re.compile(r"^(\S+:\d+:\d+|(\S*/)?(cc1plus|c\+\+|g\+\+(-\d+)?|clang(\+\+)?(-\d+)?|ld|ld\.gold|gold)): "
                          r"warning: ")


def build_warnings(text):
    """The warning lines of a build's output (ccache replays a cached object's warnings, so a
    warm build shows them too)."""
    return [ln for ln in text.splitlines() if WARNING_LINE.match(ln)]


def check_build_warnings(build, lines):
    """Problems: one per compiler or linker warning in BUILD/build.log (absent: nothing to
    check, e.g. a tree built by hand)."""
    path = os.path.join(build, "build.log")
    if not os.path.exists(path):
        return []
    with open(path, errors="replace") as f:
        found = build_warnings(f.read())
    lines.append("compiler warnings in %s: %d" % (rel(path), len(found)))
    return ["compiler warning in the build (fix it; both compilers must build cleanly): %s" % w for w in found]


def slowest(platform, results, lines, n=10):
    top = sorted(results, key=lambda r: -r.seconds)[:n]
    lines.append("%s slowest %d tests (of %d, %.0f s in all):" % (platform, len(top), len(results),
                                                                  sum(r.seconds for r in results)))
    lines += ["  %8.1f s  %s%s" % (r.seconds, r.name, "" if r.status == "passed" else "  (%s)" % r.status) for r in top]


def check(args):
    lines, problems = [], []
    results, source, load_problems = load_results(args.build, args.junit, args.log)
    problems += load_problems
    list_problems, registered = check_list(args.platform, args.build, args.regex, args.expected_dir, lines)
    problems += list_problems
    problems += check_marks(args.build, args.regex, lines)
    problems += check_build_warnings(args.build, lines)
    if source:
        problems += check_ran(registered, results, args.regex, lines)
        problems += check_truncation(results, lines)
        problems += check_skips(args.platform, collect_skips(results), args.expected_dir, lines)
        slowest(args.platform, results, lines)
    lines += ["%s problem: %s" % (args.platform, p) for p in problems]
    lines.append("%s checks (test list, skips, results, compiler warnings): %s" % (args.platform, "FAILED" if problems else "passed"))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 1 if problems else 0


def list_tests(args):
    """Prints the registered names; with --write, replaces the names in FILE and keeps its
    header comment (the why and how of the file), and prints what changed."""
    names = registered_names(args.build)
    if not args.write:
        print("\n".join(names))
        return 0
    header, old = [], []
    if os.path.exists(args.write):
        with open(args.write) as f:
            text = f.read().splitlines()
        header = [ln for ln in text if ln.startswith("#")]
        old = [ln.strip() for ln in text if ln.strip() and not ln.startswith("#")]
    with open(args.write, "w") as f:
        f.write("\n".join(header + names) + "\n")
    for n in sorted(set(old) - set(names)):
        print("%s: removed %s" % (args.write, n))
    for n in sorted(set(names) - set(old)):
        print("%s: added %s" % (args.write, n))
    print("%s: %d tests (review the change before committing it)" % (args.write, len(names)))
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="check one platform's ctest run")
    c.add_argument("--platform", required=True)
    c.add_argument("--build", required=True)
    c.add_argument("--regex", default="", help="ACCEL_TEST_REGEX: only names matching it are compared")
    c.add_argument("--junit", help="default BUILD/ctest-junit.xml")
    c.add_argument("--log", help="default BUILD/ctest.log")
    c.add_argument("--out", help="also write the report here")
    c.add_argument("--expected-dir", default=EXPECTED_DIR, help="tests-P.txt and skips-P.txt (test/expected)")
    ls = sub.add_parser("list", help="the registered ctest names of BUILD")
    ls.add_argument("--build", required=True)
    ls.add_argument("--write", help="rewrite this expected list (keeping its header)")
    args = p.parse_args(argv)
    try:
        return check(args) if args.cmd == "check" else list_tests(args)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print("test_report: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
