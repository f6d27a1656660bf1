"""Run digests (digest.py): made from a committed run trimmed into a fixture, written and read back
whole; a damaged or hostile digest refused with a message naming the field; `expected` reads a digest
as it reads the run it was made from."""
import copy
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

import support

from gpubench_driver.commands import digest, expected
from gpubench_driver.lib import noise_model
from gpubench_driver.stages import analyse, journal

# A quick run of three trials, cut by its time limit (some entries have fewer trials): 139 entries.
QUICK_RUN = support.fixture("runs/aa-quick-trials3-20261124/aa1-quick-trials3-20261124-005923/results.json.gz")
H200_RUN = support.fixture("runs/aa-h200-20261124/h200-aa-a-20261124/results.json.gz")


def gpubench(*args):
    return subprocess.run(["bash", support.ENTRY, *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, GPUBENCH_PYTHON=sys.executable))


class RoundTripTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.made = digest.make([QUICK_RUN])
        cls.document = journal.load(QUICK_RUN)
        analyse.derive_findings(cls.document, 0)

    def test_written_and_read_back_whole(self):
        with tempfile.TemporaryDirectory() as directory:
            for name in ("digest.json.gz", "digest.json"):
                path = digest.write(self.made, os.path.join(directory, name))
                self.assertEqual(digest.load(path), self.made)
                self.assertEqual(digest.runs_in(path), self.made["runs"])
            with open(os.path.join(directory, "digest.json.gz"), "rb") as stream:
                self.assertEqual(stream.read(2), b"\x1f\x8b")

    def test_the_same_bytes_each_time(self):
        with tempfile.TemporaryDirectory() as directory:
            first, second = (digest.write(self.made, os.path.join(directory, f"{n}.json.gz")) for n in (1, 2))
            with open(first, "rb") as a, open(second, "rb") as b:
                self.assertEqual(a.read(), b.read())

    def test_every_entry_and_every_trial_median_is_kept(self):
        [run] = self.made["runs"]
        entries = [(name, entry) for name, study in self.document["studies"].items() for entry in study["entries"]]
        self.assertEqual(len(run["entries"]), len(entries))
        trial_counts = set()
        for kept, (study, entry) in zip(run["entries"], entries):
            self.assertEqual((kept["study"], kept["name"], kept["device"], kept["mode"], kept["protocol"], kept["status"]),
                             (study, entry["name"], entry["device"], entry.get("mode"), entry["protocol"], entry["status"]))
            self.assertEqual(kept["median_s"], entry["time_s"]["median"] if entry["status"] == "ok" else None)
            records = entry.get("trials") or []
            self.assertEqual([(t["trial"], t["status"]) for t in kept["trials"]],
                             [(t["trial"], t["status"]) for t in records])
            self.assertEqual([t["median_s"] for t in kept["trials"]],
                             [t["time_s"]["median"] if t["status"] == "ok" else None for t in records])
            trial_counts.add(len(records))
        self.assertGreaterEqual(len(trial_counts), 2, "the cut run has entries of three trials and of fewer")

    def test_the_run_its_machine_and_its_headline_figures(self):
        [run] = self.made["runs"]
        self.assertEqual((run["id"], run["status"]), ("aa1-quick-trials3-20261124-005923", "interrupted"))
        self.assertEqual(run["revision"], self.document["run"]["git"]["revision"])
        self.assertEqual((run["options"]["quick"], run["options"]["trials"]), (True, 3))
        self.assertEqual(run["machine"]["gpu"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(run["machine"]["gpu_count"], 1)
        self.assertEqual(run["machine"]["cpu_cores"], self.document["machine"]["cpu"]["cores"])
        figures = self.document["findings"]["headline"]["figures"]
        self.assertEqual([(row["key"], row["where"], row["value"], row["low"], row["high"]) for row in run["figures"]],
                         [(row["key"], row["where"], row["value"], row["low"], row["high"]) for row in figures])
        self.assertEqual([row["trial_values"] for row in run["figures"]],
                         [(row["between_runs"] or {}).get("trial_values") or [] for row in figures])

    def test_the_command_writes_it(self):
        with tempfile.TemporaryDirectory() as directory:
            out = os.path.join(directory, "pair.json.gz")
            done = gpubench("digest", QUICK_RUN, "--out", out)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("(1 run(s))", done.stdout)
            self.assertEqual(digest.load(out)["runs"], self.made["runs"])
            self.assertEqual(gpubench("digest", QUICK_RUN).returncode, 2)  # --out is required
            twice = gpubench("digest", QUICK_RUN, QUICK_RUN, "--out", out)
            self.assertEqual(twice.returncode, 1)
            self.assertIn("given twice", twice.stderr)


class ExpectedFromDigestTest(unittest.TestCase):
    def test_the_same_ranges_as_from_the_run(self):
        with tempfile.TemporaryDirectory() as directory:
            path = digest.write(digest.make([H200_RUN]), os.path.join(directory, "h200.json.gz"))
            from_run, from_digest = expected.model_records([H200_RUN]), expected.model_records([path])
        self.assertEqual(list(from_run), ["NVIDIA H200"])
        for model in (from_run, from_digest):  # where each read it from differs; nothing else does
            for run in model["NVIDIA H200"]["runs"]:
                run.pop("path")
        self.assertEqual(from_digest, from_run)
        self.assertGreater(len(from_run["NVIDIA H200"]["figures"]), 10)

    def test_the_command_reads_a_digest(self):
        with tempfile.TemporaryDirectory() as directory:
            path = digest.write(digest.make([H200_RUN]), os.path.join(directory, "h200.json.gz"))
            ranges = os.path.join(directory, "ranges.json")
            done = gpubench("expected", path, "--file", ranges)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("NVIDIA H200 from 1 run(s)", done.stdout)
            self.assertEqual(expected.load(ranges)["NVIDIA H200"]["runs"][0]["id"], "h200-aa-a-20261124")


def one_run():
    """A small valid digest: one run of one ok entry of two trials and one failed entry."""
    return {"schema": digest.SCHEMA, "schema_version": 1, "figures_derived_by": {"revision": "abc", "dirty": False},
            "runs": [{"id": "r1", "status": "complete", "started": "2026-11-24T00:00:00+00:00", "finished": None,
                      "revision": "abc", "dirty": False, "command_line": ["scripts/gpubench", "run"],
                      "options": {"quick": False, "trials": 2, "studies": ["matmul"]},
                      "machine": {"gpu": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "gpus": ["NVIDIA H100 80GB HBM3"]},
                      "gpu_available": True,
                      "figures": [{"key": "rate/fp32", "where": "n=4096", "value": 5e13, "low": 4.9e13, "high": 5.1e13,
                                   "protocol": "throughput", "trial_values": [5e13, 5.1e13]}],
                      "entries": [{"study": "matmul", "name": "matmul/cublas/n:4096", "gpu": None, "device": "gpu",
                                   "protocol": "throughput", "status": "ok", "median_s": 2e-3,
                                   "trials": [{"trial": 1, "status": "ok", "median_s": 2e-3},
                                              {"trial": 2, "status": "ok", "median_s": 2.1e-3}]},
                                  {"study": "matmul", "name": "matmul/naive/n:4096", "gpu": None, "device": "cpu",
                                   "protocol": "cpu", "status": "error", "median_s": None, "trials": []}]}]}


class VersionTest(unittest.TestCase):
    """A digest of version 2 carries each entry's memory mode, which tells a host-paced entry; one of version 1
    (the committed A/A digests made before it) has none and still reads, its entries judged as before."""

    def test_the_mode_tells_the_host_paced_entries_of_a_run(self):
        [run] = digest.make([QUICK_RUN])["runs"]
        staged = {entry["mode"] for entry in run["entries"] if noise_model.host_staged(entry)}
        self.assertTrue(staged and all("pageable" in mode for mode in staged), staged)
        self.assertIn("resident", {entry["mode"] for entry in run["entries"]} - staged)

    def test_a_version_2_digest_round_trips_with_the_mode(self):
        document = one_run()
        document["schema_version"] = digest.SCHEMA_VERSION
        document["runs"][0]["entries"][0]["mode"] = "transfer_pageable"
        with tempfile.TemporaryDirectory() as directory:
            path = digest.write(document, os.path.join(directory, "v2.json.gz"))
            [run] = digest.runs_in(path)
        self.assertEqual(run["entries"][0]["mode"], "transfer_pageable")
        self.assertEqual(noise_model.kind_of(run["entries"][0], 2e-3), "host-paced-long")

    def test_a_version_1_digest_without_the_mode_still_reads(self):
        document = one_run()
        self.assertEqual(document["schema_version"], 1)
        self.assertNotIn("mode", document["runs"][0]["entries"][0])
        with tempfile.TemporaryDirectory() as directory:
            path = digest.write(document, os.path.join(directory, "v1.json.gz"))
            [run] = digest.runs_in(path)
        self.assertEqual(noise_model.kind_of(run["entries"][0], 2e-3), "throughput-long")

    def test_the_committed_digests_read(self):
        folder = os.path.join(support.SOURCE_DIR, "results", "aa")
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json.gz"):
                with self.subTest(name=name):
                    self.assertTrue(digest.runs_in(os.path.join(folder, name)))

    def test_the_committed_digests_carry_each_entrys_mode(self):
        """The noise model tells host-paced entries by their memory mode: every A/A digest it is fitted on has it."""
        folder = os.path.join(support.SOURCE_DIR, "results", "aa")
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json.gz"):
                with self.subTest(name=name):
                    document = digest.load(os.path.join(folder, name))
                    self.assertEqual(document["schema_version"], digest.SCHEMA_VERSION)
                    self.assertTrue(any(entry.get("mode") for run in document["runs"] for entry in run["entries"]))


class DamagedDigestTest(unittest.TestCase):
    def refused(self, change, field):
        document = one_run()
        change(document)
        with self.assertRaises(digest.DigestError) as caught:
            digest.validate(document)
        self.assertIn(field, str(caught.exception))
        return str(caught.exception)

    def test_the_small_digest_is_valid(self):
        digest.validate(one_run())

    def test_each_broken_rule_is_named(self):
        run = lambda document: document["runs"][0]  # noqa: E731
        entry = lambda document: run(document)["entries"][0]  # noqa: E731
        cases = [
            (lambda d: d.update(schema="gpubench-results"), "schema"),
            (lambda d: d.update(schema_version=3), "schema_version"),
            (lambda d: entry(d).update(mode=["pageable"]), "runs[0].entries[0].mode"),
            (lambda d: d.update(runs=[]), "runs: no run"),
            (lambda d: d.update(runs={"r1": {}}), "runs: expected list"),
            (lambda d: d["runs"].append(copy.deepcopy(d["runs"][0])), "runs[1].id"),
            (lambda d: run(d).update(status="fine"), "runs[0].status"),
            (lambda d: run(d).update(gpu_available="yes"), "runs[0].gpu_available"),
            (lambda d: run(d)["options"].update(trials="3"), "runs[0].options.trials"),
            (lambda d: run(d)["options"].update(trials=True), "runs[0].options.trials"),
            (lambda d: run(d)["machine"].update(gpu=["H100"]), "runs[0].machine.gpu"),
            (lambda d: run(d)["machine"].update(host="x" * 5000), "runs[0].machine.host"),
            (lambda d: run(d)["figures"][0].update(value=1e300), "runs[0].figures[0].value"),
            (lambda d: run(d)["figures"][0].pop("key"), "runs[0].figures[0].key"),
            (lambda d: run(d)["figures"][0].update(trial_values=[1, "2"]), "runs[0].figures[0].trial_values[1]"),
            (lambda d: entry(d).update(median_s=-1.0), "runs[0].entries[0].median_s"),
            (lambda d: entry(d).update(median_s=2e5), "runs[0].entries[0].median_s"),
            (lambda d: entry(d).update(median_s=None), "runs[0].entries[0].median_s"),
            (lambda d: entry(d).update(protocol="fast"), "runs[0].entries[0].protocol"),
            (lambda d: entry(d).update(status="great"), "runs[0].entries[0].status"),
            (lambda d: entry(d)["trials"][1].update(trial=0), "runs[0].entries[0].trials[1].trial"),
            (lambda d: entry(d)["trials"][1].update(median_s="fast"), "runs[0].entries[0].trials[1].median_s"),
            (lambda d: run(d)["entries"].append(copy.deepcopy(entry(d))), "runs[0].entries[2].name"),
            (lambda d: run(d)["entries"].append(None), "runs[0].entries[2]"),
            (lambda d: d.pop("figures_derived_by"), "figures_derived_by"),
        ]
        for change, field in cases:
            with self.subTest(field=field):
                self.refused(change, field)

    def write(self, directory, name, data):
        path = os.path.join(directory, name)
        with open(path, "wb") as stream:
            stream.write(data)
        return path

    def test_damaged_files_are_a_message(self):
        text = json.dumps(one_run()).encode()
        with tempfile.TemporaryDirectory() as directory:
            cases = {
                "cut.json.gz": (gzip.compress(text)[:-20], "cannot read"),
                "plain-named-gz.json.gz": (text, "cannot read"),
                "nan.json": (text.replace(b"0.002,", b"NaN,", 1), "not valid JSON"),
                "deep.json": (b"[" * 100000, "too deeply"),
                "foreign.json": (json.dumps({"schema": "something"}).encode(), "neither a gpubench results file"),
                "list.json": (b"[1, 2]", "neither a gpubench results file"),
                "bad-entry.json": (text.replace(b'"protocol": "cpu"', b'"protocol": 7'), "entries[1].protocol"),
            }
            for name, (data, message) in cases.items():
                path = self.write(directory, name, data)
                with self.subTest(name=name):
                    with self.assertRaises(digest.DigestError) as caught:
                        digest.runs_in(path)
                    self.assertIn(message, str(caught.exception))
                    self.assertIn(path, str(caught.exception))

    def test_the_commands_refuse_it_without_a_traceback(self):
        with tempfile.TemporaryDirectory() as directory:
            document = one_run()
            document["runs"][0]["entries"][0]["median_s"] = 1e308
            path = self.write(directory, "hostile.json", json.dumps(document).encode())
            for args in (("expected", path, "--file", os.path.join(directory, "ranges.json")),
                         ("noise-model", path, path, "--out", os.path.join(directory, "model.json"))):
                with self.subTest(command=args[0]):
                    done = gpubench(*args)
                    self.assertEqual(done.returncode, 1, done.stderr)
                    self.assertIn("gpubench: error:", done.stderr)
                    self.assertIn("runs[0].entries[0].median_s", done.stderr)
                    self.assertNotIn("Traceback", done.stderr)
            self.assertEqual(sorted(os.listdir(directory)), ["hostile.json"])  # nothing written


if __name__ == "__main__":
    unittest.main()
