"""The run command over several studies, on stand-in study binaries (a made-up matmul and a
precision binary that replays the hand-written fixture): study
selection, per-study sizes and implementations, progress over both, telemetry, outputs."""
import json
import os
import sys
import tempfile
import textwrap
import unittest

from support import TESTS_DIR, fixture, gpubench_run, load_fixture, write_executable

from gpubench_driver import studies
from gpubench_driver.lib import charts, results
from gpubench_driver.stages import runner

# A study binary that answers --describe from a file (support.described) and runs by replaying Google Benchmark
# objects from another (and their times as its measurements file's samples), honouring the flags
# the driver passes (and refusing unknown ids, as the real binaries do; and --batches in a study
# without a batch axis, which the driver must never pass). With GPUBENCH_FAKE_LOG set, it appends
# its arguments to that file, one JSON line per invocation; with GPUBENCH_FAKE_SLEEP it waits that
# many seconds before it measures (a run to interrupt); with GPUBENCH_FAKE_SKIP every entry is skipped;
# with GPUBENCH_FAKE_PACE it finishes one entry (measurements line, console line) every that many
# seconds and writes its JSON output only at the end, as a process killed midway leaves none.
FAKE_STUDY = textwrap.dedent('''\
    #!{python}
    import json, os, sys
    sys.path.insert(0, {tests!r})
    import support
    args = sys.argv[1:]
    if os.environ.get("GPUBENCH_FAKE_LOG"):
        with open(os.environ["GPUBENCH_FAKE_LOG"], "a") as stream:
            stream.write(json.dumps(args) + "\\n")
    with open({describe!r}) as stream:
        description = json.load(stream)
    def flag(name):
        value = next((a.split("=", 1)[1] for a in args if a.startswith("--" + name + "=")), None)
        return value.split(",") if value else None
    impls, modes, sizes, batches = flag("impls"), flag("modes"), flag("sizes"), flag("batches")
    ids = [impl["id"] for impl in description["implementations"]]
    if any(i not in ids for i in (impls or []) + [c.split("=")[0] for c in flag("caps") or []]):
        print("unknown implementation", file=sys.stderr)
        sys.exit(2)
    if batches is not None and "default_batches" not in description:
        print("--batches: this study has no batch axis", file=sys.stderr)
        sys.exit(2)
    def wanted(run):
        parts = run["run_name"].split("/")
        _, impl, device, mode, _, n = parts[:6]
        batch = parts[6][len("batch:"):] if parts[6].startswith("batch:") else None
        return ((impls is None or impl in impls) and (modes is None or mode in modes)
                and (sizes is None or n[2:] in sizes) and (batches is None or batch in batches)
                and not (device == "gpu" and "--cpu-only" in args))
    with open({benchmarks!r}) as stream:
        runs = [run for run in json.load(stream)["benchmarks"] if wanted(run)]
    if "--describe" in args:
        print(json.dumps(support.described(description, [run["run_name"] for run in runs])))
        sys.exit(0)
    import time
    time.sleep(float(os.environ.get("GPUBENCH_FAKE_SLEEP", "0")))
    if os.environ.get("GPUBENCH_FAKE_SKIP"):
        for run in runs:
            run.update(error_occurred=True, error_message="skipped: does not fit (stand-in)")
    series = next((a.split("=", 1)[1] for a in args if a.startswith("--telemetry-out=")), None)
    if series:  # one NVML sample, as the real binaries write them
        import time
        with open(series, "w") as stream:
            json.dump({{"source": "nvml", "interval_s": 0.1, "samples": [{{
                "t_s": 0.0, "unix_s": time.time(), "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "power_w": 650.5,
                "energy_j": 12.5, "temperature_c": 66, "gpu_util": 100, "mem_util": 50, "memory_used_mib": 1024,
                "reasons": 4}}]}}, stream)
    out = next(a.split("=", 1)[1] for a in args if a.startswith("--benchmark_out="))
    pace = float(os.environ.get("GPUBENCH_FAKE_PACE", "0"))
    def finish(run):
        if pace:
            support.write_measurements(args, [run])
        if run.get("error_occurred"):
            print(run["run_name"] + "  ERROR OCCURRED: '" + run["error_message"] + "'", flush=True)
        elif run.get("repetition_index", 0) == 0 and run.get("run_type") == "iteration":
            counters = "".join(" " + key + "=" + str(run[key]) for key in ("flop", "bytes_transferred") if key in run)
            print(run["run_name"] + "  " + str(run["real_time"]) + " " + run["time_unit"] + "  1" + counters,
                  flush=True)
        time.sleep(pace)
    if not pace:
        with open(out, "w") as stream:
            json.dump({{"context": {{}}, "benchmarks": runs}}, stream)
        support.write_measurements(args, runs)
    for run in runs:
        finish(run)
    if pace:
        with open(out, "w") as stream:
            json.dump({{"context": {{}}, "benchmarks": runs}}, stream)
''')

