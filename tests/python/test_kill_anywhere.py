"""A run killed at random moments keeps every entry it printed: SIGINT, SIGTERM and SIGKILL to the
driver (the launcher execs it, so its PID is the launcher's too) and SIGKILL to its whole process
group, at moments drawn from a seeded generator (GPUBENCH_KILL_SEED picks another sequence; a
failure names its seed, signal and moment). After each kill results.json is valid JSON, the folder
as `report` and `compare` read it (results.json and the run's journal) holds every printed entry
with at least the trials printed, and `report` redraws it. And a driver killed outright leaves no
benchmark process running on without it."""
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
import unittest

from support import ENTRY
from test_run_studies import FakeMachine

from gpubench_driver.lib import trials
from gpubench_driver.stages import journal

PRINTED = re.compile(r"^\[\d+/\d+\] (\S+)  .*?(?:\(trial (\d+) of \d+\))?$")
KILLS = (("SIGINT", "driver"), ("SIGTERM", "driver"), ("SIGKILL", "driver"), ("SIGKILL", "process group"))
ROUNDS = 8


def printed_entries(stdout):
    """{entry name: the highest trial printed for it}."""
    found = {}
    for line in stdout.splitlines():
        match = PRINTED.match(line)
        if match:
            found[match[1]] = max(found.get(match[1], 0), int(match[2] or 1))
    return found


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as stream:
        return stream.read()


