#!/usr/bin/env python3
"""Tests of scripts/verify/trace_compare.py (issue 48 item 3) on traces written here, in the
runtime's format (docs/runtime-api.md, "The step trace"): each verdict, and each way two
runs cannot be compared. The runtime's own traces are checked by runtime_tests
(RuntimeMultiProcess.StepTraceFollowsOneAndTwoProcessesStepByStep)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "verify"))
import trace_compare as tc  # noqa: E402

STEPS = 8


def norms_at(step, scale=1.0, jump_at=None, jump=0.0):
    """Two parameters whose norms move a little each step; from jump_at on, off by `jump`."""
    base = [1.0 + 0.01 * step, 2.0 - 0.02 * step]
    off = jump if jump_at is not None and step >= jump_at else 0.0
    return [n * scale * (1 + off) for n in base]


def write_run(root, name, world=1, scale=1.0, jump_at=None, jump=0.0, samples=None, hashes=None, steps=STEPS,
              sharded=False):
    """A run directory: `samples(step, rank)` per process; the same norms on every rank unless
    sharded (then each rank holds half of each parameter's squared norm)."""
    d = os.path.join(root, name)
    os.makedirs(d)
    for r in range(world):
        with open(os.path.join(d, f"trace-rank{r}.jsonl"), "w") as f:
            for k in range(1, steps + 1):
                n = samples(k, r) if samples else 64 // world
                norms = norms_at(k, scale, jump_at, jump)
                if sharded:
                    norms = [x / 2 ** 0.5 for x in norms]
                h = hashes(k, r) if hashes else f"{k:016x}"
                params = [{"numel": 10, "sum": 0.0, "norm": x, "xxh3": h} for x in norms]
                f.write(json.dumps({"rank": r, "world_size": world, "step": k, "samples": n, "padded": 0,
                                    "sharded": sharded, "loss": [0.5 / k], "params": params}) + "\n")
    return d


class TraceCompare(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.ref = tc.read_run(write_run(self.root, "ref"))
        # Order controls of the reference (tc.MIN_CONTROLS = 5), off by 1e-7, 2e-7, ..., 5e-7.
        self.controls = [tc.read_run(write_run(self.root, f"c{i}", scale=1 + i * 1e-7,
                                               hashes=lambda k, r, i=i: f"{i:08x}{k:08x}")) for i in range(1, 6)]

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_the_same_bits_are_bit_identical(self):
        v = tc.compare(self.ref, tc.read_run(write_run(self.root, "same")))
        self.assertEqual(v.category, tc.BIT_IDENTICAL, v.text)

    def test_a_gap_inside_the_controls_is_within_spread(self):
        two = write_run(self.root, "two", world=2, scale=1 + 2e-7, hashes=lambda k, r: f"a{k:015x}")
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual(v.category, tc.WITHIN_SPREAD, v.text)
        self.assertIn("largest gap 2e-07", v.text)

    def test_the_first_step_outside_the_spread_is_named_with_its_parameter(self):
        two = write_run(self.root, "two", world=2, jump_at=5, jump=1e-3, hashes=lambda k, r: f"b{k:015x}")
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 5), v.text)
        self.assertIn("DIVERGED at step 5: parameter", v.text)
        self.assertIn("0.001", v.text)

    def own_controls(self, scale, spread):
        """Five order controls of the 2-process configuration around a run at `scale`, off it
        by spread x 1..5 / 5."""
        return [tc.read_run(write_run(self.root, f"own{i}-{scale}", world=2, scale=scale * (1 + spread * i / 5),
                                      hashes=lambda k, r, i=i: f"o{i:07x}{k:08x}")) for i in range(1, 6)]

    def test_the_n_process_configurations_own_rounding_widens_the_bound(self):
        # pc-logistic-regression's shape: a 3e-6 gap, beyond 4 x the 1-process controls' 5e-7,
        # inside 4 x the 2-process controls' own spread of 1e-6 (they measure the rounding of
        # the N-process reduction, which one process never does).
        two = tc.read_run(write_run(self.root, "two", world=2, scale=1 + 3e-6, hashes=lambda k, r: f"a{k:015x}"))
        self.assertEqual(tc.compare(self.ref, two, self.controls).category, tc.DIVERGED)
        v = tc.compare(self.ref, two, self.controls, self.own_controls(1 + 3e-6, 1e-6), repeat=two)
        self.assertEqual(v.category, tc.WITHIN_SPREAD, v.text)
        self.assertIn("4 x the controls' spread of 1 and of 2 processes 1e-06", v.text)

    def test_own_controls_count_only_when_the_n_process_run_repeats_itself(self):
        # A race or unseeded noise on one process: every 2-process run differs, its own
        # controls as widely as its gap; its repeat is not the run to the bit, so they are not
        # taken and the gap stays DIVERGED.
        two = tc.read_run(write_run(self.root, "two", world=2, scale=1 + 3e-6, hashes=lambda k, r: f"a{k:015x}"))
        again = tc.read_run(write_run(self.root, "again", world=2, scale=1 + 1e-6, hashes=lambda k, r: f"d{k:015x}"))
        own = self.own_controls(1 + 3e-6, 4e-6)
        self.assertEqual(tc.compare(self.ref, two, self.controls, own, repeat=two).category, tc.WITHIN_SPREAD)
        v = tc.compare(self.ref, two, self.controls, own, repeat=again)
        self.assertEqual(v.category, tc.DIVERGED, v.text)
        self.assertIn("did not repeat itself to the bit", v.text)
        self.assertEqual(tc.compare(self.ref, two, self.controls, own).category, tc.DIVERGED)  # no repeat run

    def test_a_bug_moves_its_own_controls_too_and_stays_diverged(self):
        # A wrong weight moves every 2-process run alike: its own controls sit at rounding
        # distance from it (1e-7), far from the reference (1e-3 away).
        two = tc.read_run(write_run(self.root, "two", world=2, jump_at=3, jump=1e-3, hashes=lambda k, r: f"b{k:015x}"))
        own = [tc.read_run(write_run(self.root, f"bug{i}", world=2, jump_at=3, jump=1e-3 + i * 1e-7,
                                     hashes=lambda k, r, i=i: f"c{i:07x}{k:08x}")) for i in range(1, 6)]
        v = tc.compare(self.ref, two, self.controls, own, repeat=two)
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 3), v.text)
        self.assertIn("the controls' spread of 1 and of 2 processes", v.text)

    def test_a_gap_up_to_the_factor_is_within_spread(self):
        # 1.9e-6 against controls of at most 5e-7: 3.8 times, inside SPREAD_FACTOR (4).
        two = write_run(self.root, "two", world=2, scale=1 + 1.9e-6, hashes=lambda k, r: f"a{k:015x}")
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual(v.category, tc.WITHIN_SPREAD, v.text)
        self.assertIn("within 2e-06 there (4 x the controls' spread 5e-07)", v.text)

    def test_a_gap_just_past_the_factor_is_not_rounding(self):
        # 2.1e-6 against controls of at most 5e-7: 4.2 times.
        two = write_run(self.root, "two", world=2, scale=1 + 2.1e-6, hashes=lambda k, r: f"a{k:015x}")
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 1), v.text)
        self.assertIn("beyond 2e-06, 4 x the controls' spread 5e-07", v.text)

    def test_a_gap_with_too_few_controls_is_not_called_rounding(self):
        two = write_run(self.root, "two", world=2, scale=1 + 2e-7, hashes=lambda k, r: f"a{k:015x}")
        v = tc.compare(self.ref, tc.read_run(two), self.controls[:4])
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 1), v.text)
        self.assertIn("4 control run(s), 5 needed", v.text)

    def test_without_controls_the_first_step_with_a_gap_is_named(self):
        # Steps 1-4 equal (other hashes), a gap from step 5: DIVERGED at 5, not at 1.
        two = write_run(self.root, "two", world=2, jump_at=5, jump=1e-3, hashes=lambda k, r: f"b{k:015x}")
        v = tc.compare(self.ref, tc.read_run(two))
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 5), v.text)
        same = write_run(self.root, "same-norms", world=2, hashes=lambda k, r: f"d{k:015x}")
        v = tc.compare(self.ref, tc.read_run(same))
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 1), v.text)
        self.assertIn("the same norms, other bits", v.text)

    def test_every_process_doing_all_the_work_is_not_split(self):
        two = write_run(self.root, "two", world=2, samples=lambda k, r: 64)
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual((v.category, v.step), (tc.NOT_SPLIT, 1), v.text)
        self.assertIn("add up to 128", v.text)

    def test_a_second_optimizers_step_without_samples_is_split(self):
        # A GAN: the discriminator's step carries the batch's samples, the generator's none
        # (e2e.gan was "not split: step 2: samples per process 0/0").
        per = lambda k, r, share: 0 if k % 2 == 0 else share
        ref = tc.read_run(write_run(self.root, "gan-ref", samples=lambda k, r: per(k, r, 64)))
        two = write_run(self.root, "gan-two", world=2, samples=lambda k, r: per(k, r, 32))
        self.assertEqual(tc.compare(ref, tc.read_run(two)).category, tc.BIT_IDENTICAL)
        none = write_run(self.root, "none", world=2, samples=lambda k, r: 0)
        v = tc.compare(tc.read_run(write_run(self.root, "none-ref", samples=lambda k, r: 0)), tc.read_run(none))
        self.assertEqual((v.category, v.step), (tc.NOT_SPLIT, 1), v.text)
        self.assertIn("no samples came through prepared loaders in any step", v.text)

    def test_a_lopsided_step_is_not_split(self):
        # Step 3 of 64 samples falls 60/4: it adds up, but one process did nearly all of it.
        two = write_run(self.root, "two", world=2, samples=lambda k, r: (60 if r == 0 else 4) if k == 3 else 32)
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual((v.category, v.step), (tc.NOT_SPLIT, 3), v.text)

    def test_a_short_last_step_cut_in_slices_is_split(self):
        # 41 samples on 2 processes: the runtime gives 32 and 9 (per-process slices).
        ref = tc.read_run(write_run(self.root, "ref41", samples=lambda k, r: 41 if k == STEPS else 64))
        two = write_run(self.root, "two", world=2,
                        samples=lambda k, r: (32 if r == 0 else 9) if k == STEPS else 32)
        self.assertEqual(tc.compare(ref, tc.read_run(two)).category, tc.BIT_IDENTICAL)

    def test_replicas_that_differ_are_named(self):
        two = write_run(self.root, "two", world=2, hashes=lambda k, r: f"{k + (r if k >= 4 else 0):016x}")
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual((v.category, v.step), (tc.NOT_SPLIT, 4), v.text)
        self.assertIn("replicas of rank(s) [1]", v.text)

    def test_fsdp_shards_are_combined(self):
        two = write_run(self.root, "two", world=2, sharded=True, hashes=lambda k, r: f"{r:08x}{k:08x}")
        v = tc.compare(self.ref, tc.read_run(two), self.controls)
        self.assertEqual(v.category, tc.WITHIN_SPREAD, v.text)

    def test_runs_that_cannot_be_compared_exit_2_with_the_reason(self):
        short = write_run(self.root, "short", steps=STEPS - 1)
        with self.assertRaisesRegex(tc.TraceError, "took 7 steps, the reference 8"):
            tc.compare(self.ref, tc.read_run(short))
        gap = write_run(self.root, "gap", world=3)
        os.remove(os.path.join(gap, "trace-rank1.jsonl"))
        with self.assertRaisesRegex(tc.TraceError, r"ranks \[0, 2\], expected 0..1"):
            tc.read_run(gap)
        os.makedirs(os.path.join(self.root, "empty"))
        self.assertEqual(tc.main([os.path.join(self.root, "ref"), os.path.join(self.root, "empty")]), 2)

    def test_the_exit_status_follows_the_verdict(self):
        two = write_run(self.root, "two", world=2, jump_at=2, jump=0.1, hashes=lambda k, r: f"c{k:015x}")
        args = [os.path.join(self.root, "ref"), two] + sum((["--control", os.path.join(self.root, f"c{i}")]
                                                             for i in range(1, 6)), [])
        self.assertEqual(tc.main(args + ["--json", os.path.join(self.root, "v.json")]), 1)
        self.assertEqual(json.load(open(os.path.join(self.root, "v.json")))["step"], 2)
        self.assertEqual(tc.main([os.path.join(self.root, "ref"), os.path.join(self.root, "ref")]), 0)


