"""Reference timings: comparison rows for the precision study's dtypes next to the matmul ones,
the study's measurement protocol handed to the scripts, and reference_matmul.py turning a dtype it
cannot run into a note."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import support
from support import make_entry

from gpubench_driver.lib import results
from gpubench_driver.stages import reference, session


def script(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(support.SCRIPTS_DIR, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference_matmul = script("reference_matmul")
with open(support.fixture("measurement_protocol.json"), encoding="utf-8") as stream:
    PROTOCOL = json.load(stream)


def torch_result(n, dtype, median_s):
    return {"library": "torch", "n": n, "dtype": dtype, "time_s": {"median": median_s}}


def precision_entry(precision, n, median_s, mode="resident"):
    entry = make_entry("cublas", "gpu", mode, n, median_s)
    entry["precision"] = precision
    return entry


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.references = {
            "torch": {"results": [torch_result(4096, "float32", 2.0e-3)]},
            "torch_precision": {"results": [torch_result(8192, "float16", 2.0e-3),
                                            torch_result(8192, "float8_e4m3fn", 1.0e-3),
                                            torch_result(8192, "bfloat16", 2.0e-3)], "notes": []}}
        self.entries = [precision_entry("fp16", 8192, 1.8e-3), precision_entry("fp8_e4m3", 8192, 1.1e-3),
                        precision_entry("tf32", 8192, 3.0e-3),
                        precision_entry("fp16", 8192, 9.9, mode="transfer_pinned"),
                        precision_entry("fp32", 8192, 9.9)]

    def rows(self, study, entries):
        return {(row["precision"], row["n"]): row for row in reference.compare(self.references, entries, study)}

    def test_each_precision_against_torch_of_the_same_dtype(self):
        rows = self.rows("precision", self.entries)
        # Points neither side measured (every precision at 4096) have no row.
        self.assertEqual(set(rows), {(p, 8192) for p in ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3")})
        fp16 = rows[("fp16", 8192)]
        self.assertEqual((fp16["study"], fp16["reference"], fp16["reference_dtype"]),
                         ("cublas/resident", "torch", "float16"))
        self.assertAlmostEqual(fp16["time_ratio"], 0.9)  # the resident entry, not the transfer_pinned one
        fp8 = rows[("fp8_e4m3", 8192)]
        self.assertEqual((fp8["reference"], fp8["reference_dtype"]), ("torch._scaled_mm", "float8_e4m3fn"))
        self.assertAlmostEqual(fp8["time_ratio"], 1.1)

    def test_missing_sides_are_noted(self):
        rows = self.rows("precision", self.entries)
        self.assertIsNone(rows[("bf16", 8192)]["time_ratio"])
        self.assertIn("no ok cublas/resident bf16 entry at n=8192", rows[("bf16", 8192)]["note"])
        self.assertIn("no torch tf32 reference at n=8192", rows[("tf32", 8192)]["note"])

    def test_matmul_rows_stay_fp32_and_apart(self):
        entries = [make_entry("cublas", "gpu", "resident", 4096, 1.0e-3)]
        rows = {(row["study"], row["precision"], row["n"]): row
                for row in reference.compare(self.references, entries, "matmul")}
        self.assertEqual(set(rows), {("cublas/resident", "fp32", 4096)})  # neither side measured the rest
        self.assertAlmostEqual(rows[("cublas/resident", "fp32", 4096)]["time_ratio"], 0.5)
        self.assertEqual(rows[("cublas/resident", "fp32", 4096)]["reference"], "torch")
        self.assertEqual(reference.compare(self.references, entries, "other"), [])


class RunReferencesTest(unittest.TestCase):
    def test_gpu_runs_are_skipped_without_a_gpu(self):
        self.assertEqual(reference.run_references("precision", with_gpu=False, protocol=PROTOCOL),
                         {"torch_precision": {"note": "skipped: the GPU part of the study was not run"}})

    def test_each_study_runs_its_own(self):
        with mock.patch.object(reference, "run_library", side_effect=lambda run, protocol: {"called": run}):
            runs = reference.run_references("precision", with_gpu=True, protocol=PROTOCOL)
            self.assertEqual(runs["torch_precision"]["called"].args, ("torch", "4096,8192",
                                                                      "float32,tf32,float16,bfloat16,float8_e4m3fn"))
            self.assertEqual(set(reference.run_references("matmul", with_gpu=True, protocol=PROTOCOL)),
                             {"numpy", "torch"})
            self.assertEqual(runs["torch_precision"]["called"].script, "reference_matmul.py")

    def test_without_the_studys_protocol_a_run_fails_saying_why(self):
        with mock.patch.object(reference, "run_library") as run_library:
            runs = reference.run_references("matmul", with_gpu=False, protocol=None)
        run_library.assert_not_called()
        self.assertEqual(runs["numpy"], {"note": "failed: the study binary does not publish its measurement protocol "
                                                 "('measurement' in its --describe), by which its reference is timed"})
        self.assertEqual(runs["torch"], {"note": "skipped: the GPU part of the study was not run"})

    def test_the_batch_studies_scripts_and_arguments(self):
        conv = reference.RUNS["conv2d"]["torch_conv2d"]
        self.assertEqual((conv.library, conv.script, conv.args, conv.gpu), (
            "torch", "reference_conv2d.py", ("torch", "56,28,14,7", "1,32,256", "float32,tf32,float16", "nchw,nhwc"),
            True))
        mlp = reference.RUNS["mlp_training"]["torch_mlp"]
        self.assertEqual((mlp.script, mlp.args), ("reference_mlp.py", ("torch", "256,1024,8192", "float32,bf16_mixed")))
        self.assertNotIn("batched_gemm", reference.RUNS)

    def test_a_run_calls_its_script_with_its_arguments(self):
        printed = json.dumps({"results": [{"n": 56}], "notes": ["x"]})
        done = subprocess.CompletedProcess("script", 0, printed, "")
        with mock.patch.object(reference, "find_interpreter", return_value="/usr/bin/python3"), \
                mock.patch.object(reference, "_WORKERS", {"/usr/bin/python3": mock.Mock(alive=True)}) as workers, \
                mock.patch("builtins.print"):
            workers["/usr/bin/python3"].run.return_value = done
            run = reference.run_library(reference.RUNS["conv2d"]["torch_conv2d"], PROTOCOL)
        script, arguments, _ = workers["/usr/bin/python3"].run.call_args[0]
        self.assertEqual(script, os.path.join(support.SCRIPTS_DIR, "reference_conv2d.py"))
        self.assertEqual(arguments[0], "--protocol")
        self.assertEqual(json.loads(arguments[1]), PROTOCOL)  # the study's own, as its --describe gave it
        self.assertEqual(arguments[2:], ["torch", "56,28,14,7", "1,32,256", "float32,tf32,float16", "nchw,nhwc"])
        self.assertEqual(run, {"python": "/usr/bin/python3", "results": [{"n": 56}], "notes": ["x"]})

    def test_a_run_that_starts_processes_of_its_own_runs_alone(self):
        printed = json.dumps({"results": [], "notes": []})
        with mock.patch.object(reference, "find_interpreter", return_value="/usr/bin/python3"), \
                mock.patch.object(reference.stopping, "run", return_value=mock.Mock(returncode=0, stdout=printed)) \
                as called, mock.patch("builtins.print"):
            reference.run_library(reference.RUNS["collectives"]["torch_allreduce"], PROTOCOL)
        self.assertEqual(called.call_args[0][0][:3], ["/usr/bin/python3", os.path.join(
            support.SCRIPTS_DIR, "reference_allreduce.py"), "--protocol"])

    def test_without_an_interpreter(self):
        with mock.patch.object(reference, "find_interpreter", return_value=None):
            self.assertEqual(reference.run_library(reference.RUNS["mlp_training"]["torch_mlp"], PROTOCOL), {
                "note": "skipped: no Python interpreter with PyTorch with a usable CUDA device was found"})


class WorkerTest(unittest.TestCase):
    """scripts/reference_worker.py: the scripts of a run in one interpreter, each as if run on its own."""

    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.addCleanup(self.folder.cleanup)
        self.worker = reference.Worker(sys.executable)
        self.addCleanup(self.worker.close)

    def script(self, name, text):
        return support.write_text(self.folder.name, name, text)

    def test_scripts_share_the_interpreter_and_keep_their_own_argv_output_and_exit(self):
        first = self.script("first.py", "import os, sys\nsys.modules['imported_once'] = os\n"
                                        "print(os.getpid(), sys.argv[1:])\nsys.exit(3)\n")
        second = self.script("second.py", "import os, sys\nprint(os.getpid(), 'imported_once' in sys.modules)\n"
                                          "print('to stderr', file=sys.stderr)\n")
        one = self.worker.run(first, ["a", "b"], 60)
        two = self.worker.run(second, [], 60)
        self.assertEqual(one.returncode, 3)
        pid, argv = one.stdout.split(" ", 1)
        self.assertEqual(argv.strip(), "['a', 'b']")
        self.assertEqual(two.stdout.split(), [pid, "True"])
        self.assertEqual((two.returncode, two.stderr), (0, "to stderr\n"))
        self.assertEqual(int(pid), self.worker.process.pid)

    def test_a_script_that_fails_is_its_own_failure(self):
        failing = self.script("failing.py", "raise RuntimeError('no GPU here')\n")
        quiet = self.script("quiet.py", "print('still here')\n")
        failed = self.worker.run(failing, [], 60)
        self.assertEqual(failed.returncode, 1)
        self.assertIn("RuntimeError: no GPU here", failed.stderr)
        self.assertEqual(self.worker.run(quiet, [], 60).stdout, "still here\n")

    def test_a_script_over_its_time_ends_the_worker(self):
        slow = self.script("slow.py", "import time\ntime.sleep(60)\n")
        with self.assertRaises(subprocess.TimeoutExpired):
            self.worker.run(slow, [], 0.5)
        self.assertFalse(self.worker.alive)

    def test_a_script_that_ends_the_interpreter_is_a_failure(self):
        ending = self.script("ending.py", "import os\nos._exit(7)\n")
        ended = self.worker.run(ending, [], 60)
        self.assertNotEqual(ended.returncode, 0)
        self.assertFalse(self.worker.alive)

    def test_the_runs_workers_are_its_own_and_closed_at_its_end(self):
        with mock.patch.object(reference, "_WORKERS", {"python": self.worker}):
            self.assertEqual(reference.worker_pids(), {self.worker.process.pid})
            reference.close_workers()
            self.assertEqual(reference.worker_pids(), set())
        self.assertFalse(self.worker.alive)


class SessionTest(unittest.TestCase):
    def test_the_protocol_comes_from_the_studys_description(self):
        """The study's --describe 'measurement', kept in its record, is what its references are timed by."""
        record = results.new_study({"implementations": [], "measurement": PROTOCOL}, [4096])
        study = mock.Mock(record=record, options=mock.Mock(sizes=[4096], batches=None))
        study.name = "matmul"
        document = {"references": None, "gpu": {"available": True}}
        with mock.patch.object(reference, "run_references", return_value={"torch": {"note": "x"}}) as run_references:
            session.finish_study(study, document, mock.Mock(reference=True, cpu_only=True))
        study.refine.assert_called_once_with()
        run_references.assert_called_once_with("matmul", with_gpu=True, protocol=PROTOCOL, sizes=[4096],
                                                batches=None)
        self.assertEqual(document["references"], {"torch": {"note": "x"}})


