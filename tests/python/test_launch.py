"""Launching one process per rank, GPU work aside (gpubench_rank_probe, core/launched_rank.hpp): each
launcher's environment gives every process its rank, and the id rank 0 publishes through a file reaches
every other rank; under a real `mpirun` where Open MPI is installed, skipped with the reason where not."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import support  # noqa: F401  (import path)

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
PROBE = os.path.join(BUILD_DIR, "tests", "gpubench_rank_probe")
RANKS = 3
LAUNCHER_VARIABLES = {  # launcher -> (rank, size, local rank) variable names
    "open_mpi": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "slurm": ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    "torchrun": ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
}
ALL_VARIABLES = {name for names in LAUNCHER_VARIABLES.values() for name in names}


def clean_environment():
    """This process's environment without any launcher's rank variables (a CI job may run under Slurm)."""
    return {key: value for key, value in os.environ.items() if key not in ALL_VARIABLES}


def reports(outputs):
    return sorted((json.loads(line) for output in outputs for line in output.splitlines() if line.strip()),
                  key=lambda report: report["rank"])


@unittest.skipUnless(os.access(PROBE, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_rank_probe not built")
class LaunchTest(unittest.TestCase):
    def check(self, found, launcher, ranks):
        self.assertEqual([report["rank"] for report in found], list(range(ranks)))
        self.assertTrue(all(report["size"] == ranks and report["launcher"] == launcher for report in found), found)
        self.assertEqual(len({report["id"] for report in found}), 1, "every rank holds rank 0's id")
        self.assertEqual(len(found[0]["id"]), 256)  # 128 bytes in hex

    def test_each_launchers_environment(self):
        for launcher, (rank_name, size_name, local_name) in LAUNCHER_VARIABLES.items():
            with self.subTest(launcher=launcher), tempfile.TemporaryDirectory() as tmp:
                id_file = os.path.join(tmp, "nccl_id")
                # The readers first: they wait for rank 0's file.
                processes = [subprocess.Popen([PROBE, id_file], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                              env={**clean_environment(), rank_name: str(rank), size_name: str(RANKS),
                                                   local_name: str(rank)})
                             for rank in reversed(range(RANKS))]
                outputs = [process.communicate(timeout=120) for process in processes]
                self.assertTrue(all(process.returncode == 0 for process in processes), outputs)
                self.check(reports(stdout for stdout, _ in outputs), launcher, RANKS)

    def test_a_stale_id_file_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            id_file = os.path.join(tmp, "nccl_id")
            with open(id_file, "wb") as stream:
                stream.write(bytes(128))
            rank_0 = subprocess.run([PROBE, id_file], capture_output=True, text=True, timeout=60,
                                    env={**clean_environment(), "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"})
            self.assertEqual(rank_0.returncode, 1)
            self.assertIn("exists already", rank_0.stderr)

    def test_no_launcher(self):
        alone = subprocess.run([PROBE, "unused"], capture_output=True, text=True, timeout=60, env=clean_environment())
        self.assertEqual(alone.returncode, 2)
        self.assertIn("no launcher's rank variables", alone.stderr)

    def test_mpirun(self):
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("no mpirun (Open MPI is not installed: apt-get install openmpi-bin)")
        with tempfile.TemporaryDirectory() as tmp:
            # As root (CI containers) Open MPI wants both variables; --oversubscribe: more ranks than cores.
            env = {**clean_environment(), "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
            launched = subprocess.run([mpirun, "--oversubscribe", "-np", "2", PROBE, os.path.join(tmp, "nccl_id")],
                                      capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(launched.returncode, 0, launched.stderr)
            self.check(reports([launched.stdout]), "open_mpi", 2)


if __name__ == "__main__":
    unittest.main()
