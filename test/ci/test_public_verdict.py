"""The public table's verdict line (test/public/run_public.py verdict()): accelerate verify's
verdict on the traces and verdicts.py's on the printed metric, the worse of the two. A rule
that let a good printed number hide a bad trace (or the reverse) would publish a FAILED
program as reproduced."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "public"))
import run_public  # noqa: E402

ENTRY = {"name": "p", "metric": "loss: ([0-9.]+)"}


def report(verdict="bit-identical", original="bit-identical"):
    return {"verdict": verdict, "text": "60 steps", "original": {"verdict": original, "text": "60 steps"}}


def printed(one="0.5", n2="0.5", original="0.5", **controls):
    got = {"original": original, "one": one, "n2": n2}
    got.update({f"control-{k[1:]}": v for k, v in controls.items()})
    return got


def no_controls(seeds):
    raise AssertionError("no control needed")


class PublicVerdict(unittest.TestCase):
    def line(self, rep=None, got=None, original="0.5", rc=0, vtext="", controls=no_controls, notes=""):
        return run_public.verdict(ENTRY, original, rc, vtext, rep, got or printed(), notes, "", controls)

    def test_both_equal_is_reproduced(self):
        self.assertTrue(self.line(report()).startswith("reproduced: traces: "))

    def test_a_diverged_trace_fails_whatever_the_printed_number(self):
        line = self.line(report("DIVERGED"))
        self.assertTrue(line.startswith("FAILED: "), line)
        self.assertIn("printed: reproduced", line)

    def test_one_process_must_be_bit_identical_to_the_traced_original(self):
        self.assertTrue(self.line(report(original="DIVERGED")).startswith("FAILED: "))

    def test_an_unsplit_trace_is_not_distributed(self):
        self.assertTrue(self.line(report("not split")).startswith("not distributed: "))

    def test_a_printed_gap_beyond_the_controls_fails_a_bit_identical_trace(self):
        # The evaluation after training is outside the trace: only the printed number sees it.
        controls = lambda seeds: {s: {"metric": 0.5} for s in seeds}
        line = self.line(report(), printed(n2="0.25"), controls=controls)
        self.assertTrue(line.startswith("FAILED: "), line)

    def test_within_spread_on_both_is_within_spread(self):
        controls = lambda seeds: {s: {"metric": 0.5 + 0.001 * s} for s in seeds}
        line = self.line(report("within spread"), printed(n2="0.501"), controls=controls)
        self.assertTrue(line.startswith("within spread: "), line)

    def test_the_traced_original_must_print_what_the_original_prints(self):
        line = self.line(report(), printed(original="0.6"))
        self.assertTrue(line.startswith("FAILED: the traced original prints 0.6"), line)

    def test_verify_refusing_a_run_without_steps_is_not_distributed(self):
        text = "accelerate verify: error: the 1-process run wrote no step (does x step an optimizer it prepared?)"
        self.assertTrue(self.line(None, printed(), rc=2, vtext=text).startswith("not distributed: "))

    def test_verify_refusing_for_another_reason_fails(self):
        text = "accelerate verify: error: the 1-process run took 59 steps, the original 60"
        self.assertTrue(self.line(None, printed(), rc=2, vtext=text).startswith("FAILED: "))


    REFUSED_TEXT = ("/w/src/a.cpp:3:1: error: arithmetic on a pointer to an incomplete type 'c10::IValue'\n"
                    "accel-migrate: not migrated: /w/src/a.cpp (it does not compile; fix the errors above)\n")

    def test_a_program_the_tool_refused_whole_is_not_distributed_with_its_reason(self):
        # dpasca-lstm-sine: clang cannot parse it; the traced original has no trace (verify exit 2),
        # but what the user gets is the program unchanged, each process doing all the work.
        e = dict(ENTRY, sources=["a.cpp"])
        line = run_public.verdict(e, "0.5", 2, "accelerate verify: error: no trace-rank*.jsonl", None, printed(),
                                  self.REFUSED_TEXT, "", no_controls)
        self.assertTrue(line.startswith("not distributed: the tool did not migrate it (it does not compile"), line)
        self.assertIn("incomplete type 'c10::IValue'", line)

    def test_a_header_refused_beside_a_migrated_source_is_judged_as_usual(self):
        # torchkata: a header the tool cannot parse alone; its main source is migrated.
        e = dict(ENTRY, sources=["b.cpp", "a.cpp"])
        text = "accel-migrate: not migrated: /w/src/a.h (it does not compile)\n"
        line = run_public.verdict(e, "0.5", 1, "", report("DIVERGED"), printed(), text, "", no_controls)
        self.assertTrue(line.startswith("FAILED: "), line)


if __name__ == "__main__":
    unittest.main()
