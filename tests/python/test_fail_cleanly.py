"""Bad input fails cleanly: a clear message and an exit status, never a traceback, and nothing
written where it does not belong (bad --out and --run-id said before the build; hostile results
files refused)."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import unittest.mock

from support import ENTRY, fixture, write_text
from test_run_studies import FakeMachine

from gpubench_driver.lib import stopping


def gpubench(*args):
    return subprocess.run(["bash", ENTRY, *args], capture_output=True, text=True, timeout=300)


class BadOutputTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine(studies=("matmul",))
        self.addCleanup(self.machine.close)
        self.root = self.machine.directory.name

    def refused(self, *args):
        process, _ = self.machine.run("--sizes", "64", *args)
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertNotIn("Traceback", process.stdout + process.stderr)
        return process.stderr

    def test_out_naming_a_file(self):
        path = os.path.join(self.root, "a-file")
        open(path, "w").close()
        self.assertIn("exists and is not a folder", self.refused("--out", path))

    def test_out_that_cannot_be_created(self):
        self.assertIn("cannot create /proc/gpubench-forbidden", self.refused("--out", "/proc/gpubench-forbidden/x"))

    def test_run_ids_that_leave_results(self):
        for run_id in ("..", ".", "a/b"):
            self.assertIn("--run-id", self.refused("--run-id", run_id))

    def test_a_run_that_measured_nothing_says_so_and_fails(self):
        self.machine.env["GPUBENCH_FAKE_SKIP"] = "1"
        process, out = self.machine.run("--sizes", "64", "--no-refine")
        self.assertEqual(process.returncode, 1, process.stdout + process.stderr)
        self.assertIn("nothing was measured: every entry was skipped or failed", process.stdout)
        with open(os.path.join(out, "results.json"), encoding="utf-8") as stream:
            self.assertEqual(json.load(stream)["run"]["status"], "empty")
        with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
            summary = stream.read()
        self.assertIn("matmul/openblas/cpu/host/fp32/n:64: skipped: does not fit (stand-in)", summary)
        self.assertNotIn("skipped: skipped:", summary)

    def test_no_empty_folder_is_left_when_nothing_could_run(self):
        out = os.path.join(self.root, "never")
        process, _ = self.machine.run("--sizes", "64", "--studies", "matmul", "--impls", "nothing_like_it",
                                      "--out", out)
        self.assertNotEqual(process.returncode, 0)
        self.assertFalse(os.path.exists(out))


class SizeRangeTest(unittest.TestCase):
    """A size or batch the study binary would refuse is the driver's usage error before anything runs:
    the range is the one the binary's --describe states (size_range, batch_range), or for a binary
    that states none, what its option parser reads (an int)."""

    def machine(self, studies, **ranges):
        machine = FakeMachine(studies=studies)
        self.addCleanup(machine.close)
        if ranges:  # the stand-in matmul answers --describe from this file
            path = os.path.join(machine.directory.name, "matmul_describe.json")
            with open(path, encoding="utf-8") as stream:
                description = json.load(stream)
            description.update(ranges)
            with open(path, "w", encoding="utf-8") as stream:
                json.dump(description, stream)
        return machine

    def refused(self, machine, *args):
        out = os.path.join(machine.directory.name, "never")
        log = os.path.join(machine.directory.name, "invocations.jsonl")
        machine.env["GPUBENCH_FAKE_LOG"] = log
        process, _ = machine.run("--no-refine", "--out", out, *args)
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertNotIn("Traceback", process.stderr)
        self.assertEqual(len(process.stderr.strip().splitlines()), 1, process.stderr)
        self.assertFalse(os.path.exists(out))
        with open(log, encoding="utf-8") as stream:  # the binaries were only asked to describe themselves
            self.assertEqual({tuple(json.loads(line)) for line in stream}, {("--describe",)})
        return process.stderr

    def test_a_size_beyond_what_the_parser_reads(self):
        message = self.refused(self.machine(("matmul",)), "--sizes", "64,1099511627776")
        self.assertIn("--sizes: 1099511627776 is out of range for study matmul (it takes 1 to 2147483647)", message)

    def test_a_size_beyond_the_range_the_binary_describes(self):
        machine = self.machine(("matmul",), size_range={"min": 1, "max": 8192})
        message = self.refused(machine, "--sizes", "64,16384")
        self.assertIn("--sizes: 16384 is out of range for study matmul (it takes 1 to 8192)", message)
        process, _ = machine.run("--no-refine", "--sizes", "8192")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)

    def test_a_batch_beyond_the_range_the_binary_describes(self):
        machine = self.machine(("batched_gemm",))
        message = self.refused(machine, "--batches", "1,4294967296")
        self.assertIn("--batches: 4294967296 is out of range for study batched_gemm (it takes 1 to 2147483647)",
                      message)


class SignalTest(unittest.TestCase):
    """kill PID of the launcher reaches the driver (the launcher execs it), and SIGTERM or SIGHUP stop
    the run as Ctrl-C does: the benchmark process stopped, the results written, exit status 130."""

    def interrupted_run(self, signum):
        machine = FakeMachine(studies=("matmul",))
        self.addCleanup(machine.close)
        out = os.path.join(machine.directory.name, "run")
        env = dict(machine.env, GPUBENCH_FAKE_SLEEP="30", GPUBENCH_PYTHON=sys.executable)
        process = subprocess.Popen(["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", machine.build_dir,
                                    "--no-reference", "--sizes", "64", "--out", out], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.exists(os.path.join(out, "results.json")):
            time.sleep(0.1)  # the driver writes results.json before the first benchmark process starts
        with open(f"/proc/{process.pid}/cmdline", "rb") as stream:
            self.assertIn(b"gpubench_driver", stream.read())  # the launcher's PID is the driver now
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=60)
        return process.returncode, stdout, stderr, out

    def test_sigterm_and_sighup_stop_like_ctrl_c(self):
        for signum in (signal.SIGTERM, signal.SIGHUP):
            status, stdout, stderr, out = self.interrupted_run(signum)
            self.assertEqual(status, 130, stdout + stderr)
            self.assertIn("interrupted: writing what finished", stdout)
            self.assertNotIn("Traceback", stderr)
            with open(os.path.join(out, "results.json"), encoding="utf-8") as stream:
                self.assertEqual(json.load(stream)["run"]["status"], "interrupted")
            self.assertTrue(os.path.exists(os.path.join(out, "summary.md")))

    def test_a_stop_during_the_final_write_waits_for_it(self):
        """SIGINT once every entry is measured (results.json says complete; the findings' summary and plots
        are being written) stops the driver only once they are written: status, exit status, summary and
        plots agree (it stopped with exit status 130, results.json saying complete, no summary, no plots)."""
        machine = FakeMachine(studies=("matmul",))
        self.addCleanup(machine.close)
        out = os.path.join(machine.directory.name, "run")
        process = subprocess.Popen(["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", machine.build_dir,
                                    "--no-reference", "--no-refine", "--trials", "1", "--sizes", "64,128",
                                    "--out", out], env=dict(machine.env, GPUBENCH_PYTHON=sys.executable),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: process.poll() is None and (process.kill(), process.communicate()))
        results_path = os.path.join(out, "results.json")
        deadline = time.monotonic() + 120
        # The final write saves results.json with the run's status first (atomically: always whole),
        # then draws the plots and writes the summary.
        while run_status(results_path) != "complete":
            self.assertIsNone(process.poll(), "the run ended before the test saw its final write")
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.005)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
        for name in ("summary.md", "summary.html"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), f"no {name}: {stdout}{stderr}")
        if importlib.util.find_spec("matplotlib"):
            self.assertTrue(os.listdir(os.path.join(out, "plots")), "no plots")
        self.assertEqual(run_status(results_path), "complete")
        self.assertEqual(process.returncode, 0, stdout + stderr)  # the run completed: its status's exit status
        self.assertIn("SIGINT: stopping once", stdout)
        self.assertNotIn("Traceback", stdout + stderr)


def run_status(results_path):
    """results.json's run status; None before it is written."""
    try:
        with open(results_path, encoding="utf-8") as stream:
            return json.load(stream)["run"]["status"]
    except FileNotFoundError:
        return None