class KillAnywhereTest(unittest.TestCase):
    def kill_once(self, signal_name, target, moment, after_first_entry=False):
        machine = FakeMachine(studies=("matmul",))
        self.addCleanup(machine.close)
        out = os.path.join(machine.directory.name, "run")
        stdout_path = os.path.join(machine.directory.name, "stdout.txt")
        # Entries finish every 50 ms; TMPDIR keeps a killed driver's scratch folders in the test's own.
        env = dict(machine.env, GPUBENCH_FAKE_PACE="0.05", GPUBENCH_PYTHON=sys.executable,
                   TMPDIR=machine.directory.name)
        with open(stdout_path, "w", encoding="utf-8") as stdout:
            process = subprocess.Popen(["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir",
                                        machine.build_dir, "--no-reference", "--no-refine", "--sizes",
                                        "64,128,200,256,512", "--trials", "2", "--out", out],
                                       env=env, stdout=stdout, stderr=subprocess.STDOUT, start_new_session=True)
            if after_first_entry:  # the moment counts from the first entry printed, however long start-up took
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and process.poll() is None and not printed_entries(
                        read_text(stdout_path)):
                    time.sleep(0.02)
            time.sleep(moment)
            signum = getattr(signal, signal_name)
            if target == "process group":
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)
            process.wait(timeout=60)
        with open(stdout_path, encoding="utf-8") as stream:
            return out, stream.read()

    def check(self, out, stdout, what):
        printed = printed_entries(stdout)
        results_path = os.path.join(out, "results.json")
        if not os.path.exists(results_path):
            self.assertEqual(printed, {}, f"{what}: entries printed but no results.json")
            return 0
        with open(results_path, encoding="utf-8") as stream:
            json.load(stream)  # valid JSON whenever it was cut
        document = journal.load(out)
        entries = {entry["name"]: entry for study in document["studies"].values() for entry in study["entries"]}
        for name, trial in printed.items():
            self.assertTrue(name in entries, f"{what}: {name} printed, not kept")
            self.assertGreaterEqual(trials.count(entries[name]), trial, f"{what}: {name}'s trial {trial} not kept")
        report = subprocess.run(["bash", ENTRY, "report", out], capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, GPUBENCH_PYTHON=sys.executable))
        self.assertEqual(report.returncode, 0, f"{what}: report failed: {report.stdout}{report.stderr}")
        self.assertNotIn("Traceback", report.stdout + report.stderr, what)
        self.assertTrue(os.path.exists(os.path.join(out, "summary.md")), what)
        return len(printed)

    def test_every_printed_entry_survives_a_kill_at_a_random_moment(self):
        seed = int(os.environ.get("GPUBENCH_KILL_SEED", "20261124"))
        draw = random.Random(seed)
        kept = []
        for number in range(ROUNDS):
            signal_name, target = KILLS[number % len(KILLS)]
            # Every other round counts its moment from the first entry printed: on a loaded machine start-up
            # alone can outlast 4 s, and the kills would then all fall before any entry.
            after_first_entry = number % 2 == 1
            moment = round(draw.uniform(0.0, 2.0) if after_first_entry else draw.uniform(0.5, 4.0), 2)
            what = (f"seed {seed}, {signal_name} to the {target} at {moment} s"
                    f"{' after the first entry' if after_first_entry else ''}")
            out, stdout = self.kill_once(signal_name, target, moment, after_first_entry)
            self.assertNotIn("Traceback", stdout if signal_name != "SIGKILL" else "", what)
            kept.append(self.check(out, stdout, what))
        # At least the rounds timed from the first entry printed some before the kill.
        self.assertGreaterEqual(sum(1 for count in kept if count), ROUNDS // 2, kept)


def process_stat(pid):
    """(state, parent PID) of a process from /proc/PID/stat; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stream:
            stat = stream.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after the command's name, which may hold spaces
    return fields[0], int(fields[1])


def benchmark_child(driver_pid):
    """The PID of the benchmark process the driver started (its --benchmark_out flag tells it from the
    --describe and --benchmark_list_tests calls), found by parent PID: /proc/PID/task/*/children is not
    in every kernel."""
    for name in os.listdir("/proc"):
        if name.isdigit() and (process_stat(int(name)) or (None, None))[1] == driver_pid:
            try:
                with open(f"/proc/{name}/cmdline", "rb") as stream:
                    if b"--benchmark_out=" in stream.read():
                        return int(name)
            except OSError:
                continue
    return None


def running(pid):
    stat = process_stat(pid)
    return stat is not None and stat[0] != "Z"  # a zombie has ended; its new parent has not reaped it yet


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@unittest.skipUnless(sys.platform.startswith("linux"), "the parent-death signal is Linux's")
class ChildDiesWithDriverTest(unittest.TestCase):
    """kill -9 of the driver (no handler runs) ends the process it started within a couple of seconds,
    instead of leaving a benchmark running on for its whole size (stopped by its parent-death signal)."""

    def kill_driver_during_a_size(self, *args, ranks_together=False):
        machine = FakeMachine(studies=("matmul",))
        self.addCleanup(machine.close)
        if ranks_together:  # a study run by several ranks: its binary runs under run --launcher
            describe = os.path.join(machine.directory.name, "matmul_describe.json")
            with open(describe, encoding="utf-8") as stream:
                description = json.load(stream)
            with open(describe, "w", encoding="utf-8") as stream:
                json.dump({**description, "ranks_together": True}, stream)
        env = dict(machine.env, GPUBENCH_FAKE_SLEEP="30", GPUBENCH_PYTHON=sys.executable,
                   TMPDIR=machine.directory.name)
        driver = subprocess.Popen(["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", machine.build_dir,
                                   "--no-reference", "--sizes", "64", "--out",
                                   os.path.join(machine.directory.name, "run"), *args],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        self.addCleanup(kill_group, driver)  # whatever a failure (or the launcher's orphaned rank) left behind
        deadline = time.monotonic() + 60
        child = None
        while child is None and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.1)
            child = benchmark_child(driver.pid)  # the launcher's PID is the driver's: it execs it
        self.assertIsNotNone(child, "the driver started no benchmark process")
        with open(f"/proc/{child}/cmdline", "rb") as stream:
            command = stream.read().split(b"\0")
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 3
        while running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        return child, command

    def test_the_benchmark_process_ends_with_the_driver(self):
        child, _ = self.kill_driver_during_a_size()
        self.assertFalse(running(child), "the benchmark process runs on after kill -9 of the driver")

    def test_a_launcher_ends_with_the_driver(self):
        # A launcher that starts the binary as its own child, as mpirun and srun do (its own children
        # are its business: a real launcher stops its ranks when it is told to stop).
        launcher = shlex.join(["bash", "-c", '"$@"; exit $?', "launcher"])
        child, command = self.kill_driver_during_a_size("--launcher", launcher, ranks_together=True)
        self.assertEqual(command[:2], [b"bash", b"-c"])  # the launcher, not the binary
        self.assertFalse(running(child), "the launcher runs on after kill -9 of the driver")


if __name__ == "__main__":
    unittest.main()
