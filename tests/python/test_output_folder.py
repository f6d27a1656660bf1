"""The output folder: nothing written outside it whatever a results file holds; one run at a time in it
and one build at a time in a build folder; a run whose driver was killed shown as killed; a full disk
said in one line with no partial file left; a folder that cannot be written, or one inside the source
tree (other than results/), refused before anything is written."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from support import ENTRY, SCRIPTS_DIR, SOURCE_DIR, write_executable
from test_run_studies import FakeMachine
from test_transfer import curve

from gpubench_driver.lib import charts, results
from gpubench_driver.stages import plots


def gpubench(*args, env=None):
    environment = dict(os.environ if env is None else env, GPUBENCH_PYTHON=sys.executable)
    return subprocess.run(["bash", ENTRY, *args], capture_output=True, text=True, timeout=300, env=environment)


def run_command(machine, out, *args, build=False):
    """scripts/gpubench run on the stand-in binaries, as a list for Popen."""
    return ["bash", ENTRY, "run", "--no-setup", *([] if build else ["--no-build"]), "--build-dir", machine.build_dir,
            "--no-reference", "--no-refine", "--trials", "1", "--sizes", "64,128", "--out", out, *args]


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(where, name), folder)
                  for where, _, names in os.walk(folder) for name in names)


def clean_failure(test, process, status):
    """The process ended with `status` and one line on stderr, no traceback."""
    test.assertEqual(process.returncode, status, process.stdout + process.stderr)
    test.assertNotIn("Traceback", process.stdout + process.stderr)
    test.assertEqual(len(process.stderr.strip().splitlines()), 1, process.stderr)
    return process.stderr


# --- 1. file names built from the data ---------------------------------------------------------
class HostileNameTest(unittest.TestCase):
    """A results file's names (a transfer direction, a stream operation, an overlap workload, a
    primitive, a roofline device) never take a plot out of the plots folder."""

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.root = self.directory.name
        self.target = os.path.join(self.root, "EVIL")  # where '../' in a name would put a plot

    def hostile(self):
        """A name that climbs to / from any plots folder, then down to the test's target."""
        return "x/" + "../" * 40 + self.target.lstrip("/")

    def escaped(self):
        return [name for name in os.listdir(self.root) if name.startswith("EVIL")]

    @unittest.skipIf(charts.load_pyplot() is None, "no matplotlib: no plots to write")
    def test_report_writes_no_plot_outside_its_folder(self):
        run = os.path.join(self.root, "run")
        document = results.new_document({"id": "hostile", "started": "2026-11-24T00:00:00+00:00", "finished": None,
                                         "status": "complete", "command_line": [], "options": {}})
        study = results.new_study({"implementations": []}, [4096, 1 << 20])
        study["entries"] = curve("copy_engine", "pinned", "h2d", {4096: 2e9, 1 << 20: 40e9})
        for entry in study["entries"]:
            entry["precision"] = self.hostile()  # the transfer study's direction
        document["studies"]["transfer"] = study
        os.makedirs(os.path.join(run, "plots", "transfer_bandwidth_x"))  # so that the '..' resolve
        results.write(document, os.path.join(run, "results.json"))
        process = gpubench("report", run)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertEqual(self.escaped(), [])
        written = [name for name in os.listdir(os.path.join(run, "plots")) if name.endswith(".png")]
        self.assertEqual(len(written), 1, written)
        self.assertTrue(written[0].startswith("transfer_bandwidth_x_"), written)

    @unittest.skipIf(charts.load_pyplot() is None, "no matplotlib: no plots to write")
    def test_every_study_name_in_a_plot_file_is_cleaned(self):
        bad = self.hostile()
        studies = {
            "stream": {"derived": {"curves": [{"operation": bad, "kernel": "k", "mode": "host", "precision": "fp32",
                                               "points": [{"working_set_bytes": 1e3, "bytes_per_s": 1e9},
                                                          {"working_set_bytes": 1e6, "bytes_per_s": 2e9}]}]}},
            "overlap": {"derived": {"pipelines": [{"workload": bad, "memory": bad, "n": 64, "schedule": "streams2",
                                                   "chunks": chunks, "median_s": 1.0, "ideal_s": 0.5, "serial_s": 2.0}
                                                  for chunks in (1, 4)]}},
            "primitives": {"derived": {"curves": [{"primitive": bad, "library": "cub", "mode": "resident",
                                                   "points": [{"n": 1e3, "elements_per_s": 1e9},
                                                              {"n": 1e6, "elements_per_s": 2e9}]}]}},
            "roofline": {"derived": {"series": [{"device": bad, "n": 64, "impl": "fma", "precision": "fp32",
                                                 "ridge_intensity": 4.0, "bandwidth_bytes_per_s": 1e9,
                                                 "compute_flop_per_s": 4e9,
                                                 "points": [{"intensity": 1.0, "flop_per_s": 1e9},
                                                            {"intensity": 16.0, "flop_per_s": 4e9}]}]}},
            "transfer": {"derived": {"curves": [{"impl": "copy_engine", "mode": "pinned", "direction": bad,
                                                 "points": [{"n": 1e3, "bytes_per_s": 1e9},
                                                            {"n": 1e6, "bytes_per_s": 2e9}]}]}},
        }
        out = os.path.join(self.root, "run")
        for prefix in ("stream", "overlap", "primitives", "roofline_sweep", "transfer_bandwidth"):
            os.makedirs(os.path.join(out, "plots", f"{prefix}_x"))
        found = plots.write_plots(studies, out)
        self.assertEqual(self.escaped(), [])
        self.assertEqual(sorted(found), sorted(studies))
        plot_dir = os.path.realpath(os.path.join(out, "plots"))
        for study, paths in found.items():
            for path in paths:
                self.assertEqual(os.path.dirname(os.path.realpath(path)), plot_dir, (study, path))
                self.assertTrue(os.path.isfile(path), path)


