"""The launch contract's environment variable names are spelled once (issue 49):
runtime/include/accelerate/detail/env_names.h. Any other C++ file of the product (runtime,
launcher, tool, rewriters, tidy) that writes one as a string literal in code fails here;
comments may name them (they explain, the compiler never sees them)."""
import glob
import os
import re
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HOME = os.path.join("runtime", "include", "accelerate", "detail", "env_names.h")
NAME = re.compile(r'"(?:ACCELERATE|FSDP)_[A-Z0-9_]*"')


def code_of(line):
    """The line up to a // comment that is not inside a string or character literal."""
    i, quote = 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif line.startswith("//", i):
            return line[:i]
        i += 1
    return line


def offences(paths):
    found = []
    for path in paths:
        for number, line in enumerate(open(path, errors="replace"), 1):
            code = code_of(line)
            if code.lstrip().startswith("*"):  # inside a /* */ block comment
                continue
            found += [f"{os.path.relpath(path, ROOT)}:{number}: {m}" for m in NAME.findall(code)]
    return found


def product_sources():
    files = []
    for part in ("runtime", "launcher", "tool", "rewriters", "tidy"):
        for ext in ("cpp", "h", "h.in"):
            files += glob.glob(os.path.join(ROOT, part, "**", f"*.{ext}"), recursive=True)
    return sorted(f for f in files if os.path.relpath(f, ROOT) != HOME)


class EnvNames(unittest.TestCase):
    def test_no_name_outside_the_contract_header(self):
        sources = product_sources()
        self.assertGreater(len(sources), 100, "the product's sources were not found")
        self.assertEqual(offences(sources), [])

    def test_the_check_sees_a_literal_and_not_a_comment(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
            f.write('const char* a = std::getenv("ACCELERATE_TRACE");\n'
                    '// "ACCELERATE_TRACE" in a comment\n'
                    'x = "//"; y = "FSDP_OFFLOAD_PARAMS";\n')
        try:
            self.assertEqual([o.split(": ", 1)[1] for o in offences([f.name])],
                             ['"ACCELERATE_TRACE"', '"FSDP_OFFLOAD_PARAMS"'])
        finally:
            os.unlink(f.name)

    def test_the_header_names_them(self):
        text = open(os.path.join(ROOT, HOME)).read()
        for name in ("ACCELERATE_MIXED_PRECISION", "ACCELERATE_SPLIT_BATCHES", "FSDP_SHARDING_STRATEGY"):
            self.assertIn(f'"{name}"', text)


if __name__ == "__main__":
    unittest.main()
