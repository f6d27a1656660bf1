"""run --launcher: a study run by several ranks, one per GPU, started under a launcher's command (mpirun, srun),
rank 0 writing the files the driver reads; the ranks' record in the study's results (runner.read_ranks) and its
table in summary.md. The launch itself runs gpubench_ranks_study (tests/ranks_study.cpp, CPU entries that count
their calls) under a real mpirun, skipped with the reason where Open MPI is not installed."""
import json
import os
import shutil
import socket
import sys
import tempfile
import unittest
from unittest import mock

import support
from gpubench_driver.lib import results
from gpubench_driver.studies import collectives
from gpubench_driver.stages import options as opts, runner
from test_run_studies import FAKE_STUDY

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
RANKS_STUDY = os.path.join(BUILD_DIR, "tests", "gpubench_ranks_study")


class LauncherOptionTest(unittest.TestCase):
    def test_a_command_line_with_shell_quoting(self):
        self.assertEqual(opts.parse_launcher("mpirun -np 16 --hostfile 'my hosts'"),
                         ["mpirun", "-np", "16", "--hostfile", "my hosts"])

    def test_empty_or_unbalanced_is_refused(self):
        for text in ("", "  ", "mpirun 'x"):
            with self.subTest(text=text), self.assertRaises(opts.UsageError):
                opts.parse_launcher(text)

    def test_a_binary_the_driver_starts_itself_is_one_process(self):
        batch_step = {"SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_JOB_ID": "7", "RANK": "0"}
        with mock.patch.dict(os.environ, batch_step):
            alone, launched = runner.binary_environment(), runner.binary_environment(launched=True)
        self.assertNotIn("SLURM_PROCID", alone)
        self.assertNotIn("RANK", alone)
        self.assertEqual(alone["SLURM_JOB_ID"], "7")  # only the rank variables go
        self.assertEqual(launched["SLURM_PROCID"], "0")  # the launcher's own step sets its own


