"""A run killed at random moments keeps every entry it printed: SIGINT, SIGTERM and SIGKILL to the
driver (the launcher execs it, so its PID is the launcher's too) and SIGKILL to its whole process
group, at moments drawn from a seeded generator (GPUBENCH_KILL_SEED picks another sequence; a
failure names its seed, signal and moment). After each kill results.json is valid JSON, the folder
as `report` and `compare` read it (results.json and the run's journal) holds every printed entry
with at least the trials printed, and `report` redraws it."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import unittest

from support import ENTRY
from test_run_studies import FakeMachine

from gpubench_driver import journal, trials

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


class KillAnywhereTest(unittest.TestCase):
    def kill_once(self, signal_name, target, moment):
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
            moment = round(draw.uniform(0.5, 4.0), 2)
            what = f"seed {seed}, {signal_name} to the {target} at {moment} s"
            out, stdout = self.kill_once(signal_name, target, moment)
            self.assertNotIn("Traceback", stdout if signal_name != "SIGKILL" else "", what)
            kept.append(self.check(out, stdout, what))
        # The moments fall while entries are being printed: most rounds printed some before the kill.
        self.assertGreaterEqual(sum(1 for count in kept if count), ROUNDS // 2, kept)


if __name__ == "__main__":
    unittest.main()