# --- 2, 3. one run per output folder, one build per build folder -----------------------------------
FAKE_CMAKE = textwrap.dedent('''\
    #!/bin/sh
    # A configure or build step of a second that fails when another runs in the same build folder at once,
    # as CMake's reconfigure of a shared build folder did.
    log="$GPUBENCH_FAKE_CMAKE_LOG"
    if ! mkdir "$log.busy" 2>/dev/null; then
      echo "stand-in cmake: another cmake is running in this build folder" >&2
      exit 1
    fi
    echo "$$ $*" >> "$log"
    sleep 1
    rmdir "$log.busy"
''')


class OneRunPerFolderTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine(studies=("matmul",))
        self.addCleanup(self.machine.close)
        self.root = self.machine.directory.name
        self.env = dict(self.machine.env, GPUBENCH_PYTHON=sys.executable)

    def start(self, out, *args, build=False, env=None):
        return subprocess.Popen(run_command(self.machine, out, *args, build=build), env=env or self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def with_fake_cmake(self):
        bin_dir = os.path.join(self.root, "bin")
        os.makedirs(bin_dir)
        write_executable(os.path.join(bin_dir, "cmake"), FAKE_CMAKE)
        log = os.path.join(self.root, "cmake.log")
        return dict(self.env, PATH=bin_dir + os.pathsep + self.env["PATH"], GPUBENCH_FAKE_CMAKE_LOG=log), log

    def one_ran_one_refused(self, first, second, out):
        """Of two runs into `out`, one finished and kept every entry it printed, the other was refused."""
        finished = [first, second]
        for process in finished:
            process.stdout_text, process.stderr_text = process.communicate(timeout=300)
        refused = [process for process in finished if process.returncode == 2]
        self.assertEqual(len(refused), 1, [(p.returncode, p.stdout_text, p.stderr_text) for p in finished])
        winner = next(process for process in finished if process is not refused[0])
        self.assertEqual(winner.returncode, 0, winner.stdout_text + winner.stderr_text)
        self.assertIn("is in use by another gpubench run", refused[0].stderr_text)
        self.assertNotIn("Traceback", refused[0].stderr_text)
        self.assertEqual(refused[0].stdout_text.count("] matmul/"), 0, refused[0].stdout_text)
        printed = winner.stdout_text.count("] matmul/")
        self.assertGreater(printed, 0)
        self.assertEqual(len(results.load(out)["studies"]["matmul"]["entries"]), printed)
        self.assertEqual([name for name in os.listdir(out) if name.startswith(".")], [])  # lock and scratch gone

    def test_a_second_run_into_the_same_folder_is_refused(self):
        out = os.path.join(self.root, "run")
        env = dict(self.env, GPUBENCH_FAKE_SLEEP="1")  # each benchmark process: a run of a few seconds
        self.one_ran_one_refused(self.start(out, env=env), self.start(out, env=env), out)

    def test_two_building_runs_into_one_folder(self):
        env, _ = self.with_fake_cmake()
        out = os.path.join(self.root, "run")
        first = self.start(out, build=True, env=env)
        time.sleep(0.2)
        second = self.start(out, build=True, env=env)
        self.one_ran_one_refused(first, second, out)
        self.assertTrue(os.path.isdir(out))

    def test_a_refused_run_leaves_the_folder_to_the_run_in_it(self):
        """The refused run never removes the folder, even when the run in it is still building."""
        env, _ = self.with_fake_cmake()
        out = os.path.join(self.root, "fresh")
        first = self.start(out, build=True, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not os.path.isdir(out):
            time.sleep(0.05)
        second = subprocess.run(run_command(self.machine, out, build=True), env=env, capture_output=True,
                                text=True, timeout=120)
        self.assertTrue(os.path.isdir(out))
        stdout, stderr = first.communicate(timeout=300)
        self.assertEqual(first.returncode, 0, stdout + stderr)
        clean_failure(self, second, 2)
        self.assertTrue(os.path.exists(os.path.join(out, "results.json")))

    def test_builds_in_one_build_folder_wait_for_each_other(self):
        env, log = self.with_fake_cmake()
        first = self.start(os.path.join(self.root, "a"), build=True, env=env)
        time.sleep(0.2)
        second = self.start(os.path.join(self.root, "b"), build=True, env=env)
        outputs = [process.communicate(timeout=300) for process in (first, second)]
        for process, (stdout, stderr) in zip((first, second), outputs):
            self.assertEqual(process.returncode, 0, stdout + stderr)
        said = [stdout.count("waiting for") for stdout, _ in outputs]
        self.assertEqual(sorted(said), [0, 1], outputs)
        with open(log, encoding="utf-8") as stream:
            self.assertEqual(len(stream.read().splitlines()), 4)  # configure and build, twice


# --- 4. a run whose driver is gone ------------------------------------------------------------
class KilledRunTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine(studies=("matmul",))
        self.addCleanup(self.machine.close)
        self.root = self.machine.directory.name
        self.tmp = os.path.join(self.root, "tmp")  # the run's TMPDIR: where scratch folders used to go
        os.makedirs(self.tmp)
        self.out = os.path.join(self.root, "run")

    def kill_a_run(self):
        env = dict(self.machine.env, GPUBENCH_FAKE_SLEEP="60", GPUBENCH_PYTHON=sys.executable, TMPDIR=self.tmp)
        process = subprocess.Popen(run_command(self.machine, self.out), env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.exists(os.path.join(self.out, "results.json")):
            time.sleep(0.1)
        time.sleep(0.5)  # the first benchmark process started
        os.killpg(process.pid, signal.SIGKILL)  # the driver and its benchmark process
        process.wait(timeout=60)

    def status_shown(self):
        process = gpubench("report", self.out)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        with open(os.path.join(self.out, "summary.md"), encoding="utf-8") as stream:
            return next(line for line in stream if line.startswith("- Status:"))

    def test_report_shows_a_killed_run_as_killed(self):
        self.kill_a_run()
        self.assertEqual(results.load(self.out)["run"]["status"], "running")  # as the killed driver left it
        self.assertIn("Status: killed", self.status_shown())
        self.assertEqual(os.listdir(self.tmp), [])  # its scratch folder was in the output folder

    def test_a_run_whose_driver_lives_is_running(self):
        import fcntl
        from gpubench_driver.lib import outputs
        self.kill_a_run()
        with open(os.path.join(self.out, outputs.RUN_LOCK), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a live driver holds it
            self.assertIn("Status: running", self.status_shown())


# --- 5. a full disk -----------------------------------------------------------------------------
# The driver with a disk of `budget` bytes under FOLDER: every file opened for writing there takes
# from it, and a write past it puts what fits and fails with ENOSPC, as a full file system does.
FULL_DISK = textwrap.dedent('''\
    import builtins, errno, io, os, sys
    sys.path.insert(0, {scripts!r})
    folder, left = os.path.realpath(sys.argv[1]), [int(sys.argv[2])]
    real_open = builtins.open

    class Budgeted:
        def __init__(self, stream):
            self._stream = stream
        def write(self, data):
            if len(data) > left[0]:
                self._stream.write(data[:left[0]])
                self._stream.flush()
                left[0] = 0
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            left[0] -= len(data)
            return self._stream.write(data)
        def __getattr__(self, name):
            return getattr(self._stream, name)
        def __iter__(self):
            return iter(self._stream)
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self._stream.close()

    def budgeted_open(file, mode="r", *args, **kwargs):
        stream = real_open(file, mode, *args, **kwargs)
        if any(c in mode for c in "wax+"):
            path = os.path.realpath(f"/proc/self/fd/{{stream.fileno()}}")
            if path.startswith(folder + os.sep):
                return Budgeted(stream)
        return stream

    builtins.open = io.open = budgeted_open
    from gpubench_driver.commands import cli
    sys.exit(cli.main(sys.argv[3:]))
''')
PNG_END = b"IEND\xaeB`\x82"  # the last chunk of a whole PNG


class FinishedRunTest(unittest.TestCase):
    """A finished stand-in run of matmul at SIZES (cls.run_dir) on a FakeMachine (cls.root) for the class."""
    SIZES = "64"

    @classmethod
    def setUpClass(cls):
        cls.machine = FakeMachine(studies=("matmul",))
        process, cls.run_dir = cls.machine.run("--sizes", cls.SIZES, "--no-refine")
        assert process.returncode == 0, process.stdout + process.stderr
        cls.root = cls.machine.directory.name

    @classmethod
    def tearDownClass(cls):
        cls.machine.close()


class DiskFullTest(FinishedRunTest):
    SIZES = "64,128"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.harness = os.path.join(cls.root, "full_disk.py")
        with open(cls.harness, "w", encoding="utf-8") as stream:
            stream.write(FULL_DISK.format(scripts=SCRIPTS_DIR))

    def on_full_disk(self, folder, budget, *args):
        return subprocess.run([sys.executable, self.harness, folder, str(budget), *args], capture_output=True,
                              text=True, timeout=300, env=dict(self.machine.env))

    def check_no_partial_file(self, out, reference):
        for name in files_under(out):
            self.assertFalse(name.endswith(".tmp") or os.path.basename(name).startswith("."), name)
            with open(os.path.join(out, name), "rb") as stream:
                data = stream.read()
            if name.endswith(".png"):
                self.assertTrue(data.endswith(PNG_END), f"{name} cut off")
            else:
                with open(os.path.join(reference, name), "rb") as stream:
                    self.assertEqual(data, stream.read(), f"{name} differs from a whole one")

    def test_outputs_on_a_full_disk(self):
        for command in (["report", self.run_dir], ["compare", self.run_dir, self.run_dir],
                        ["rank", self.run_dir]):
            reference = os.path.join(self.root, f"{command[0]}-whole")
            process = self.on_full_disk(self.root, 10 ** 12, *command, "--out", reference)
            self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
            total = sum(os.path.getsize(os.path.join(reference, name)) for name in files_under(reference))
            for budget in (0, total // 2, total - 100):
                with self.subTest(command=command[0], budget=budget):
                    out = os.path.join(self.root, f"{command[0]}-{budget}")
                    process = self.on_full_disk(out, budget, *command, "--out", out)
                    self.assertIn("gpubench: error: disk full writing ", clean_failure(self, process, 1))
                    self.check_no_partial_file(out, reference)

    def test_a_run_on_a_full_disk(self):
        out = os.path.join(self.root, "full")
        process = self.on_full_disk(out, 0, "run", "--no-setup", "--no-build", "--build-dir", self.machine.build_dir,
                                    "--no-reference", "--sizes", "64", "--trials", "1", "--out", out)
        self.assertIn(f"gpubench: error: disk full writing {out}/results.json", clean_failure(self, process, 1))
        self.assertEqual([name for name in files_under(out) if name.endswith(".tmp")], [])


# What the commands write into their output folder (other tests may write elsewhere in the tree meanwhile).
OUTPUT_NAMES = {"results.json", "journal.jsonl", "summary.md", "summary.html", "plots", "gbench", "compare.md",
                "compare.html", "compare.json", "rank.md", "rank.html", "rank.json", ".gpubench-run.lock", ".scratch"}


def outputs_in(folder):
    """The command outputs in folder; None where there is no folder."""
    return OUTPUT_NAMES & set(os.listdir(folder)) if os.path.isdir(folder) else None


def remove_new_outputs(folder, before):
    """Removes the outputs a failing command wrote into folder (since `before`, outputs_in's; None: the
    folder itself, when empty)."""
    for name in (outputs_in(folder) or set()) - (before or set()):
        path = os.path.join(folder, name)
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    if before is None and os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)


# --- 6, 7. output folders that cannot be written or lie in the source tree ------------------------------
class BadOutputFolderTest(FinishedRunTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a_file = os.path.join(cls.root, "a-file")
        open(cls.a_file, "w").close()

    def commands(self, out):
        return (["report", self.run_dir, "--out", out], ["compare", self.run_dir, self.run_dir, "--out", out],
                ["rank", self.run_dir, "--out", out])

    def refused(self, out, expected):
        for command in self.commands(out):
            with self.subTest(command=command[0], out=out):
                self.assertIn(expected, clean_failure(self, gpubench(*command), 2))

    def test_an_existing_file(self):
        self.refused(self.a_file, "exists and is not a folder")

    def test_a_folder_that_cannot_be_made(self):
        self.refused("/proc/gpubench-forbidden/x", "cannot create /proc/gpubench-forbidden/x")
        self.refused(os.path.join(self.a_file, "x"), f"cannot create {self.a_file}/x")

    @unittest.skipIf(os.geteuid() == 0, "root writes into a folder whatever its mode")
    def test_a_folder_the_user_cannot_write(self):
        folder = os.path.join(self.root, "read-only")
        shutil.copytree(self.run_dir, folder)
        os.chmod(folder, 0o555)
        self.addCleanup(os.chmod, folder, 0o755)
        self.refused(folder, "cannot write")
        self.assertIn("cannot write", clean_failure(self, gpubench("report", folder), 2))

    def test_the_source_tree_outside_results(self):
        for inside in ("scripts", os.path.join("docs", "new"), "."):
            out = os.path.normpath(os.path.join(SOURCE_DIR, inside))
            before = outputs_in(out)
            self.addCleanup(remove_new_outputs, out, before)  # what a failing driver wrote into the tree
            self.refused(out, "inside the source tree")
            process = subprocess.run(run_command(self.machine, out), capture_output=True, text=True, timeout=120,
                                     env=dict(self.machine.env, GPUBENCH_PYTHON=sys.executable))
            self.assertIn("go under results/", clean_failure(self, process, 2))
            self.assertEqual(outputs_in(out), before, out)

    def test_results_in_the_source_tree_stay_allowed(self):
        runs = os.path.join(SOURCE_DIR, "results", "runs")  # where commands write by default (git ignores it)
        os.makedirs(runs, exist_ok=True)
        out = tempfile.mkdtemp(prefix="test-output-folder-", dir=runs)
        self.addCleanup(shutil.rmtree, out)
        process = gpubench("compare", self.run_dir, self.run_dir, "--out", os.path.join(out, "compare"))
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)


if __name__ == "__main__":
    unittest.main()