class ReferenceScriptTest(unittest.TestCase):
    def run_main(self, argv, timer=None):
        with mock.patch.object(reference_matmul, "time_torch", timer), mock.patch("builtins.print") as printed:
            status = reference_matmul.main(["--protocol", json.dumps(PROTOCOL), *argv])
        return status, json.loads(printed.call_args[0][0]) if status == 0 else None

    def test_an_unsupported_dtype_becomes_a_note(self):
        def timer(n, dtype, protocol):
            if dtype == "float8_e4m3fn":
                raise RuntimeError("torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0"
                                   " or 8.9\nmore detail")
            return {"n": n, "dtype": dtype}
        status, output = self.run_main(["torch", "4096,8192", "float16,float8_e4m3fn"], timer)
        self.assertEqual(status, 0)
        self.assertEqual([(r["dtype"], r["n"]) for r in output["results"]], [("float16", 4096), ("float16", 8192)])
        self.assertEqual(len(output["notes"]), 2)
        self.assertTrue(output["notes"][0].startswith("float8_e4m3fn at n=4096: not run: torch._scaled_mm is only"))
        self.assertNotIn("more detail", output["notes"][0])

    def test_the_result_names_the_library_torch_matmul_dispatches_to(self):
        backend = mock.Mock()
        backend.name = "Cublas"
        torch = mock.Mock(float32="f32", float16="f16")
        torch.backends.cuda.preferred_blas_library.return_value = backend
        _, details = reference_matmul.matmul_operation(torch, mock.Mock(), mock.Mock(), "float16")
        self.assertEqual(details, {"op": "torch.matmul", "blas_library": "cublas"})
        del torch.backends.cuda.preferred_blas_library  # an older torch
        self.assertIsNone(reference_matmul.blas_library(torch))

    def test_default_dtype_is_float32(self):
        status, output = self.run_main(["torch", "64"], lambda n, dtype, protocol: {"n": n, "dtype": dtype})
        self.assertEqual(output, {"results": [{"n": 64, "dtype": "float32"}], "notes": []})

    def test_the_protocol_reaches_the_timing(self):
        status, output = self.run_main(["torch", "64"], lambda n, dtype, protocol: {"warmup": protocol["warmup"]})
        self.assertEqual(output["results"], [{"warmup": PROTOCOL["warmup"]}])

    def test_every_script_wants_the_protocol_first(self):
        for name in ("reference_matmul", "reference_conv2d", "reference_mlp", "reference_transfer",
                     "reference_allreduce"):
            with mock.patch("sys.stderr") as stderr:
                self.assertEqual(script(name).main(["torch", "64"]), 2, name)
            self.assertIn(f"{name}.py: the first arguments must be --protocol JSON",
                          "".join(call.args[0] for call in stderr.write.call_args_list))

    def test_bad_arguments(self):
        protocol = ["--protocol", json.dumps(PROTOCOL)]
        with mock.patch("sys.stderr"):
            for argv in (protocol + ["torch", "64", "float9"], protocol + ["numpy", "64", "float16"],
                         protocol + ["jax", "64"], protocol, ["torch", "64"], []):
                self.assertEqual(reference_matmul.main(argv), 2, argv)