class DeferredStopTest(unittest.TestCase):
    def test_a_stop_signal_is_noted_not_raised_and_the_handlers_come_back(self):
        before = signal.getsignal(signal.SIGINT)
        with stopping.DeferredStop("the test's files are") as block:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)  # the handlers run between bytecodes
        self.assertEqual(block.received, "SIGINT")  # the first
        self.assertIs(signal.getsignal(signal.SIGINT), before)


class ForkTest(unittest.TestCase):
    """A stop signal that comes while the driver forks a child is acted on once the child exists (one that
    lands in the interpreter's fork hooks is otherwise printed as ignored and lost)."""

    def test_a_stop_during_the_fork_is_delivered_after_it_to_both(self):
        forked = []

        class Child:
            def __init__(self, command, **kwargs):
                os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C while Popen runs the fork hooks
                time.sleep(0.05)  # a handler that could run would run here, between bytecodes
                forked.append(command)
                self.signals = []

            def send_signal(self, signum):
                self.signals.append(signum)

        with unittest.mock.patch.object(stopping.subprocess, "Popen", Child):
            with self.assertRaises(KeyboardInterrupt):
                stopping.popen(["true"])
        self.assertEqual(forked, [["true"]])  # the stop waited for the fork to finish
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)

    def test_run_returns_what_the_child_wrote_and_kills_it_on_a_timeout(self):
        self.assertEqual(stopping.run(["echo", "x"], capture_output=True, text=True).stdout, "x\n")
        with self.assertRaises(subprocess.TimeoutExpired):
            stopping.run(["sleep", "30"], timeout=0.2)