class RanksRecordTest(unittest.TestCase):
    RECORD = {"launcher": "slurm", "transport": "mpi", "size": 2, "ranks": [
        {"rank": 0, "local_rank": 0, "host": "node1", "cpu": "CPU", "logical_cpus": 64,
         "gpu": {"device": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "pci_bus_id": "0000:18:00.0"}, "gpu_reason": None},
        {"rank": 1, "local_rank": 0, "host": "node2", "cpu": "CPU", "logical_cpus": 64, "gpu": None,
         "gpu_reason": "no CUDA device found"}]}

    def test_read_with_the_command_or_none(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertIsNone(runner.read_ranks(tmp, "collectives", ["srun"]))
            results.write(self.RECORD, runner.ranks_file(tmp, "collectives"), checked=False)
            found = runner.read_ranks(tmp, "collectives", ["srun", "--mpi=pmix"])
        self.assertEqual(found["command"], ["srun", "--mpi=pmix"])
        self.assertEqual([rank["host"] for rank in found["ranks"]], ["node1", "node2"])

    def test_summary_table(self):
        text = "\n".join(str(block) for block in collectives._ranks({**self.RECORD, "command": ["srun"]}))
        self.assertIn("2 ranks on 2 node(s), started by `srun`", text)
        self.assertIn("NVIDIA H200", text)
        self.assertIn("none: no CUDA device found", text)
        self.assertEqual(collectives._ranks(None), [])


@unittest.skipUnless(os.access(RANKS_STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_ranks_study not built")
class LaunchedStudyTest(unittest.TestCase):
    def test_mpirun_through_the_runner(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("no mpirun (Open MPI is not installed: apt-get install openmpi-bin)")
        if not support.built_with_mpi(RANKS_STUDY):
            # Its ranks would meet over TCP, at a MASTER_ADDR the runner does not set.
            self.skipTest("gpubench_ranks_study was built without MPI (configure found no working MPI: "
                          "apt-get install openmpi-bin libopenmpi-dev)")
        launcher = [mpirun, "--oversubscribe", "-np", "2"]
        options = support.run_options(sizes=[1, 2], trials=1, telemetry=False, launcher=launcher)
        description = runner.describe(RANKS_STUDY)
        self.assertTrue(description["ranks_together"])
        record = results.new_study(description, options.sizes)
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"OMPI_ALLOW_RUN_AS_ROOT": "1",
                                                                                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}):
            study = runner.Study("ranks_test", RANKS_STUDY, options, record, lambda: None, runner.Progress(0),
                                 artifacts_dir=tmp, launcher=launcher)
            study.plan()
            study.sweep(1)
        by_size = {entry["axes"]["n"]: entry for entry in record["entries"]}
        self.assertEqual(by_size[1]["status"], "ok")
        self.assertEqual((by_size[2]["status"], by_size[2]["message"]), ("skipped", "skipped: rank 1: cannot set up size 2"))
        self.assertEqual(record["invocations"], [], "each launch ended cleanly")
        self.assertEqual(record["ranks"]["command"], launcher)
        self.assertEqual([(rank["rank"], rank["host"]) for rank in record["ranks"]["ranks"]],
                         [(0, socket.gethostname()), (1, socket.gethostname())])


def collectives_machine(root, gpu):
    """A build directory whose only study is a stand-in collectives binary (ranks_together) that has one GPU
    entry at the quick size, or, without a GPU, none at any size (as the real binary registers none)."""
    build_dir = os.path.join(root, "build")
    os.makedirs(os.path.join(build_dir, "bench"))
    description = {"study": "collectives", "ranks_together": True, "default_sizes": [24],
                   "gpu": {"available": True, "reason": None} if gpu else
                   {"available": False, "reason": "no CUDA device found"},
                   "implementations": [{"id": "all_reduce", "device": "gpu", "modes": ["out_of_place"]}]}
    name = "collectives/all_reduce/gpu/out_of_place/fp32/n:24/manual_time"
    runs = [{"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "iterations": 10,
             "real_time": 1e5, "time_unit": "ns"}] if gpu else []
    files = [os.path.join(root, "describe.json"), os.path.join(root, "runs.json")]
    for path, value in zip(files, (description, {"benchmarks": runs})):
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(value, stream)
    support.write_executable(os.path.join(build_dir, "bench", "gpubench_collectives"),
                             FAKE_STUDY.format(python=sys.executable, tests=support.TESTS_DIR, describe=files[0],
                                               benchmarks=files[1]))
    return build_dir


class LauncherNothingRanTest(unittest.TestCase):
    """run --studies collectives --launcher false: the run says there was nothing to run and why (no GPU, or
    the launcher's exit before any rank reported), fails, and keeps the reason in its results and summary."""

    def run_collectives(self, gpu):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        out = os.path.join(directory.name, "run")
        process = support.gpubench_run("--quick", "--studies", "collectives", "--launcher", "false", "--out", out,
                                       build_dir=collectives_machine(directory.name, gpu))
        self.assertNotIn("Traceback", process.stdout + process.stderr)
        self.assertEqual(process.returncode, 1, process.stdout + process.stderr)
        with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
            return process.stdout, results.load(out), stream.read()

    def test_without_a_gpu_the_study_has_nothing_to_run(self):
        stdout, document, summary = self.run_collectives(gpu=False)
        reason = "study collectives has no entries on this machine: each needs a GPU (no CUDA device found)"
        self.assertIn(f"gpubench: nothing to run: {reason}", stdout)
        self.assertNotIn("every entry was skipped or failed", stdout)
        self.assertEqual(document["run"]["status"], "empty")
        self.assertIn(f"nothing to run: {reason}", document["warnings"])
        self.assertIn(reason, summary)

    def test_a_launcher_that_exits_before_any_rank_reported_is_named(self):
        stdout, document, summary = self.run_collectives(gpu=True)
        said = "the launcher (false) exited with status 1 before any rank reported"
        self.assertIn(said, stdout)
        self.assertIn(f"the run measured nothing: collectives: {said}", document["warnings"][-1])
        self.assertEqual(document["run"]["status"], "empty")
        self.assertIn(said, summary)


if __name__ == "__main__":
    unittest.main()
