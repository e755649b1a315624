"""The launch contract's environment variable names are spelled once (issue 49 item 1):
runtime/include/accelerate/core/detail/env_names.h names them, launch/detail/launch_settings.h
(the contract's encoder and decoder) may too. Any other C++ file of the product
(runtime, launcher, tool, rewriters, tidy) that has one inside a string literal fails here:
a whole literal ("ACCELERATE_SHM"), a prefix ("ACCELERATE_JOB_TOKEN=") or a message that names
one ("... set ACCELERATE_SHM=0"); each of them is written with the named constant instead
(env_names::kShm), so that a renamed variable cannot leave a stale spelling behind.

Comments may name variables and are not read: they explain, the compiler never sees them,
and a field's comment naming the variable that sets it is how a reader finds the way from
the code to the contract. A literal is what the program reads or prints, so a name there
must come from the contract."""
import glob
import os
import re
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CONTRACT = {
    os.path.join("runtime", "include", "accelerate", "core", "detail", "env_names.h"),
    os.path.join("runtime", "include", "accelerate", "launch", "detail", "launch_settings.h"),
}
HOME = os.path.join("runtime", "include", "accelerate", "core", "detail", "env_names.h")
# A variable name anywhere inside a literal's text (the bare prefix "ACCELERATE_" too).
NAME = re.compile(r"(?<![A-Za-z0-9_])(?:ACCELERATE|FSDP)_[A-Z0-9_]*")
# R" that starts a raw string: not the end of an identifier other than an encoding prefix.
RAW = re.compile(r'(?<![A-Za-z0-9_])(?:u8|u|U|L)?R"$')


def literals_of(text):
    """(line number, contents) of each string literal of C++ source `text`, comments skipped.
    Character literals are skipped as a whole; a raw string R"d(...)d" is read to its end."""
    found, i, line, n = [], 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif text.startswith('R"', i) and RAW.search(text, max(0, i - 3), i + 2):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end
            found.append((line, text[open_paren + 1:end]))
            line += text.count("\n", i, end)
            i = end + len(delim) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                found.append((line, text[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return found


def offences(paths):
    found = []
    for path in paths:
        with open(path, errors="replace") as f:
            text = f.read()
        for number, contents in literals_of(text):
            found += [f"{os.path.relpath(path, ROOT)}:{number}: {m}" for m in NAME.findall(contents)]
    return found


def product_sources():
    files = []
    for part in ("runtime", "launcher", "tool", "rewriters", "tidy"):
        for ext in ("cpp", "h", "h.in"):
            files += glob.glob(os.path.join(ROOT, part, "**", f"*.{ext}"), recursive=True)
    return sorted(f for f in files if os.path.relpath(f, ROOT) not in CONTRACT)


class EnvNames(unittest.TestCase):
    def test_no_name_outside_the_contract(self):
        sources = product_sources()
        self.assertGreater(len(sources), 100, "the product's sources were not found")
        self.assertEqual(offences(sources), [],
                         "write the name with its constant (accelerate::env_names, core/detail/env_names.h)")

    def test_the_check_sees_a_literal_and_not_a_comment(self):
        with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
            f.write('const char* a = std::getenv("ACCELERATE_TRACE");\n'
                    '// "ACCELERATE_TRACE" in a comment\n'
                    'x = "//"; y = "FSDP_OFFLOAD_PARAMS";\n'
                    '/* "ACCELERATE_SHM" in a block\n   "FSDP_MIN_NUM_PARAMS" over two lines */ z = \'"\';\n'
                    'help = "run on CPU (ACCELERATE_USE_CPU=true)"; k = kv.rfind("ACCELERATE_JOB_TOKEN=", 0);\n'
                    'r = R"x(set ACCELERATE_SHM=0)x"; q = "a \\" ACCELERATE_DEBUG_MODE";\n'
                    'ok = "MY_ACCELERATE_THING"; v = ACCELERATE_VERSION;\n')
        try:
            self.assertEqual([o.split(":", 1)[1] for o in offences([f.name])],
                             ['1: ACCELERATE_TRACE', '3: FSDP_OFFLOAD_PARAMS', '6: ACCELERATE_USE_CPU',
                              '6: ACCELERATE_JOB_TOKEN', '7: ACCELERATE_SHM', '7: ACCELERATE_DEBUG_MODE'])
        finally:
            os.unlink(f.name)

    def test_the_header_names_them(self):
        with open(os.path.join(ROOT, HOME)) as f:
            text = f.read()
        for name in ("ACCELERATE_MIXED_PRECISION", "ACCELERATE_SPLIT_BATCHES", "FSDP_SHARDING_STRATEGY"):
            self.assertIn(f'"{name}"', text)


if __name__ == "__main__":
    unittest.main()