class NarrowedReferenceTest(unittest.TestCase):
    def test_only_the_layers_and_batches_the_study_ran(self):
        run = reference.RUNS["conv2d"]["torch_conv2d"]
        narrowed = reference._narrowed(run, [7, 14, 56], [1, 4, 16, 64, 256])
        self.assertEqual(narrowed.args[:3], ("torch", "56,14,7", "1,256"))
        self.assertEqual(narrowed.args[3:], run.args[3:])
        self.assertEqual(reference._narrowed(run, None, None), run)  # nothing known: everything

    def test_sizes_and_batches_of_the_other_studies(self):
        self.assertEqual(reference._narrowed(reference.RUNS["precision"]["torch_precision"], [1024, 4096], None).args[1],
                         "4096")
        self.assertEqual(reference._narrowed(reference.RUNS["mlp_training"]["torch_mlp"], [1024], [1, 256, 8192]).args[1],
                         "256,8192")

    def test_nothing_in_common_runs_nothing(self):
        run = reference.RUNS["conv2d"]["torch_conv2d"]
        self.assertIsNone(reference._narrowed(run, [7], [2, 8]))
        self.assertEqual(reference.run_references("conv2d", with_gpu=True, protocol=PROTOCOL, sizes=[7], batches=[2]),
                         {"torch_conv2d": {"note": "skipped: the study ran none of the reference's sizes or batches"}})

if __name__ == "__main__":
    unittest.main()
