"""scripts/slow_gpu_trial.py's reading of a check: which GPUs it named below, and whether that is what a
load on one GPU should give (the trial itself needs GPUs: it runs on the device)."""
import unittest

import support  # noqa: F401  (puts scripts/ on the path)
import slow_gpu_trial


def check(*parts):
    return {"gpus": [{"index": index, "verdict": verdict, "figures": figures, "checks": checks}
                     for index, verdict, figures, checks in parts]}


GEMM_BELOW = [{"label": "BF16 GEMM (cuBLAS)", "status": "below expected"},
              {"label": "FP32 GEMM (cuBLAS)", "status": "as expected"}]
PROCESSES_FAILED = [{"check": "processes", "ok": False}, {"check": "ecc", "ok": True}]


class NamedTest(unittest.TestCase):
    def test_the_figures_and_checks_below_of_the_gpus_below(self):
        found = slow_gpu_trial.named(check((0, "healthy", [], []), (1, "below", GEMM_BELOW, PROCESSES_FAILED)))
        self.assertEqual(found, {1: ["BF16 GEMM (cuBLAS)", "processes check"]})

    def test_a_load_is_found_only_when_its_gpu_alone_lost_figures(self):
        self.assertTrue(slow_gpu_trial.as_expected({1: ["BF16 GEMM (cuBLAS)", "processes check"]}, 1))
        self.assertFalse(slow_gpu_trial.as_expected({1: ["processes check"]}, 1))  # the load seen, no figure lost
        self.assertFalse(slow_gpu_trial.as_expected({1: ["BF16 GEMM (cuBLAS)"], 2: ["FP8 GEMM (cuBLAS)"]}, 1))
        self.assertFalse(slow_gpu_trial.as_expected({}, 1))
        self.assertTrue(slow_gpu_trial.as_expected({}, None))
        self.assertFalse(slow_gpu_trial.as_expected({0: ["BF16 GEMM (cuBLAS)"]}, None))


if __name__ == "__main__":
    unittest.main()
