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
    controls: {seed: value} of the order controls, or None for no control run."""
    fmt = lambda x: f"loss={x!r}"
    return v.Evidence(one={"loss": one}, many={"loss": two}, split=split, original={"loss": original},
                      original_text=fmt(original), one_text=fmt(one),
                      warned=set(warned), noted=set(noted),
                      controls=None if controls is None else (lambda seeds: {t: {"loss": c} for t, c in controls.items()
                                                                               if t in seeds}))


def write_reports(d, counts, backward=16, world=None):
    os.makedirs(d, exist_ok=True)
    for r, n in enumerate(counts):
        with open(os.path.join(d, f"work-rank{r}.json"), "w") as f:
            json.dump({"rank": r, "world_size": world or len(counts), "backward_calls": backward,
                       "optimizer_steps": backward, "samples": n, "padded_samples": 0}, f)
    return v.read_work_reports(d)


FLAT = {seed: 1.0 for seed in v.CONTROL_SEEDS}  # order controls that did not move the value


class CatchAlls(unittest.TestCase):
    """Issue 47 part 3: each of these was once reported as something other than a failure."""

    def test_one_control_is_not_a_spread(self):
        # pe-mnist: one control moved 8.6 %, 2 processes 42 %. One control run, however far it
        # moves, is not a spread; five runs moving at most 8.6 % do not cover 42 % (4.9 times).
        self.assertEqual(v.judge(evidence(1.42, controls={1: 1.086})).category, v.FAILED)
        got = v.judge(evidence(1.42, controls={1: 1.086, 2: 1.05, 3: 1.01, 4: 1.02, 5: 1.0}))
        self.assertEqual(got.category, v.FAILED)
        self.assertIn("0.42", got.text)
        self.assertIn("0.086", got.text)

    def test_unrelated_warning_excuses_nothing(self):
        # torchkata-checksum: a note about a print was reported as the reason for a 1.4 % gap.
        got = v.judge(evidence(1.014, controls=FLAT,
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
        self.assertEqual(v.judge(evidence(1.0)).category, v.REPRODUCED)

    def test_a_small_gap_is_not_reproduced_without_controls(self):
        # The old rule called any gap under 1e-4 "reproduced", with no cause named.
        self.assertEqual(v.judge(evidence(1.00001)).category, v.FAILED)
        self.assertEqual(v.judge(evidence(1.00001, controls=FLAT)).category, v.FAILED)

    def test_within_the_factor_of_five_controls(self):
        got = v.judge(evidence(1.0039, controls={1: 1.0008, 2: 0.999, 3: 1.001, 4: 1.0, 5: 1.0002}))
        self.assertEqual(got.category, v.WITHIN_SPREAD)
        self.assertIn("0.0039 <= 4 x largest control gap 0.001", got.text)

    def test_past_the_factor_is_not_rounding(self):
        got = v.judge(evidence(1.0042, controls={1: 1.0008, 2: 0.999, 3: 1.001, 4: 1.0, 5: 1.0002}))
        self.assertEqual(got.category, v.FAILED)
        self.assertIn("beyond 4 x largest control gap 0.001", got.text)

    def test_a_gap_beyond_five_controls_is_measured_against_ten(self):
        asked = []
        def controls(seeds):
            asked.append(tuple(seeds))
            return {s: {"loss": 1.0 + (0.0011 if s == 9 else 0.0008)} for s in seeds}
        e = evidence(1.0042, controls={})
        e.controls = controls
        got = v.judge(e)
        self.assertEqual(asked, [v.CONTROL_SEEDS, v.EXTRA_SEEDS])
        self.assertEqual(got.category, v.WITHIN_SPREAD, got.text)
        self.assertIn("4 x largest control gap 0.0011", got.text)
        self.assertIn("seed 10", got.text)

    def test_the_n_process_configurations_own_controls_widen_the_bound(self):
        # pc-linear-regression's printed loss: one ulp (1.2e-7) off, ten 1-process controls
        # that never move; five 2-process controls that move by that ulp around the 2-process
        # value: within spread, both lines shown.
        ulp = 1.2e-7
        e = evidence(1.0 - ulp, controls={s: 1.0 for s in v.CONTROL_SEEDS + v.EXTRA_SEEDS})
        self.assertEqual(v.judge(e).category, v.FAILED)
        e.own_controls = lambda seeds: {s: {"loss": 1.0 - ulp + (ulp if s % 2 else 0.0)} for s in seeds}
        got = v.judge(e)
        self.assertEqual(got.category, v.WITHIN_SPREAD, got.text)
        self.assertIn("N-process order controls: seed 1 1.2e-07", got.text)
        # A run that prints another value when run again (seed 0): its own controls are not taken.
        e.own_controls = lambda seeds: {s: {"loss": 1.0 - ulp + (ulp if s % 2 == 0 else 0.0)} for s in seeds}
        got = v.judge(e)
        self.assertEqual(got.category, v.FAILED, got.text)
        self.assertIn("printed other values when run again", got.text)

    def test_own_controls_that_follow_a_bug_leave_it_failed(self):
        # A wrong weight moves every 2-process run alike: their own controls sit at rounding
        # distance from the 2-process value, 0.42 from the 1-process one.
        e = evidence(1.42, controls={s: 1.0 + 1e-7 * s for s in v.CONTROL_SEEDS + v.EXTRA_SEEDS})
        e.own_controls = lambda seeds: {s: {"loss": 1.42 + 1e-7 * s} for s in seeds}
        got = v.judge(e)
        self.assertEqual(got.category, v.FAILED, got.text)
        self.assertIn("N-process order controls", got.text)

    def test_four_controls_are_not_a_spread(self):
        got = v.judge(evidence(1.0001, controls={1: 1.001, 2: 0.999, 3: 1.001, 4: 1.0}))
        self.assertEqual(got.category, v.FAILED)
        self.assertIn("only 4 order control(s)", got.text)

    def test_rounding_checked_before_announcements_that_leave_the_controls_alone(self):
        # Batch norm kept per process does not move an order control (a batch's statistics
        # do not depend on its order): the controls decide first.
        got = v.judge(evidence(1.003, controls={1: 1.004, 2: 0.999, 3: 1.001, 4: 1.0, 5: 1.0},
                               warned={"accelerate-sync-batch-norm"}))
        self.assertEqual(got.category, v.WITHIN_SPREAD)

    def test_per_sample_randomness_is_announced_without_controls(self):
        # dropout_mlp: its order controls moved 0.8-3.1 % (a shuffled batch meets other
        # dropout masks), which would have called its 1.5 % two-process gap "within spread".
        def controls(seeds):
            raise AssertionError("order controls run for an announced per-sample randomness")
        e = evidence(1.015, controls={}, noted={"accelerate-per-sample-randomness"})
        e.controls = controls
        got = v.judge(e)
        self.assertEqual(got.category, v.ANNOUNCED)
        self.assertIn("no order controls", got.text)

    def test_a_control_with_other_keys_is_left_out(self):
        # tutorial_test_sums: controls picked with other keys than the 1-process values gave
        # an infinite gap each, and so an infinite spread that passed anything.
        e = evidence(1.5, controls={})
        e.controls = lambda seeds: {s: {"other": 1.0} for s in seeds}
        got = v.judge(e)
        self.assertEqual(got.category, v.FAILED)
        self.assertIn("only 0 order control(s)", got.text)

    def test_dropout_note_announces(self):
        got = v.judge(evidence(1.03, controls=FLAT,
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
