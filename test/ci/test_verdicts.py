#!/usr/bin/env python3
"""Self-test of the verdict rules (scripts/verify/verdicts.py, issue 47 item 5): the three
ways the old verdicts explained a difference away must now give FAILED or "not distributed",
and the honest cases their own verdicts. ctest test ci.report_parsers (with
test_report_selftest.py); by hand: python3 test/ci/test_verdicts.py -v
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "verify"))
import verdicts as v  # noqa: E402

SPLIT = v.Split("split", "work split: samples per process 500/501 of 1001 on 1 process")


def evidence(two, controls=None, warned=(), noted=(), split=SPLIT, one=1.0, original=1.0):
    """One key 'loss'; the original prints `original`, 1 process `one`, 2 processes `two`;
    controls: {threads: value} of the original, or None for no control run."""
    fmt = lambda x: f"loss={x!r}"
    return v.Evidence(one={"loss": one}, many={"loss": two}, split=split, original={"loss": original},
                      original_text=fmt(original), one_text=fmt(one), tolerance=1e-4,
                      warned=set(warned), noted=set(noted),
                      controls=None if controls is None else (lambda: {t: {"loss": c} for t, c in controls.items()}))


def write_reports(d, counts, backward=16, world=None):
    os.makedirs(d, exist_ok=True)
    for r, n in enumerate(counts):
        with open(os.path.join(d, f"work-rank{r}.json"), "w") as f:
            json.dump({"rank": r, "world_size": world or len(counts), "backward_calls": backward,
                       "optimizer_steps": backward, "samples": n, "padded_samples": 0}, f)
    return v.read_work_reports(d)


class CatchAlls(unittest.TestCase):
    """Issue 47 part 3: each of these was once reported as something other than a failure."""

    def test_one_control_is_not_a_spread(self):
        # pe-mnist: one control moved 8.6 %, 2 processes 42 %. One control run, however far it
        # moves, is not a spread; three runs moving at most 8.6 % do not cover 42 %.
        self.assertEqual(v.judge(evidence(1.42, controls={2: 1.086})).category, v.FAILED)
        got = v.judge(evidence(1.42, controls={2: 1.086, 3: 1.05, 4: 1.01}))
        self.assertEqual(got.category, v.FAILED)
        self.assertIn("0.42", got.text)
        self.assertIn("0.086", got.text)

    def test_unrelated_warning_excuses_nothing(self):
        # torchkata-checksum: a note about a print was reported as the reason for a 1.4 % gap.
        got = v.judge(evidence(1.014, controls={2: 1.0, 3: 1.0, 4: 1.0},
                               warned={"accelerate-main-process", "accelerate-unprepared-loader"},
                               noted={"accelerate-batch-shape", "accelerate-sync-batch-norm"}))
        self.assertEqual(got.category, v.FAILED)
        self.assertIn("excuse nothing", got.text)

    def test_every_process_doing_all_the_work_is_not_distributed(self):
        with tempfile.TemporaryDirectory() as d:
            one = write_reports(os.path.join(d, "1"), [1001])
            many = write_reports(os.path.join(d, "2"), [1001, 1001])
            split = v.judge_split(one, many)
        self.assertEqual(split.state, "not split")
        # The numbers agree (each process trained the whole data): still not reproduced.
        self.assertEqual(v.judge(evidence(1.0, split=split, warned={"accelerate-unprepared-loader"})).category,
                         v.NOT_DISTRIBUTED)


class Verdicts(unittest.TestCase):
    def test_reproduced(self):
        self.assertEqual(v.judge(evidence(1.00001)).category, v.REPRODUCED)

    def test_within_a_three_run_spread(self):
        got = v.judge(evidence(1.003, controls={2: 1.004, 3: 0.999, 4: 1.001}))
        self.assertEqual(got.category, v.WITHIN_SPREAD)
        self.assertIn("0.003 <= largest control gap 0.004", got.text)

    def test_rounding_checked_before_announcements(self):
        got = v.judge(evidence(1.003, controls={2: 1.004, 3: 0.999, 4: 1.001},
                               noted={"accelerate-per-sample-randomness"}))
        self.assertEqual(got.category, v.WITHIN_SPREAD)

    def test_dropout_note_announces(self):
        got = v.judge(evidence(1.03, controls={2: 1.0, 3: 1.0, 4: 1.0},
                               noted={"accelerate-per-sample-randomness"}))
        self.assertEqual(got.category, v.ANNOUNCED)
        self.assertIn("per-sample randomness", got.text)

    def test_batch_norm_warning_is_a_refusal_its_note_is_not(self):
        warned = v.judge(evidence(1.03, controls={}, warned={"accelerate-sync-batch-norm"}))
        self.assertEqual(warned.category, v.REFUSED)
        noted = v.judge(evidence(1.03, controls={}, noted={"accelerate-sync-batch-norm"}))
        self.assertEqual(noted.category, v.FAILED)

    def test_one_process_must_equal_the_original(self):
        got = v.judge(evidence(1.0, one=1.0, original=1.0000001, noted={"accelerate-per-sample-randomness"}))
        self.assertEqual(got.category, v.FAILED)

    def test_unknown_split_is_never_reproduced(self):
        split = v.judge_split(None, None)
        self.assertEqual(split.state, "unknown")
        got = v.judge(evidence(1.0, split=split))
        self.assertEqual(got.category, v.NOT_DISTRIBUTED)
        self.assertIn("work split unknown", got.text)

    def test_duplicates_count_once(self):
        counts = v.summary([("a", v.REPRODUCED), ("a", v.REPRODUCED), ("b", v.FAILED), ("c", v.NOT_DISTRIBUTED)])
        self.assertEqual(counts[v.REPRODUCED], 1)
        self.assertEqual(counts[v.FAILED], 1)
        self.assertEqual(counts[v.NOT_DISTRIBUTED], 1)


class WorkSplit(unittest.TestCase):
    def split(self, one, many, backward=16):
        with tempfile.TemporaryDirectory() as d:
            return v.judge_split(write_reports(os.path.join(d, "1"), one, backward),
                                 write_reports(os.path.join(d, "2"), many, backward))

    def test_short_last_batch_split(self):
        # 1001 samples in 16 batches of 64 (the last 41): 501 + 500 real samples.
        self.assertEqual(self.split([1001], [501, 500]).state, "split")
        # Without split_batches the short last batch may fall to one process.
        self.assertEqual(self.split([1001], [532, 469]).state, "split")

    def test_uneven_epochs_add_up_but_a_skew_does_not(self):
        # 1001 samples, 32 per process, 6 epochs: 512 + 489 an epoch (e2e.fidelity's
        # uneven_batches_halved), 69 over half in all: more than one batch, still a split.
        self.assertEqual(self.split([6006], [3072, 2934], backward=96).state, "split")
        # A process doing 70 % of the work adds up too, and is not a split.
        self.assertEqual(self.split([6006], [4204, 1802], backward=96).state, "not split")

    def test_sum_and_share(self):
        self.assertEqual(self.split([1001], [1001, 0]).state, "not split")  # one process did it all
        self.assertEqual(self.split([1001], [501, 501]).state, "not split")  # a padded sample counted
        self.assertEqual(self.split([0], [0, 0]).state, "not split")  # no prepared loader
        self.assertEqual(self.split([1001], [501, 500], backward=0).state, "unknown")

    def test_no_reports_and_bad_reports(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(v.read_work_reports(d))
            with self.assertRaises(ValueError):
                write_reports(d, [500], world=2)  # rank 1 missing


class ToolMessages(unittest.TestCase):
    def test_notes_and_warnings_apart(self):
        text = ("a.cpp:3:5: warning: ... [accelerate-main-process]\n"
                "a.cpp:9:1: note: per-sample randomness ... [accelerate-per-sample-randomness]\n")
        self.assertEqual(v.tool_messages(text),
                         ({"accelerate-main-process"}, {"accelerate-per-sample-randomness"}))


if __name__ == "__main__":
    unittest.main()
