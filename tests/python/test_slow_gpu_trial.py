"""scripts/slow_gpu_trial.py's reading of a check: which GPUs and pairs it named below, and whether that is
what a load on one GPU or one link should give (the trial itself needs GPUs: it runs on the device)."""
import contextlib
import io
import json
import os
import tempfile
import unittest
from unittest import mock

import support  # noqa: F401  (puts scripts/ on the path)
import slow_gpu_trial


def check(*parts, node=None):
    found = {"gpus": [{"index": index, "verdict": verdict, "figures": figures, "checks": checks}
                      for index, verdict, figures, checks in parts]}
    if node is not None:
        found["node"] = {"verdict": "below" if any(f["status"] == "below expected" for f in node) else "healthy",
                         "figures": node, "checks": []}
    return found


def peer(a, b, status="as expected"):
    return {"key": f"p2p/gpu{a}-gpu{b}", "label": f"Peer copy gpu{a} to gpu{b}", "status": status}


GEMM_BELOW = [{"label": "BF16 GEMM (cuBLAS)", "status": "below expected"},
              {"label": "FP32 GEMM (cuBLAS)", "status": "as expected"}]
PROCESSES_FAILED = [{"check": "processes", "ok": False}, {"check": "ecc", "ok": True}]


class NamedTest(unittest.TestCase):
    def test_the_figures_and_checks_below_of_the_gpus_below(self):
        found = slow_gpu_trial.named(check((0, "healthy", [], []), (1, "below", GEMM_BELOW, PROCESSES_FAILED)))
        self.assertEqual(found, {1: ["BF16 GEMM (cuBLAS)", "processes check"]})

    def test_a_load_is_found_only_when_its_gpu_alone_lost_figures(self):
        gpu1 = ("gpu", 1)
        self.assertTrue(slow_gpu_trial.as_expected({1: ["BF16 GEMM (cuBLAS)", "processes check"]}, gpu1))
        self.assertFalse(slow_gpu_trial.as_expected({1: ["processes check"]}, gpu1))  # seen, no figure lost
        self.assertFalse(slow_gpu_trial.as_expected({1: ["BF16 GEMM (cuBLAS)"], 2: ["FP8 GEMM (cuBLAS)"]}, gpu1))
        self.assertFalse(slow_gpu_trial.as_expected({}, gpu1))
        self.assertTrue(slow_gpu_trial.as_expected({}, None))
        self.assertFalse(slow_gpu_trial.as_expected({0: ["BF16 GEMM (cuBLAS)"]}, None))

    def test_the_pairs_below_and_the_node_part_are_read(self):
        found = check((0, "below", [], PROCESSES_FAILED), (1, "healthy", [], []),
                      node=[peer(0, 1, "below expected"), peer(1, 0), peer(2, 3)])
        self.assertEqual(slow_gpu_trial.pairs_below(found), {(0, 1)})
        self.assertEqual(slow_gpu_trial.named(found), {0: ["processes check"], slow_gpu_trial.NODE:
                                                       ["Peer copy gpu0 to gpu1"]})

    def test_a_link_load_is_found_when_its_pair_is_named_and_nothing_apart_from_its_gpus(self):
        link = ("link", 0, 1)
        named = {0: ["processes check"], 1: ["processes check"], slow_gpu_trial.NODE: ["Peer copy gpu0 to gpu1"]}
        self.assertTrue(slow_gpu_trial.as_expected(named, link, {(0, 1)}))
        self.assertTrue(slow_gpu_trial.as_expected(named, link, {(0, 1), (0, 2)}))  # shares GPU 0's links
        self.assertFalse(slow_gpu_trial.as_expected(named, link, {(0, 1), (2, 3)}))  # a pair the load misses
        self.assertFalse(slow_gpu_trial.as_expected(named, link, set()))  # the loaded pair not found
        self.assertFalse(slow_gpu_trial.as_expected({**named, 0: ["BF16 GEMM (cuBLAS)"]}, link, {(0, 1)}))
        self.assertFalse(slow_gpu_trial.as_expected({**named, 2: ["processes check"]}, link, {(0, 1)}))


class InterruptTest(unittest.TestCase):
    def test_an_interrupted_trial_keeps_its_finished_checks_and_says_so_without_a_traceback(self):
        finished = {"folder": "unloaded-1", "load": "none", "exit_status": 0, "seconds": 1.0, "verdict": "healthy",
                    "named": {}, "pairs_below": [], "as_expected": True}
        with tempfile.TemporaryDirectory() as out, \
                mock.patch.object(slow_gpu_trial, "one_check", side_effect=[finished, KeyboardInterrupt()]), \
                contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as errors:
            status = slow_gpu_trial.main(["--out", out, "--unloaded", "2", "--loaded", "0"])
            with open(os.path.join(out, "trial.json"), encoding="utf-8") as stream:
                kept = json.load(stream)
        self.assertEqual(status, 130)
        self.assertEqual([trial["folder"] for trial in kept["trials"]], ["unloaded-1"])
        self.assertIn("interrupted after 1 of 2 checks", errors.getvalue())
        self.assertNotIn("Traceback", errors.getvalue())


if __name__ == "__main__":
    unittest.main()
