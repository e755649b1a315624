#!/usr/bin/env python3
"""Self-test of the lint's clang-tidy result cache (scripts/ci/tidy_cached.py, issue 46): a
stale hit would hide a finding, so each way a result can go stale is tried on a real
clang-tidy with the project's kind of check (a function over the line limit):
  - a finding is reported, and reported again from the cache;
  - a change in a header the unit includes is analysed again (the finding goes away);
  - a change of the check options is a full run;
  - the same tree in another folder (a fresh clone) is served from the cache, with its own
    paths in the replayed output;
  - a unit compiled with a clang PCH is analysed with it (a stale PCH fails the run), and its
    key is made without it: a change in a header the PCH holds is analysed again.
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

    def run_driver(self, root, status=0):
        p = subprocess.run([sys.executable, DRIVER, "--db", os.path.join(root, "db"), "--root", root,
                            "--jobs", "1", "--cache", self.cache, "--clang-tidy", CLANG_TIDY, "--clang", CLANG],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, status, p.stdout + p.stderr)
        return p.stdout

    def use_pch(self, root, on):
        """The unit's command with (on) or without CMake's PCH of src/body.h, as CMake writes it
        for clang (a cmake_pch.hxx that includes the header, precompiled as cmake_pch.hxx.pch)."""
        unit, hxx = os.path.join(root, "src/unit.cpp"), os.path.join(root, "src/cmake_pch.hxx")
        pch = " -Winvalid-pch -Xclang -include-pch -Xclang %s.pch -Xclang -include -Xclang %s" % (hxx, hxx)
        db = [{"directory": root, "file": unit,
               "command": "c++ -std=c++17%s -c %s -o unit.o" % (pch if on else "", unit)}]
        self.write(root, "db/compile_commands.json", json.dumps(db))

    def make_pch(self, root):
        self.write(root, "src/cmake_pch.hxx", "#pragma clang system_header\n#include \"body.h\"\n")
        hxx = os.path.join(root, "src/cmake_pch.hxx")
        subprocess.run([CLANG, "-std=c++17", "-x", "c++-header", hxx, "-o", hxx + ".pch"], check=True)

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

    def test_a_pch_is_used_and_kept_out_of_the_key(self):
        self.make_pch(self.root)
        self.use_pch(self.root, True)
        first = self.run_driver(self.root)
        self.assertIn("1 units, 0 from the cache", first)
        self.assertIn("src/unit.cpp:2:5: warning: function 'f' exceeds recommended size", first)
        # The same unit without the PCH has the same key: served from the cache.
        self.use_pch(self.root, False)
        self.assertIn("1 units, 1 from the cache", self.run_driver(self.root))
        # clang-tidy reads the PCH: one older than its header is refused, which fails the run
        # (exit 1: clang-tidy could not analyse the unit) and is not kept in the cache.
        self.use_pch(self.root, True)
        self.write(self.root, "src/body.h", "#define BODY\n")
        stale = self.run_driver(self.root, status=1)
        self.assertIn("1 units, 0 from the cache", stale)
        self.assertIn("has been modified since the precompiled header", stale)
        # Rebuilt, the change in the header it holds is analysed: the macro's lines are gone.
        self.make_pch(self.root)
        again = self.run_driver(self.root)
        self.assertIn("1 units, 0 from the cache", again)
        self.assertIn("function 'f'", again)


if __name__ == "__main__":
    unittest.main()
