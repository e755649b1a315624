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


if __name__ == "__main__":
    unittest.main()
