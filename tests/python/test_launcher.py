"""run --launcher: a study run by several ranks, one per GPU, started under a launcher's command (mpirun, srun),
rank 0 writing the files the driver reads; the ranks' record in the study's results (runner.read_ranks) and its
table in summary.md. The launch itself runs gpubench_ranks_study (tests/ranks_study.cpp, CPU entries that count
their calls) under a real mpirun, skipped with the reason where Open MPI is not installed."""
import os
import shutil
import socket
import tempfile
import unittest
from unittest import mock

import support
from gpubench_driver import options as opts, results, runner, summary_collectives

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
        text = "\n".join(str(block) for block in summary_collectives._ranks({**self.RECORD, "command": ["srun"]}))
        self.assertIn("2 ranks on 2 node(s), started by `srun`", text)
        self.assertIn("NVIDIA H200", text)
        self.assertIn("none: no CUDA device found", text)
        self.assertEqual(summary_collectives._ranks(None), [])


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


if __name__ == "__main__":
    unittest.main()
