"""Launching one process per rank, GPU work aside: the ranks meet over the rank channel
(core/rank_channel.hpp: MPI under mpirun, else TCP to MASTER_ADDR:MASTER_PORT from each launcher's rank
variables), rank 0's bytes reach every rank and every rank's report reaches rank 0 (gpubench_rank_probe);
a study run by several ranks (harness/ranks.hpp) makes as many calls on every rank as rank 0 decided, and a
rank that cannot set an entry up makes every rank skip it (gpubench_ranks_study); the collectives study
started as several ranks without a GPU records every rank and skips its GPU work with the reason. The
mpirun tests are skipped with the reason where Open MPI is not installed."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import support

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
PROBE = os.path.join(BUILD_DIR, "tests", "gpubench_rank_probe")
RANKS_STUDY = os.path.join(BUILD_DIR, "tests", "gpubench_ranks_study")
COLLECTIVES = os.path.join(BUILD_DIR, "bench", "gpubench_collectives")
RANKS = 3
LAUNCHER_VARIABLES = {  # launcher -> (rank, size, local rank) variable names
    "open_mpi": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "slurm": ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    "torchrun": ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
}
# What makes a process take itself for an MPI rank, or one of several, or tells it where rank 0 is.
LAUNCH_VARIABLES = ({name for names in LAUNCHER_VARIABLES.values() for name in names} |
                    {"PMIX_RANK", "PMI_RANK", "SLURM_STEP_NUM_TASKS", "MASTER_ADDR", "MASTER_PORT"})
# As root (CI containers) Open MPI wants both variables.
MPI_AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def clean_environment():
    """This process's environment without any launcher's variables (a CI job may run under Slurm)."""
    return {key: value for key, value in os.environ.items() if key not in LAUNCH_VARIABLES}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# A launch's time, at most: over TCP (rank 0 orders every batch of the others) an all-reduce entry of a 4-rank
# torchrun launch took about 6.5 s on a 4-GPU H200 node, and the two-GPU test's 18 entries ran out of 120 s.
LAUNCH_TIMEOUT_S = 400


def launch_by_environment(command, launcher, ranks, rendezvous=True):
    """`command` as `ranks` plain processes with `launcher`'s rank variables (and rank 0's address);
    [(returncode, stdout, stderr)] by rank. Each rank writes into files, not pipes: a rank blocked on a full
    pipe that the test is not reading yet would stall the others in their next collective. A rank still
    running after LAUNCH_TIMEOUT_S is killed (its returncode then negative, its output kept for the failure
    message). A free port can be taken by another process (tests run in parallel) before rank 0 listens on
    it: then the launch is tried again on another."""
    rank_name, size_name, local_name = LAUNCHER_VARIABLES[launcher]
    for _ in range(3):
        meet = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())} if rendezvous else {}
        logs = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in range(ranks)]
        processes = {rank: subprocess.Popen(command, stdout=logs[rank][0], stderr=logs[rank][1], text=True,
                                            env={**clean_environment(), **meet, rank_name: str(rank),
                                                 size_name: str(ranks), local_name: str(rank)})
                     for rank in reversed(range(ranks))}  # the others first: they wait for rank 0
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        try:
            for process in processes.values():
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        finally:
            for process in processes.values():  # a rank that outlived the timeout must not hold its GPU
                if process.poll() is None:
                    process.kill()
                    process.wait()
        results = []
        for rank in range(ranks):
            for stream in logs[rank]:
                stream.seek(0)
            results.append((processes[rank].returncode, logs[rank][0].read(), logs[rank][1].read()))
            for stream in logs[rank]:
                stream.close()
        if not any("Address already in use" in stderr for _, _, stderr in results):
            break
    return results


def mpirun(command, ranks):
    """`command` under `mpirun -np ranks` (skips the test without Open MPI)."""
    found = shutil.which("mpirun")
    if not found:
        raise unittest.SkipTest("no mpirun (Open MPI is not installed: apt-get install openmpi-bin)")
    # Rank 0's address too: a binary built without MPI meets over TCP under mpirun.
    meet = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    return subprocess.run([found, "--oversubscribe", "-np", str(ranks), *command], capture_output=True, text=True,
                          timeout=180, env={**clean_environment(), **MPI_AS_ROOT, **meet})


def json_lines(text):
    """The JSON objects the ranks printed, one a line (mpirun may join them to another rank's output)."""
    return [json.loads(line[line.index('{"rank"'):]) for line in text.splitlines() if '{"rank"' in line]


@unittest.skipUnless(os.access(PROBE, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_rank_probe not built")
class RankChannelTest(unittest.TestCase):
    def check(self, found, launcher, ranks, transport):
        self.assertEqual([report["rank"] for report in found], list(range(ranks)))
        self.assertTrue(all(report["size"] == ranks and report["launcher"] == launcher and
                            report["transport"] == transport for report in found), found)
        self.assertEqual([report["local_rank"] for report in found], list(range(ranks)))  # one node
        self.assertEqual(len({report["id"] for report in found}), 1, "every rank holds rank 0's id")
        self.assertEqual(len(found[0]["id"]), 256)  # 128 bytes in hex

    def test_each_launchers_environment_over_tcp(self):
        # Open MPI's variables without mpirun are no launch: a binary built with MPI takes them for MPI's.
        for launcher in ("slurm", "torchrun"):
            with self.subTest(launcher=launcher):
                results = launch_by_environment([PROBE], launcher, RANKS)
                self.assertTrue(all(returncode == 0 for returncode, _, _ in results), results)
                self.assertEqual([stdout for _, stdout, _ in results[1:]], ["", ""], "rank 0 alone prints")
                self.check(json_lines(results[0][1]), launcher, RANKS, "tcp")

    def test_no_rendezvous_without_mpi_is_refused(self):
        results = launch_by_environment([PROBE], "slurm", 2, rendezvous=False)
        self.assertTrue(all(returncode == 1 and "MASTER_ADDR and MASTER_PORT" in stderr
                            for returncode, _, stderr in results), results)

    def test_no_launcher(self):
        alone = subprocess.run([PROBE], capture_output=True, text=True, timeout=60, env=clean_environment())
        self.assertEqual(alone.returncode, 2)
        self.assertIn("not one of several ranks", alone.stderr)

    def test_mpirun(self):
        for ranks in (2, 3):
            with self.subTest(ranks=ranks):
                launched = mpirun([PROBE], ranks)
                self.assertEqual(launched.returncode, 0, launched.stderr)
                self.check(json_lines(launched.stdout), "open_mpi", ranks, "mpi" if support.built_with_mpi(PROBE) else "tcp")


@unittest.skipUnless(os.access(RANKS_STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_ranks_study not built")
class RanksTogetherTest(unittest.TestCase):
    def check(self, stdout_by_rank, benchmark_json, ranks):
        calls = {line["rank"]: line["calls"] for stdout in stdout_by_rank for line in json_lines(stdout)
                 if "calls" in line}
        self.assertEqual(sorted(calls), list(range(ranks)))
        self.assertGreater(calls[0], 100, "rank 0 warmed up and sampled")
        self.assertEqual(set(calls.values()), {calls[0]}, f"every rank makes rank 0's calls: {calls}")
        with open(benchmark_json, encoding="utf-8") as stream:
            outcomes = {entry["name"].split("/")[5]: entry.get("error_message")
                        for entry in json.load(stream)["benchmarks"]}
        self.assertEqual(outcomes, {"n:1": None, "n:2": "skipped: rank 1: cannot set up size 2", "n:3": None})

    def test_mpirun(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            launched = mpirun([RANKS_STUDY, f"--benchmark_out={out}", f"--artifacts-dir={tmp}"], RANKS)
            self.assertEqual(launched.returncode, 0, launched.stderr)
            self.check([launched.stdout], out, RANKS)
            with open(os.path.join(tmp, "ranks_test_ranks.json"), encoding="utf-8") as stream:
                record = json.load(stream)
            self.assertEqual((record["launcher"], record["transport"], record["size"]),
                             ("open_mpi", "mpi" if support.built_with_mpi(RANKS_STUDY) else "tcp", RANKS))
            self.assertEqual([rank["rank"] for rank in record["ranks"]], list(range(RANKS)))
            self.assertEqual({rank["host"] for rank in record["ranks"]}, {socket.gethostname()})

    def test_environment_over_tcp(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            results = launch_by_environment([RANKS_STUDY, f"--benchmark_out={out}"], "slurm", 2)
            self.assertTrue(all(returncode == 0 for returncode, _, _ in results), results)
            self.check([stdout for _, stdout, _ in results], out, 2)


@unittest.skipUnless(os.access(COLLECTIVES, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_collectives not built "
                                                      "(no NCCL)")
class CollectivesLaunchTest(unittest.TestCase):
    def test_ranks_without_a_gpu_are_recorded_and_skip_their_gpu_work(self):
        with tempfile.TemporaryDirectory() as tmp:
            launched = mpirun([COLLECTIVES, f"--artifacts-dir={tmp}"], 2)
            self.assertEqual(launched.returncode, 0, launched.stderr)
            with open(os.path.join(tmp, "collectives_ranks.json"), encoding="utf-8") as stream:
                record = json.load(stream)
        self.assertEqual([rank["rank"] for rank in record["ranks"]], [0, 1])
        if all(rank["gpu"] for rank in record["ranks"]):
            self.skipTest("these ranks have GPUs: the GPU tests cover their work")
        self.assertIn("GPU entries not run: rank ", launched.stderr)
        self.assertTrue(all(rank["gpu"] or rank["gpu_reason"] for rank in record["ranks"]), record)


def visible_gpus():
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except OSError:
        return 0
    return sum(line.startswith("GPU ") for line in listed.stdout.splitlines()) if listed.returncode == 0 else 0


@unittest.skipUnless(os.access(COLLECTIVES, os.X_OK) and visible_gpus() >= 2, "needs gpubench_collectives and 2 GPUs")
class CollectivesOnTwoGpusTest(unittest.TestCase):
    """One process per GPU on a machine of several (no MPI there: the ranks meet over TCP, as under torchrun)."""

    def test_every_entry_measured_and_checked_over_two_ranks(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            results = launch_by_environment(
                [COLLECTIVES, "--sizes=16,20", "--modes=out_of_place,in_place,in_place_graph",
                 f"--benchmark_out={out}", f"--artifacts-dir={tmp}"], "torchrun", 2)
            self.assertTrue(all(returncode == 0 for returncode, _, _ in results), results)
            with open(out, encoding="utf-8") as stream:
                entries = json.load(stream)["benchmarks"]
            with open(os.path.join(tmp, "collectives_ranks.json"), encoding="utf-8") as stream:
                record = json.load(stream)
        # 5 collectives x 2 sizes out of place, 4 (all-to-all is out of place only) x 2 in place and in a graph
        self.assertEqual(len(entries), 26)
        for entry in entries:
            with self.subTest(entry=entry["name"]):
                if "/in_place_graph/" in entry["name"]:  # one process per GPU: skipped, saying why
                    self.assertIn("skipped: graph modes run where one process drives every GPU",
                                  entry.get("error_message", ""))
                    continue
                self.assertNotIn("error_message", entry)
                self.assertEqual(entry["ranks"], 2)
                if entry["name"].split("/")[1] in ("all_gather", "broadcast", "all_to_all"):
                    self.assertEqual(entry["rel_fro_error"], 0, "copies are exact")
        self.assertEqual(len({rank["gpu"]["uuid"] for rank in record["ranks"]}), 2, "one GPU per rank")


if __name__ == "__main__":
    unittest.main()
