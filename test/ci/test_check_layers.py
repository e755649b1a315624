"""scripts/check_layers.py on small trees made here (issue 49 item 4): a public header's room is
its folder, the files directly in the public folder belong to the `top` room, and each way of
breaking that is reported. The real trees are checked by the layers.* tests; this shows that the
checker can fail."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CHECKER = os.path.join(ROOT, "scripts", "check_layers.py")

LAYERS = """room core
room data
room helpers
room umbrella
top umbrella
"""

# A tree that passes: rooms low to high, each public header in its room's folder, the umbrella
# and one flat forwarder at the top.
GOOD = {
    "runtime/src/core/error.cpp": "#include <accelerate/core/error.h>\n",
    "runtime/src/data/loader.cpp": "#include <accelerate/data/loader.h>\n#include <accelerate/core/error.h>\n",
    "runtime/src/helpers/metrics.cpp": "#include <accelerate/helpers/metrics.h>\n",
    "runtime/include/accelerate/core/error.h": "#pragma once\n",
    "runtime/include/accelerate/data/loader.h": "#pragma once\n#include <accelerate/core/error.h>\n",
    "runtime/include/accelerate/helpers/metrics.h": "#pragma once\n#include <accelerate/data/loader.h>\n",
    "runtime/include/accelerate/accelerate.h": "#pragma once\n#include <accelerate/helpers/metrics.h>\n",
    "runtime/include/accelerate/loader.h": "#pragma once\n#include <accelerate/data/loader.h>\n",
}


def check(files, layers=LAYERS):
    with tempfile.TemporaryDirectory() as root:
        for name, text in dict(files, **{"runtime/layers.txt": layers}).items():
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        run = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True, text=True)
        return run.returncode, run.stdout + run.stderr


class CheckLayers(unittest.TestCase):
    def test_good_tree_passes(self):
        rc, out = check(GOOD)
        self.assertEqual(rc, 0, out)
        self.assertIn("0 problems", out)

    def test_room_header_including_a_higher_room_fails(self):
        rc, out = check(dict(GOOD, **{"runtime/include/accelerate/core/error.h":
                                      "#pragma once\n#include <accelerate/data/loader.h>\n"}))
        self.assertEqual(rc, 1, out)
        self.assertIn("room 'core' (layer 0) includes the higher room 'data'", out)

    def test_room_including_a_flat_forwarder_fails(self):
        # The flat names are for programs; the runtime names each header by its room's path.
        rc, out = check(dict(GOOD, **{"runtime/src/data/loader.cpp": "#include <accelerate/loader.h>\n"}))
        self.assertEqual(rc, 1, out)
        self.assertIn("includes the higher room 'umbrella'", out)

    def test_header_in_a_folder_that_is_no_room_fails(self):
        rc, out = check(dict(GOOD, **{"runtime/include/accelerate/misc/x.h": "#pragma once\n"}))
        self.assertEqual(rc, 1, out)
        self.assertIn("its folder 'misc' is not a declared room", out)

    def test_header_at_the_top_without_a_top_room_fails(self):
        rc, out = check(GOOD, layers=LAYERS.replace("top umbrella\n", ""))
        self.assertEqual(rc, 1, out)
        self.assertIn("directly in the public folder, whose files belong to no room", out)

    def test_top_room_must_be_declared(self):
        rc, out = check(GOOD, layers=LAYERS.replace("top umbrella", "top roof"))
        self.assertEqual(rc, 1, out)
        self.assertIn("'top' is in room 'roof', which is not declared", out)

    def test_forwarder_to_a_missing_header_fails(self):
        # Each flat name must reach a real header: programs include them, the runtime does not.
        rc, out = check(dict(GOOD, **{"runtime/include/accelerate/loader.h":
                                      "#pragma once\n#include <accelerate/data/gone.h>\n"}))
        self.assertEqual(rc, 1, out)
        self.assertIn("includes <accelerate/data/gone.h>, which is no file", out)

    def test_cycle_between_two_rooms_headers_fails(self):
        rc, out = check(dict(GOOD, **{"runtime/include/accelerate/data/a.h": "#include <accelerate/data/b.h>\n",
                                      "runtime/include/accelerate/data/b.h": "#include <accelerate/data/a.h>\n"}))
        self.assertEqual(rc, 1, out)
        self.assertIn("include cycle", out)


if __name__ == "__main__":
    unittest.main()
