#!/usr/bin/env python3
"""Self-test of the lint's clang-tidy result cache (scripts/ci/tidy_cached.py, issue 46): a
stale hit would hide a finding, so each way a result can go stale is tried on a real
clang-tidy with the project's kind of check (a function over the line limit):
  - a finding is reported, and reported again from the cache;
  - a change in a header the unit includes is analysed again (the finding goes away);
  - a change of the check options is a full run;
  - the same tree in another folder (a fresh clone) is served from the cache, with its own
    paths in the replayed output.
ctest test ci.tidy_cache; by hand: python3 test/ci/tidy_cache_selftest.py -v
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "..", "..", "scripts", "ci", "tidy_cached.py")


def newest(pattern):
    found = sorted(glob.glob(pattern), key=lambda p: int(p.rsplit("-", 1)[1]))
    return found[-1] if found else None


CLANG_TIDY = newest("/usr/bin/clang-tidy-[0-9]*")
CLANG = newest("/usr/bin/clang++-[0-9]*")

LONG_BODY = "\n".join("  x += %d;" % i for i in range(12))


class TidyCache(unittest.TestCase):
    def setUp(self):
        if not CLANG_TIDY or not CLANG:
            self.fail("clang-tidy and clang++ are installed by scripts/bootstrap.sh; none found")
        self.tmp = tempfile.mkdtemp()
        self.cache = os.path.join(self.tmp, "cache")
        self.root = self.make_tree(os.path.join(self.tmp, "clone1"), threshold=10)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def make_tree(self, root, threshold):
        os.makedirs(os.path.join(root, "src"))
        self.write(root, ".clang-tidy", "Checks: '-*,readability-function-size'\nCheckOptions:\n"
                   "  - key: readability-function-size.LineThreshold\n    value: %d\n" % threshold)
        self.write(root, "src/body.h", "#define BODY \\\n" + " \\\n".join(LONG_BODY.splitlines()) + "\n")
        self.write(root, "src/unit.cpp", "#include \"body.h\"\nint f(int x) {\n" + LONG_BODY + "\n  BODY\n  return x;\n}\n")
        db = [{"directory": root, "file": os.path.join(root, "src/unit.cpp"),
               "command": "c++ -std=c++17 -c %s -o unit.o" % os.path.join(root, "src/unit.cpp")}]
        self.write(root, "db/compile_commands.json", json.dumps(db))
        return root

    def write(self, root, rel, text):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)

    def run_driver(self, root):
        p = subprocess.run([sys.executable, DRIVER, "--db", os.path.join(root, "db"), "--root", root,
                            "--jobs", "1", "--cache", self.cache, "--clang-tidy", CLANG_TIDY, "--clang", CLANG],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout

    def test_findings_are_replayed_and_changes_are_analysed(self):
        first = self.run_driver(self.root)
        self.assertIn("src/unit.cpp:2:5: warning: function 'f' exceeds recommended size", first)
        self.assertIn("1 units, 0 from the cache", first)
        again = self.run_driver(self.root)
        self.assertIn("1 units, 1 from the cache", again)
        self.assertIn("%s/src/unit.cpp:2:5: warning: function 'f'" % self.root, again)
        # A header the unit includes gets shorter: analysed again, and the finding is gone.
        self.write(self.root, "src/body.h", "#define BODY\n")
        fixed = self.run_driver(self.root)
        self.assertIn("1 units, 0 from the cache", fixed)
        self.assertIn("function 'f'", fixed)  # still 13 lines + 3 > 10
        self.write(self.root, "src/unit.cpp", "#include \"body.h\"\nint f(int x) { return x; }\n")
        self.assertNotIn("warning:", self.run_driver(self.root))

    def test_a_check_option_change_is_a_full_run(self):
        self.run_driver(self.root)
        self.write(self.root, ".clang-tidy", "Checks: '-*,readability-function-size'\nCheckOptions:\n"
                   "  - key: readability-function-size.LineThreshold\n    value: 80\n")
        out = self.run_driver(self.root)
        self.assertIn("1 units, 0 from the cache", out)
        self.assertNotIn("warning:", out)

    def test_a_fresh_clone_elsewhere_is_served_with_its_own_paths(self):
        self.run_driver(self.root)
        other = self.make_tree(os.path.join(self.tmp, "elsewhere", "clone2"), threshold=10)
        out = self.run_driver(other)
        self.assertIn("1 units, 1 from the cache", out)
        self.assertIn("%s/src/unit.cpp:2:5: warning" % other, out)
        self.assertNotIn(self.root + "/", out)


if __name__ == "__main__":
    unittest.main()