MATMUL_SIZES = (64, 128, 200, 256, 512, 1024, 4096, 8192)


def matmul_files(directory):
    """A describe and benchmark objects of a made-up matmul study: OpenBLAS and cuBLAS."""
    description = {"study": "matmul", "precision": "fp32", "default_sizes": [64, 128],
                   "points": {"quick": {"sizes": [256]}, "suite": {"sizes": [64, 256, 1024, 4096]},
                              "full": {"sizes": [64, 128]}},
                   "gpu": {"available": True, "reason": None},
                   "implementations": [{"id": "openblas", "device": "cpu", "modes": ["host"]},
                                       {"id": "cublas", "device": "gpu", "modes": ["resident"]}]}
    runs = []
    for n in MATMUL_SIZES:
        for impl, device, mode, suffix, seconds in (("openblas", "cpu", "host", "real_time", 2.0 * n ** 3 / 1e12),
                                                    ("cublas", "gpu", "resident", "manual_time",
                                                     1e-5 + 2.0 * n ** 3 / 5e13)):
            name = f"matmul/{impl}/{device}/{mode}/fp32/n:{n}/{suffix}"
            runs.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
                         "iterations": 10, "real_time": seconds * 1e9, "time_unit": "ns", "flop": 2.0 * n ** 3,
                         "rel_fro_error": 1e-7, "max_rel_error": 1e-6})
    paths = [os.path.join(directory, name) for name in ("matmul_describe.json", "matmul_runs.json")]
    for path, value in zip(paths, (description, {"benchmarks": runs})):
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(value, stream)
    return paths


class FakeMachine:
    """A build directory with stand-in study binaries (each writes one telemetry sample)."""

    def __init__(self, studies=("matmul", "precision")):
        self.directory = tempfile.TemporaryDirectory()
        root = self.directory.name
        self.build_dir = os.path.join(root, "build")
        os.makedirs(os.path.join(self.build_dir, "bench"))
        self.env = dict(os.environ)
        files = {"matmul": matmul_files(root),
                 "precision": (fixture("precision_describe.json"), fixture("gbench_precision.json")),
                 "batched_gemm": (fixture("batched_gemm_describe.json"), fixture("gbench_batched_gemm.json")),
                 "mlp_training": (fixture("mlp_training_describe.json"), fixture("gbench_mlp_training.json")),
                 "conv2d": (fixture("conv2d_describe.json"), fixture("gbench_conv2d.json"))}
        for study in studies:
            describe, benchmarks = files[study]
            write_executable(os.path.join(self.build_dir, "bench", f"gpubench_{study}"),
                             FAKE_STUDY.format(python=sys.executable, tests=TESTS_DIR, describe=describe,
                                                               benchmarks=benchmarks))

    def run(self, *args):
        out = os.path.join(self.directory.name, "run")
        process = gpubench_run("--no-reference", "--out", out, *args,
                               build_dir=self.build_dir, env=self.env)
        return process, out

    def close(self):
        self.directory.cleanup()


def read(path):
    with open(path, encoding="utf-8") as stream:
        return stream.read()


class TwoStudiesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.machine = FakeMachine()
        cls.process, cls.out = cls.machine.run("--sizes", "4096,8192")
        cls.summary = read(os.path.join(cls.out, "summary.md")) if cls.process.returncode == 0 else ""

    @classmethod
    def tearDownClass(cls):
        cls.machine.close()

    def test_exits_cleanly_with_one_progress_count(self):
        self.assertEqual(self.process.returncode, 0, self.process.stdout + self.process.stderr)
        self.assertIn("matmul: 4 entries at 2 sizes", self.process.stdout)
        self.assertIn("precision: 24 entries at 2 sizes", self.process.stdout)
        self.assertIn("[1/28] matmul/", self.process.stdout)
        self.assertIn("[5/28] precision/", self.process.stdout)
        self.assertIn("[28/28] precision/", self.process.stdout)
        # the rate from the flop counter of the console line
        self.assertIn("precision/cublas/gpu/resident/fp32/n:4096  median 7.60 ms  18.08 TFLOP/s", self.process.stdout)

    def test_results_hold_both_studies(self):
        document = results.load(self.out)
        self.assertEqual(document["run"]["status"], "complete")
        self.assertEqual(document["run"]["options"]["studies"], ["matmul", "precision"])
        self.assertEqual(list(document["studies"]), ["matmul", "precision"])
        precision = document["studies"]["precision"]
        self.assertEqual(len(precision["entries"]), 24)
        self.assertEqual(precision["sizes"], [4096, 8192])
        self.assertEqual(precision["precisions"][0]["id"], "fp64")
        statuses = {e["name"]: e["status"] for e in precision["entries"]}
        self.assertEqual(statuses["precision/cublas/gpu/resident/fp8_e4m3/n:8192"], "skipped")
        self.assertEqual(statuses["precision/wmma_kernel/gpu/transfer_pinned/fp16/n:8192"], "error")
        self.assertIsNone(next(e for e in precision["entries"] if e["name"] == "precision/cublas/gpu/resident/int8/"
                               "n:8192")["max_rel_error_normal"])
        self.assertEqual(precision["derived"]["tensor_core_claim"]["results"][0]["n"], 8192)
        self.assertIn("crossovers", document["studies"]["matmul"]["derived"])
        self.assertNotIn("crossovers", precision["derived"])

    def test_entries_name_their_axes_and_traffic(self):
        document = results.load(self.out)
        precision, matmul = document["studies"]["precision"], document["studies"]["matmul"]
        self.assertEqual(precision["axis_names"], {"impl": "impl", "mode": "mode", "precision": "precision",
                                                   "n": "n", "batch": None})
        int8 = next(e for e in precision["entries"] if e["name"] == "precision/cublas/gpu/resident/int8/n:8192")
        self.assertEqual(int8["axes"], {"impl": "cublas", "device": "gpu", "mode": "resident", "precision": "int8",
                                        "n": 8192})  # as its --describe's entries give them
        self.assertEqual((int8["memory_read_bytes"], int8["memory_written_bytes"], int8["h2d_bytes"]),
                         (2 * 8192 ** 2, 4 * 8192 ** 2, 0))
        self.assertIsNone(matmul["axis_names"])  # a binary whose --describe names no axis_names
        self.assertEqual(matmul["entries"][0]["axes"], {"impl": "openblas", "device": "cpu", "mode": "host",
                                                        "precision": "fp32", "n": 4096})
        self.assertIsNone(matmul["entries"][0]["memory_read_bytes"])
        points = {(p["impl"], p["precision"], p["n"]) for p in document["findings"]["roofline"]["points"]}
        self.assertIn(("cublas", "int8", 8192), points)  # placed by the traffic its binary reported

    def test_telemetry_of_each_study(self):
        document = results.load(self.out)
        for study in document["studies"].values():
            telemetry = study["telemetry"]
            self.assertGreaterEqual(len(telemetry["samples"]), 1)
            first = telemetry["samples"][0]
            self.assertEqual((first["sm_clock_mhz"], first["power_w"], first["throttle_reasons"]),
                             (1980, 650.5, ["sw_power_cap"]))
            self.assertEqual(telemetry["summary"]["throttled_fraction"], 1.0)
        self.assertIn("- precision: SM clock 1980–1980 MHz, median 1980 MHz; while busy 1980–1980 MHz",
                      self.summary)
        self.assertIn("power up to 650 W; temperature up to 66 °C; throttled in 100% of samples (sw\\_power\\_cap)",
                      self.summary)

    def test_summary_has_a_part_per_study(self):
        self.assertIn("## Crossover (GPU faster than the best CPU)", self.summary)
        self.assertIn("## Precision: is 16-bit tensor-core math up to 8x faster than FP32?", self.summary)
        self.assertIn("## Precision: speed and accuracy at n = 4096", self.summary)
        self.assertIn("## GPU clocks during each study (NVML)", self.summary)

    @unittest.skipUnless(charts.load_pyplot() is not None, "matplotlib is not installed for this Python")
    def test_plots_of_both_studies(self):
        for name in ("matmul_time", "matmul_rate", "matmul_speedup", "precision_pareto", "precision_rate_16_bit",
                     "precision_rate_32_bit", "precision_rate_8_bit"):
            with open(os.path.join(self.out, "plots", f"{name}.png"), "rb") as stream:
                self.assertEqual(stream.read(4), b"\x89PNG", name)
            self.assertIn(f"`plots/{name}.png`", self.summary)


class SelectionTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine()

    def tearDown(self):
        self.machine.close()

    def assert_usage_error(self, args, text):
        process, _ = self.machine.run(*args)
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertIn(text, process.stderr)

    def test_bad_study_and_implementation_names(self):
        self.assert_usage_error(["--studies", "matmul,bogus"], "--studies: unknown value 'bogus'")
        self.assert_usage_error(["--studies", ""], "--studies")
        self.assert_usage_error(["--impls", "cublas,magic"], "no implementation magic")
        self.assert_usage_error(["--studies", "precision", "--modes", "transfer_pageable"],
                                "no study has anything to run (study precision not run: it has none of the "
                                "implementations or modes selected)")

    def test_implementations_go_to_the_studies_that_have_them(self):
        process, out = self.machine.run("--sizes", "4096", "--impls", "wmma_kernel,openblas")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        document = results.load(out)
        impls = {name: {e["impl"] for e in study["entries"]} for name, study in document["studies"].items()}
        self.assertEqual(impls, {"matmul": {"openblas"}, "precision": {"openblas", "wmma_kernel"}})

    def test_a_study_left_nothing_is_not_run(self):
        process, out = self.machine.run("--sizes", "4096", "--impls", "wmma_kernel")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertIn("WARNING: study matmul not run: it has none of the implementations or modes selected",
                      process.stdout)
        self.assertEqual(list(results.load(out)["studies"]), ["precision"])

    def test_quick_sizes_are_each_studys_own(self):
        process, out = self.machine.run("--quick")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        document = results.load(out)
        matmul, precision = ([256], load_fixture("precision_describe.json")["points"]["quick"]["sizes"])
        self.assertNotEqual(matmul, precision)
        self.assertEqual(document["studies"]["matmul"]["sizes"], list(matmul))
        self.assertEqual(document["studies"]["precision"]["sizes"], list(precision))
        self.assertEqual({e["n"] for e in document["studies"]["matmul"]["entries"]}, set(matmul))


class OtherGpuProcessTest(unittest.TestCase):
    def test_a_process_already_on_the_gpu_is_a_warning(self):
        machine = FakeMachine(studies=("matmul",))
        self.addCleanup(machine.close)
        tools = os.path.join(machine.directory.name, "tools")
        os.makedirs(tools)
        write_executable(os.path.join(tools, "nvidia-smi"), textwrap.dedent("""\
            #!/bin/sh
            case "$*" in *--query-compute-apps*) echo "4242, stranger, 512" ;; esac
            """))
        machine.env["PATH"] = tools + os.pathsep + machine.env.get("PATH", "")
        process, out = machine.run("--sizes", "64", "--no-refine")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        warnings = results.load(out)["warnings"]
        self.assertTrue(any(w.startswith("1 other process(es) on the GPU when the run started: 4242 stranger (512 MiB)")
                            for w in warnings), warnings)
        self.assertTrue(any("after study matmul" in w for w in warnings), warnings)


class MissingBinaryTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine(studies=("matmul",))

    def tearDown(self):
        self.machine.close()

    def test_by_default_a_study_not_built_is_left_out(self):
        process, out = self.machine.run("--sizes", "64")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertIn("WARNING: study precision not run: ", process.stdout)
        self.assertIn("gpubench_precision was not built", process.stdout)
        document = results.load(out)
        self.assertEqual(list(document["studies"]), ["matmul"])
        self.assertIn("gpubench\\_precision was not built", read(os.path.join(out, "summary.md")))

    def test_a_study_asked_for_must_exist(self):
        process, _ = self.machine.run("--studies", "precision")
        self.assertEqual(process.returncode, 1, process.stdout + process.stderr)
        self.assertIn("gpubench_precision does not exist", process.stderr)


class OlderBinaryTest(unittest.TestCase):
    def test_a_binary_whose_describe_lists_no_entries_is_refused(self):
        """A binary built from sources older than the driver: its entries' axes cannot be known."""
        with tempfile.TemporaryDirectory() as directory:
            binary = os.path.join(directory, "gpubench_matmul")
            write_executable(binary, f"#!{sys.executable}\nprint('{{\"implementations\": []}}')\n")
            with self.assertRaises(runner.RunnerError) as caught:
                runner.describe(binary, ["--sizes=64"])
        self.assertEqual(str(caught.exception), f"{binary} --describe printed no 'entries' list")


if __name__ == "__main__":
    unittest.main()