class UnknownFlagTest(unittest.TestCase):
    def test_an_unknown_flag_shows_its_commands_usage(self):
        for command, args in (("run", ("--no-setup",)), ("report", ("x.json",)), ("compare", ("x.json", "y.json"))):
            process = gpubench(command, *args, "--bogus")
            self.assertEqual(process.returncode, 2, command)
            self.assertIn(f"usage: gpubench {command} ", process.stderr)
            self.assertIn("unrecognized arguments: ", process.stderr)


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")


@unittest.skipUnless(os.access(os.path.join(BUILD_DIR, "bench", "gpubench_precision"), os.X_OK),
                     "GPUBENCH_BUILD_DIR unset or the study binaries not built")
@unittest.skipIf(os.path.exists("/proc/driver/nvidia/version"), "this machine has an NVIDIA driver")
class NoGpuReportTest(unittest.TestCase):
    """On a machine without a GPU the report says so once, and shows nothing the run did not measure."""

    def test_no_gpu_stubs(self):
        with tempfile.TemporaryDirectory() as directory:
            out = os.path.join(directory, "run")
            process = gpubench("run", "--no-setup", "--no-build", "--build-dir", BUILD_DIR, "--studies",
                               "matmul,precision", "--sizes", "64", "--no-refine", "--out", out)
            self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
            with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
                summary = stream.read()
        self.assertEqual(summary.count("no NVIDIA GPU driver is loaded on this machine"), 1, summary)
        self.assertNotIn("CUDA driver version is insufficient", summary)
        self.assertNotIn("GPU clocks during each study", summary)
        self.assertNotIn("cublas/resident n/a", summary)


class HostileFileTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)

    def write(self, name, text):
        return write_text(self.directory.name, name, text)

    def test_deeply_nested_json_is_refused_everywhere(self):
        path = self.write("deep.json", "[" * 100000 + "]" * 100000)
        out = os.path.join(self.directory.name, "out")
        for args in (("report", path, "--out", out), ("compare", path, path, "--out", out),
                     ("run", "--no-setup", "--no-build", "--like", path)):
            process = gpubench(*args)
            self.assertEqual(process.returncode, 1, args)
            self.assertIn("nests its JSON too deeply", process.stderr, args)
            self.assertNotIn("Traceback", process.stderr, args)

    def test_negative_times_and_rates_are_refused(self):
        machine = FakeMachine(studies=("matmul",))
        self.addCleanup(machine.close)
        process, out = machine.run("--sizes", "64", "--no-refine")
        self.assertEqual(process.returncode, 0, process.stderr)
        with open(os.path.join(out, "results.json"), encoding="utf-8") as stream:
            good = json.load(stream)
        for field, value in (("min", -2.55e-3), ("stddev", -1.0)):
            damaged = json.loads(json.dumps(good))
            damaged["studies"]["matmul"]["entries"][0]["time_s"][field] = value
            process = gpubench("report", self.write(f"{field}.json", json.dumps(damaged)), "--out",
                               os.path.join(self.directory.name, field))
            self.assertEqual(process.returncode, 1, field)
            self.assertIn(f"time_s.{field}", process.stderr)
        damaged = json.loads(json.dumps(good))
        damaged["studies"]["matmul"]["entries"][0]["flop_per_s"] = -38.62
        process = gpubench("report", self.write("rate.json", json.dumps(damaged)), "--out",
                           os.path.join(self.directory.name, "rate"))
        self.assertIn("flop_per_s: expected zero or more", process.stderr)

    def hostile_documents(self):
        """results_v1.json with one hostile value each: (what, path of the file, the field refused)."""
        with open(fixture("results_v1.json"), encoding="utf-8") as stream:
            good = json.load(stream)
        entries = lambda d: d["studies"]["matmul"]["entries"]  # noqa: E731
        def duplicated(d):
            twin = json.loads(json.dumps(entries(d)[3]))
            twin["time_s"]["median"] *= 4511
            entries(d).append(twin)
        for what, change, field in (
                ("size", lambda d: entries(d)[3].update(n=10 ** 400), "studies.matmul.entries[3].n"),
                ("time", lambda d: entries(d)[3]["time_s"].update(median=1e308),
                 "studies.matmul.entries[3].time_s.median"),
                ("duplicate", duplicated, "studies.matmul.entries[24].name")):
            document = json.loads(json.dumps(good))
            change(document)
            yield what, self.write(f"{what}.json", json.dumps(document)), field

    def test_hostile_values_are_refused_by_every_command(self):
        out = os.path.join(self.directory.name, "out")
        ranges = os.path.join(self.directory.name, "expected_ranges.json")
        good = fixture("results_v1.json")
        for what, path, field in self.hostile_documents():
            for args in (("report", path, "--out", out), ("compare", good, path, "--out", out),
                         ("rank", path, "--out", out), ("expected", path, "--file", ranges),
                         ("run", "--no-setup", "--no-build", "--like", path, "--out", out)):
                with self.subTest(what=what, command=args[0]):
                    process = gpubench(*args)
                    self.assertEqual(process.returncode, 1, process.stdout + process.stderr)
                    self.assertNotIn("Traceback", process.stderr)
                    self.assertEqual(len(process.stderr.strip().splitlines()), 1, process.stderr[-2000:])
                    self.assertIn(f"{path} is not a valid gpubench results file: {field}: ", process.stderr)
                    self.assertFalse(os.path.exists(out) or os.path.exists(ranges))

    def test_a_long_warning_is_cut_not_copied_into_the_summary(self):
        with open(fixture("results_v1.json"), encoding="utf-8") as stream:
            document = json.load(stream)
        document["warnings"].append("w" * 20_000_000)
        out = os.path.join(self.directory.name, "out")
        process = gpubench("report", self.write("long.json", json.dumps(document)), "--out", out)
        self.assertEqual(process.returncode, 0, process.stderr[-2000:])
        self.assertLess(os.path.getsize(os.path.join(out, "summary.md")), 1_000_000)
        with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
            self.assertIn("cut from 20000000 characters", stream.read())


if __name__ == "__main__":
    unittest.main()