class AgainstOriginal(unittest.TestCase):
    """verify --original: the migrated program's 1-process trace against its traced original
    (which counts no samples): only bits count, no spread, no split."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.original = tc.read_run(write_run(self.root, "original", samples=lambda k, r: 0))

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_the_same_bits_are_bit_identical_though_the_original_counts_no_samples(self):
        v = tc.against_original(self.original, tc.read_run(write_run(self.root, "one")))
        self.assertEqual(v.category, tc.BIT_IDENTICAL, v.text)

    def test_a_gap_the_controls_would_call_rounding_diverges_at_its_step(self):
        # 1e-9 of a norm, other bits from step 3 on: no spread excuses it on 1 process.
        one = write_run(self.root, "one", jump_at=3, jump=1e-9, hashes=lambda k, r: f"{k:016x}" if k < 3 else "ff")
        v = tc.against_original(self.original, tc.read_run(one))
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 3), v.text)
        self.assertRegex(v.text, r"^DIVERGED at step 3: parameter \d+ 1e-09 from the original's")

    def test_a_loss_that_differs_with_equal_bits_is_named(self):
        one = write_run(self.root, "one")
        lines = open(os.path.join(one, "trace-rank0.jsonl")).read().replace('"loss": [0.25]', '"loss": [0.26]')
        open(os.path.join(one, "trace-rank0.jsonl"), "w").write(lines)
        v = tc.against_original(self.original, tc.read_run(one))
        self.assertEqual((v.category, v.step), (tc.DIVERGED, 2), v.text)
        self.assertIn("the loss passed to backward", v.text)

    def test_other_lengths_or_processes_cannot_be_compared(self):
        with self.assertRaisesRegex(tc.TraceError, "took 7 steps, the original 8"):
            tc.against_original(self.original, tc.read_run(write_run(self.root, "short", steps=STEPS - 1)))
        with self.assertRaisesRegex(tc.TraceError, "has 2 processes, 1 expected"):
            tc.against_original(self.original, tc.read_run(write_run(self.root, "two", world=2)))



def write_detailed(root, name, world, synced, local=None, samples=32, grad_hash="0"):
    """One step whose line has the --detail gradients: `synced` a (sum, norm) per parameter
    (the same on every rank), `local[r]` rank r's (sum, norm) per parameter before the
    synchronisation (None: no local gradients, as on 1 process)."""
    d = os.path.join(root, name)
    os.makedirs(d)
    grad = lambda g: {"numel": 100, "sum": g[0], "norm": g[1], "xxh3": grad_hash}
    for r in range(world):
        line = {"rank": r, "world_size": world, "step": 1, "samples": samples, "padded": 0, "sharded": False,
                "loss": [0.5], "params": [{"numel": 100, "sum": 0.0, "norm": 1.0, "xxh3": "1"}] * len(synced),
                "grads": [grad(g) for g in synced]}
        if local is not None:
            line["local_grads"] = [grad(g) for g in local[r]]
        with open(os.path.join(d, f"trace-rank{r}.jsonl"), "w") as f:
            f.write(json.dumps(line) + "\n")
    return tc.read_run(d)


class TraceExplain(unittest.TestCase):
    """--detail's sentence (trace_compare.explain) for each place two runs can part."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        # The 1-process gradient of two parameters: sums 4 and -2 (norms 1 and 0.5).
        self.one = write_detailed(self.root, "one", 1, [(4.0, 1.0), (-2.0, 0.5)])

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_locals_that_sum_to_the_reference_averaged_are_a_sum_loss(self):
        two = write_detailed(self.root, "two", 2, [(2.0, 0.5), (-1.0, 0.25)],
                             [[(1.5, 0.4), (-0.5, 0.2)], [(2.5, 0.6), (-1.5, 0.3)]])
        text = tc.explain(self.one, two, 1)
        self.assertIn("each process's own gradient was right", text)
        self.assertIn("their sum", text)

    def test_locals_that_combine_to_nothing_mean_other_data(self):
        two = write_detailed(self.root, "two", 2, [(3.0, 0.9), (-1.0, 0.4)],
                             [[(3.5, 0.9), (-0.5, 0.4)], [(2.5, 0.9), (-1.5, 0.4)]])
        self.assertIn("already differ before the synchronisation", tc.explain(self.one, two, 1))

    def test_equal_gradients_put_the_gap_in_the_optimizer_step(self):
        two = write_detailed(self.root, "two", 2, [(4.0, 1.0), (-2.0, 0.5)],
                             [[(3.0, 0.9), (-1.0, 0.4)], [(5.0, 1.1), (-3.0, 0.6)]])
        self.assertIn("parted in the optimizer step itself", tc.explain(self.one, two, 1))

    def test_a_synchronised_gradient_that_is_no_mean_is_the_synchronisation(self):
        two = write_detailed(self.root, "two", 2, [(9.0, 2.0), (-2.0, 0.5)],
                             [[(3.0, 0.9), (-1.0, 0.4)], [(5.0, 1.1), (-3.0, 0.6)]])
        self.assertIn("is not the mean of the processes' own gradients", tc.explain(self.one, two, 1))

    def test_equal_bits_put_the_gap_in_the_optimizer_step(self):
        two = write_detailed(self.root, "two", 2, [(4.0, 1.0), (-2.0, 0.5)],
                             [[(3.0, 0.9), (-1.0, 0.4)], [(5.0, 1.1), (-3.0, 0.6)]])
        self.assertIn("equal the 1-process run's to the bit", tc.explain(self.one, two, 1))

    def test_a_rounding_sized_difference_is_named_rounding(self):
        # Other bits, a gap far inside DETAIL_TOLERANCE (pc-logistic-regression's step 5: the
        # bias gradient 1.8e-8 apart): not "the optimizer step" (verify said so before).
        two = write_detailed(self.root, "two", 2, [(4.0 + 1e-7, 1.0), (-2.0, 0.5 + 1e-8)],
                             [[(3.0, 0.9), (-1.0, 0.4)], [(5.0, 1.1), (-3.0, 0.6)]], grad_hash="1")
        text = tc.explain(self.one, two, 1)
        self.assertIn("differ from the 1-process run's by rounding only (largest relative gap of a gradient's norm "
                      "2e-08, parameter 1", text)
        self.assertNotIn("optimizer step itself", text)

    def test_no_recorded_gradients_is_said(self):
        plain = tc.read_run(write_run(self.root, "plain", world=2, steps=1))
        self.assertIn("no gradients were recorded at step 1", tc.explain(self.one, plain, 1))

if __name__ == "__main__":
    unittest.main()
