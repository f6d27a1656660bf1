"""The run command end to end on the built study binary (CPU side, a few seconds), and the
driver's behaviour when the benchmark process crashes or the user interrupts it."""
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

import support
from gpubench_driver import studies
from gpubench_driver.lib import results

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_matmul")
ENTRY = support.ENTRY
# The three CPU baselines named, so that the run has 6 entries however many the study gains.
QUICK_CPU = ["--studies", "matmul", "--cpu-only", "--sizes", "64,100", "--impls", "openblas,blocked_loop,naive_loop"]


def gpubench(*args, build_dir=BUILD_DIR, **kwargs):
    return support.gpubench_run(*args, build_dir=build_dir, **kwargs)


def has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class QuickCpuRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.directory.name, "run")
        cls.process = gpubench("--quick", *QUICK_CPU, "--out", cls.out)

    @classmethod
    def tearDownClass(cls):
        cls.directory.cleanup()

    def test_exits_cleanly_with_progress(self):
        self.assertEqual(self.process.returncode, 0, self.process.stderr)
        self.assertIn("[1/6] matmul/openblas/cpu/host/fp32/n:64", self.process.stdout)
        self.assertIn("[6/6]", self.process.stdout)

    def test_results_json_is_valid_and_verified(self):
        document = results.load(self.out)
        self.assertEqual(document["run"]["status"], "complete")
        entries = document["studies"]["matmul"]["entries"]
        self.assertEqual(len(entries), 6)  # openblas, blocked_loop, naive_loop at 64 and 100
        for entry in entries:
            self.assertEqual(entry["status"], "ok", entry["name"])
            self.assertLess(entry["rel_fro_error"], 1e-5, entry["name"])
            # The time is the binary's own loop's samples, and the driver agrees with it on their median.
            self.assertEqual(entry["protocol"], "cpu", entry["name"])
            self.assertGreaterEqual(len(entry["time_s"]["samples"]), 2, entry["name"])
            self.assertAlmostEqual(entry["time_s"]["median"] / entry["measurement"]["headline"]["median_s"], 1.0,
                                   msg=entry["name"])
            self.assertGreater(entry["flop_per_s"], 0)
        self.assertFalse(document["gpu"]["available"])
        self.assertIsNotNone(document["software"]["openblas"]["core"])
        self.assertEqual(document["run"]["options"]["sizes"], [64, 100])

    def test_plot_and_summary(self):
        with open(os.path.join(self.out, "summary.md"), encoding="utf-8") as stream:
            summary = stream.read()
        self.assertIn("The GPU part was not run: --cpu-only was given", summary)
        self.assertIn("naive\\_loop: run up to n=512", summary)
        if has_matplotlib():
            with open(os.path.join(self.out, "plots", "matmul_rate.png"), "rb") as stream:
                self.assertEqual(stream.read(4), b"\x89PNG")
        else:
            self.assertIn("Plots were skipped", summary)

    def test_an_existing_result_is_never_overwritten(self):
        again = gpubench(*QUICK_CPU, "--out", self.out)
        self.assertEqual(again.returncode, 2)
        self.assertIn("already holds a results.json", again.stderr)


