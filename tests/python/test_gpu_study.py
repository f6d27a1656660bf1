"""The matmul study binary end to end on the GPU: every GPU implementation in every mode,
at odd sizes, must produce verified (non-error) entries. Skipped without a usable GPU."""
import json
import os
import subprocess
import tempfile
import unittest

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_matmul")


def describe():
    out = subprocess.run([STUDY, "--describe"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class GpuStudyEndToEnd(unittest.TestCase):
    def setUp(self):
        gpu = describe()["gpu"]
        if not gpu["available"]:
            self.skipTest("no GPU: " + gpu["reason"])

    def test_every_gpu_entry_verifies_at_odd_sizes(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([STUDY, "--sizes=31,257,1000", "--modes=resident,transfer_pinned,transfer_pageable",
                            "--benchmark_min_time=0.01", "--benchmark_out_format=json",
                            "--benchmark_out=" + out], check=True, capture_output=True)
            with open(out) as f:
                entries = json.load(f)["benchmarks"]
        gpu_impls = {impl["id"] for impl in describe()["implementations"] if impl["device"] == "gpu"}
        seen = set()
        for entry in entries:
            self.assertFalse(entry.get("error_occurred"), entry["name"] + ": " + entry.get("error_message", ""))
            self.assertLess(entry["rel_fro_error"], 1e-4, entry["name"])
            self.assertGreater(entry["rel_fro_error"], 0.0, entry["name"])  # FP32 vs FP64 is never exact
            self.assertGreater(entry["flop"], 0)
            if "/transfer_" in entry["name"]:
                self.assertGreater(entry["bytes_transferred"], 0, entry["name"])
            seen.add(entry["name"].split("/")[1])
        self.assertEqual(seen, gpu_impls)
        self.assertEqual(len(entries), 3 * 3 * len(gpu_impls))


CONV2D = os.path.join(BUILD_DIR, "bench", "gpubench_conv2d")


@unittest.skipUnless(os.access(CONV2D, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class HeldEngineEndToEnd(unittest.TestCase):
    """Two processes of the convolution study given one held-choices file: the second times the
    engine the first chose, and says it held it."""

    def setUp(self):
        out = subprocess.run([CONV2D, "--describe"], check=True, capture_output=True, text=True).stdout
        gpu = json.loads(out)["gpu"]
        if not gpu["available"]:
            self.skipTest("no GPU: " + gpu["reason"])

    def run_study(self, tmp, held):
        out = os.path.join(tmp, "out.json")
        subprocess.run([CONV2D, "--sizes=7", "--batches=2", "--impls=cudnn_nhwc", "--modes=resident",
                        "--held-choices=" + held, "--benchmark_out_format=json", "--benchmark_out=" + out],
                       check=True, capture_output=True)
        with open(out) as f:
            return {entry["name"]: entry for entry in json.load(f)["benchmarks"]}

    def test_the_second_process_holds_the_first_ones_engines(self):
        with tempfile.TemporaryDirectory() as tmp:
            held = os.path.join(tmp, "held_choices.tsv")
            first = self.run_study(tmp, held)
            with open(held) as f:
                lines = f.read().splitlines()
            second = self.run_study(tmp, held)
        self.assertEqual(len(lines), 3)  # one per precision: fp32, tf32, fp16
        self.assertEqual(first.keys(), second.keys())
        for name, entry in first.items():
            self.assertFalse(entry.get("error_occurred"), name + ": " + entry.get("error_message", ""))
            self.assertEqual(entry["engine_held"], 0, name)
            self.assertEqual(second[name]["engine_held"], 1, name)
            self.assertEqual(second[name]["engine"], entry["engine"], name)
            self.assertIn("held from an earlier process", second[name]["label"], name)


PRECISION = os.path.join(BUILD_DIR, "bench", "gpubench_precision")


@unittest.skipUnless(os.access(PRECISION, os.X_OK) and os.access(STUDY, os.X_OK),
                     "GPUBENCH_BUILD_DIR unset or study binaries not built")
class HeldAlgorithmEndToEnd(unittest.TestCase):
    """Processes of the precision and matmul studies given one held-choices file: later ones time the
    cuBLASLt algorithm the first chose for each problem, and say they held it."""

    def setUp(self):
        if not describe()["gpu"]["available"]:
            self.skipTest("no GPU: " + describe()["gpu"]["reason"])

    @staticmethod
    def run_study(binary, tmp, held):
        out = os.path.join(tmp, "out.json")
        subprocess.run([binary, "--sizes=256", "--impls=cublas", "--modes=resident", "--held-choices=" + held,
                        "--benchmark_min_time=0.01", "--benchmark_out_format=json", "--benchmark_out=" + out],
                       check=True, capture_output=True)
        with open(out) as f:
            entries = {entry["name"]: entry for entry in json.load(f)["benchmarks"]}
        # A format this GPU cannot run (FP8 before compute capability 8.9) is skipped, not timed.
        return {name: entry for name, entry in entries.items()
                if not entry.get("error_message", "").startswith("skipped")}

    def test_later_processes_hold_the_first_ones_algorithms(self):
        with tempfile.TemporaryDirectory() as tmp:
            held = os.path.join(tmp, "held_choices.tsv")
            first = self.run_study(PRECISION, tmp, held)
            with open(held) as f:
                keys = [line.split("\t")[0] for line in f.read().splitlines()]
            second = self.run_study(PRECISION, tmp, held)
            matmul = self.run_study(STUDY, tmp, held)
        self.assertEqual(len(keys), len(first))  # one problem per format
        self.assertIn("cublaslt/fp32/256x256x256/align:256,256,256", keys)
        self.assertEqual(first.keys(), second.keys())
        for name, entry in first.items():
            self.assertFalse(entry.get("error_occurred"), name + ": " + entry.get("error_message", ""))
            self.assertEqual(entry["algorithm_held"], 0, name)
            self.assertIn("the heuristic's first", entry["label"], name)
            self.assertEqual(second[name]["algorithm_held"], 1, name)
            self.assertEqual(second[name]["algorithm"], entry["algorithm"], name)
            self.assertEqual(second[name]["workspace_bytes"], entry["workspace_bytes"], name)
            self.assertIn("held from an earlier process", second[name]["label"], name)
        # matmul's FP32 GEMM is the same problem as precision's: it takes the choice precision made.
        (matmul_entry,) = matmul.values()
        self.assertFalse(matmul_entry.get("error_occurred"), matmul_entry.get("error_message", ""))
        self.assertEqual(matmul_entry["algorithm_held"], 1)
        (precision_fp32,) = [entry for name, entry in first.items() if "/resident/fp32/n:256" in name]
        self.assertEqual(matmul_entry["algorithm"], precision_fp32["algorithm"])


if __name__ == "__main__":
    unittest.main()