def described(study):
    """What the study's binary says of itself (--describe): a new study needs no line in this test."""
    done = subprocess.run([os.path.join(BUILD_DIR, "bench", f"gpubench_{study}"), "--describe"], capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def gpu_only(description):
    """A study with GPU implementations only: a CPU-only run gives it no entries."""
    return all(impl.get("device") == "gpu" for impl in description["implementations"])


def check_of(description):
    """The counter an ok entry of the study is verified by, from the counters its binary declares: a relative
    error, else a pixel count that differs from the CPU's, else bytes copied and compared byte for byte."""
    counters = description["rules"]["counters"]
    return next(name for name in ("rel_fro_error", "differing_pixels", "bytes_transferred") if name in counters)


def built(study):
    return os.access(os.path.join(BUILD_DIR, "bench", f"gpubench_{study}"), os.X_OK)


@unittest.skipUnless(all(map(built, ("matmul", "precision", "batched_gemm"))), "study binaries not built")
class AllStudiesCpuRunTest(unittest.TestCase):
    """Every real study binary through the driver at tiny sizes, CPU only: the binaries and
    the driver agree on names, counters and flags."""

    def run_studies(self, *args):
        """results.json of a CPU-only run, after checking that every study wrote verified entries."""
        with tempfile.TemporaryDirectory() as directory:
            out = os.path.join(directory, "run")
            process = gpubench("--cpu-only", "--no-refine", "--out", out, *args)
            self.assertEqual(process.returncode, 0, process.stdout[-2000:] + process.stderr[-2000:])
            document = results.load(out)
        for name, study in document["studies"].items():
            ok = [e for e in study["entries"] if e["status"] == "ok"]
            description = described(name)
            if gpu_only(description):
                self.assertEqual(study["entries"], [], name)
                continue
            self.assertTrue(ok, name)
            check = check_of(description)
            for entry in ok:
                if check == "bytes_transferred":  # a copy that differs is an error entry, never ok
                    self.assertGreater(entry["bytes_transferred"], 0, entry["name"])
                elif check == "differing_pixels":
                    self.assertEqual(entry["differing_pixels"], 0, entry["name"])  # the CPU's arithmetic, bit for bit
                else:
                    self.assertIsNotNone(entry["rel_fro_error"], entry["name"])
                    self.assertLessEqual(entry["rel_fro_error"], 1e-2, entry["name"])
            for entry in study["entries"]:  # anything not run says why
                if entry["status"] != "ok":
                    self.assertTrue(entry["message"], entry["name"])
        return document

    def test_every_study_writes_verified_entries(self):
        # One size and one batch: each entry's own loop samples for about a second or more.
        document = self.run_studies("--sizes", "48", "--batches", "3")
        # The convolution's sizes name its layers: none of these does, so it is left out.
        self.assertEqual(set(document["studies"]), {name for name in studies.NAMES if built(name)} - {"conv2d"})
        batched = {(e["impl"], e["n"], e["batch"]) for e in document["studies"]["batched_gemm"]["entries"]}
        self.assertIn(("threads_over_batch", 48, 3), batched)

    @unittest.skipUnless(built("conv2d"), "gpubench_conv2d not built")
    def test_convolution_layers(self):
        study = self.run_studies("--studies", "conv2d", "--sizes", "7", "--batches", "1,2")["studies"]["conv2d"]
        self.assertEqual({(e["impl"], e["batch"]) for e in study["entries"]},
                         {(impl, batch) for impl in ("im2col_openblas_nchw", "im2col_openblas_nhwc")
                          for batch in (1, 2)})
        self.assertEqual(study["layers"][0]["n"], 7)
        self.assertIn("utilization", study["derived"])


class BadInputTest(unittest.TestCase):
    def assert_usage_error(self, process, text):
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertIn(text, process.stderr)

    def test_bad_values(self):
        for args, text in ((["--sizes", "0"], "--sizes"), (["--sizes", "64,abc"], "'abc' is not an integer"),
                           (["--modes", "sideways"], "unknown value 'sideways'"),
                           # the binaries' own loop decides how long to sample: these are gone, not ignored
                           (["--min-time", "0.1"], "unrecognized arguments: --min-time"),
                           (["--repetitions", "3"], "unrecognized arguments: --repetitions"),
                           (["--caps", "naive_loop"], "expected id=N"), (["--run-id", "a/b"], "--run-id"),
                           (["--batches", "0"], "--batches: must be a positive integer"),
                           (["--batches", "1,,8"], "--batches: expected a comma-separated list"),
                           (["--batches", "8,x"], "--batches: 'x' is not an integer"),
                           (["--frobnicate"], "unrecognized arguments")):
            with self.subTest(args=args):
                self.assert_usage_error(gpubench(*args), text)

    @unittest.skipUnless(os.access(STUDY, os.X_OK), "study binary not built")
    def test_unknown_implementation(self):
        with tempfile.TemporaryDirectory() as out:
            self.assert_usage_error(gpubench("--studies", "matmul", "--impls", "magic", "--out", out),
                                    "no implementation magic")

    def test_unknown_command_and_help(self):
        process = subprocess.run(["bash", ENTRY, "frobnicate"], capture_output=True, text=True)
        self.assertEqual(process.returncode, 2)
        for args in (["--help"], ["run", "--help"]):
            process = subprocess.run(["bash", ENTRY, *args], capture_output=True, text=True,
                                     env=dict(os.environ, GPUBENCH_PYTHON=sys.executable))
            self.assertEqual(process.returncode, 0, process.stderr)
            self.assertIn("usage", process.stdout)

    def test_report_on_a_damaged_file(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "results.json")
            with open(path, "w", encoding="utf-8") as stream:
                stream.write('{"schema": "gpubench-results", "run": {')
            process = subprocess.run(["bash", ENTRY, "report", path], capture_output=True, text=True,
                                     env=dict(os.environ, GPUBENCH_PYTHON=sys.executable))
            self.assertEqual(process.returncode, 1)
            self.assertIn("damaged or truncated", process.stderr)


# A stand-in study binary: finishes the n=64 entries, then dies from a signal at n=128 after
# writing one complete benchmark object and measurement line of that size (the rest of each file
# is cut off).
FAKE_STUDY = textwrap.dedent('''\
    #!{python}
    import json, os, signal, sys
    sys.path.insert(0, {tests!r})
    import support
    args = sys.argv[1:]
    sizes = [int(n) for a in args if a.startswith("--sizes=") for n in a.split("=")[1].split(",")]
    names = [f"matmul/{{impl}}/cpu/host/fp32/n:{{n}}" for n in sizes for impl in ("fast", "slow")]
    if "--describe" in args:
        print(json.dumps(support.described({{"study": "matmul", "precision": "fp32", "default_sizes": [64, 128],
                          "gpu": {{"available": False, "reason": "fake"}},
                          "implementations": [{{"id": i, "device": "cpu", "modes": ["host"]}} for i in ("fast", "slow")]}},
                          names)))
        sys.exit(0)
    out = next(a.split("=", 1)[1] for a in args if a.startswith("--benchmark_out="))
    def run(name):
        return {{"name": name + "/real_time", "run_name": name + "/real_time", "run_type": "iteration",
                "repetitions": 1, "iterations": 10, "real_time": 1000.0, "time_unit": "ns",
                "flop": 524288.0, "rel_fro_error": 1e-7, "max_rel_error": 1e-6}}
    with open(out, "w") as stream:
        if sizes == [64]:
            runs = [run(n) for n in names]
            json.dump({{"context": {{}}, "benchmarks": runs}}, stream)
            support.write_measurements(args, runs)
            sys.exit(0)
        stream.write('{{"context": {{}}, "benchmarks": [' + json.dumps(run(names[0])) + ', {{"name": "cut')
    support.write_measurements(args, [run(names[0])])
    with open(support.measurements_path(args), "a") as stream:
        stream.write('{{"name": "' + names[1] + '", "measurement": {{"protocol": "cpu", "headline": {{"samp')
    os.kill(os.getpid(), signal.SIGSEGV)
''')


class CrashTest(unittest.TestCase):
    def test_a_crash_keeps_every_finished_entry(self):
        with tempfile.TemporaryDirectory() as directory:
            build_dir = os.path.join(directory, "build")
            os.makedirs(os.path.join(build_dir, "bench"))
            fake = os.path.join(build_dir, "bench", "gpubench_matmul")
            with open(fake, "w", encoding="utf-8") as stream:
                stream.write(FAKE_STUDY.format(python=sys.executable, tests=support.TESTS_DIR))
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
            out = os.path.join(directory, "run")
            process = gpubench("--sizes", "64,128", "--no-refine", "--no-reference", "--out", out, build_dir=build_dir)
            self.assertEqual(process.returncode, 1, process.stdout + process.stderr)
            self.assertIn("killed by signal SIGSEGV", process.stdout, process.stderr)
            document = results.load(out)
            self.assertEqual(document["run"]["status"], "partial")
            status = {e["name"]: e["status"] for e in document["studies"]["matmul"]["entries"]}
            self.assertEqual(status, {"matmul/fast/cpu/host/fp32/n:64": "ok", "matmul/slow/cpu/host/fp32/n:64": "ok",
                                      "matmul/fast/cpu/host/fp32/n:128": "ok",
                                      "matmul/slow/cpu/host/fp32/n:128": "error"})
            [invocation] = document["studies"]["matmul"]["invocations"]
            self.assertEqual(invocation["unfinished"], ["matmul/slow/cpu/host/fp32/n:128"])


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class InterruptTest(unittest.TestCase):
    def test_ctrl_c_keeps_finished_entries(self):
        with tempfile.TemporaryDirectory() as directory:
            out = os.path.join(directory, "run")
            # naive_loop at 512 takes a fraction of a second per call: time to interrupt after n=64.
            command = ["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", BUILD_DIR, "--trials", "1", "--cpu-only",
                       "--studies", "matmul", "--sizes", "64,512", "--impls", "naive_loop", "--out", out]
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       start_new_session=True, env=dict(os.environ, GPUBENCH_PYTHON=sys.executable))
            for line in process.stdout:
                if line.startswith("[1/2]"):
                    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole group
                    break
            process.communicate(timeout=120)
            self.assertEqual(process.returncode, 130)
            document = results.load(out)
            self.assertEqual(document["run"]["status"], "interrupted")
            entries = {e["name"]: e for e in document["studies"]["matmul"]["entries"]}
            self.assertEqual(entries["matmul/naive_loop/cpu/host/fp32/n:64"]["status"], "ok")
            self.assertTrue(os.path.exists(os.path.join(out, "summary.md")))


if __name__ == "__main__":
    unittest.main()
