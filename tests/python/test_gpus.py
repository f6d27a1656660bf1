"""run --gpus: choosing the GPUs, each sub-run's command line and environment, gathering the sub-runs into
one results.json (entries tagged with their GPU, the findings on the node's median), the outlier verdict
against the measured noise, gpus.md, and compare and report on a gathered file."""
import contextlib
import copy
import io
import os
import tempfile
import unittest
import unittest.mock

import support

from gpubench_driver.lib import environment, outputs, results, stats
from gpubench_driver.stages import collect, gpus, options as opts
from gpubench_driver.commands import report
from gpubench_driver.commands import cli, compare

HEADLINE = "matmul/cublas/gpu/resident/fp32/n:4096"  # a study's reference comparison: headline-like
OTHER = "matmul/cublas/gpu/resident/fp32/n:1024"
GPUS = [gpus.Gpu(index, f"GPU-{index:04d}", f"00000000:{16 + index:02x}:00.0", "NVIDIA H100 80GB HBM3")
        for index in range(3)]


def entry(name, median_s):
    record = support.blank_entry(name)
    samples = [median_s * (1 + 0.001 * k) for k in (-1, 0, 1)]
    record.update(status="ok", repetitions=len(samples), iterations=1, time_s=stats.summarize(samples),
                  flop=2 * 4096 ** 3, protocol="throughput")
    record["flop_per_s"] = record["flop"] / median_s
    return record


def run_document(gpu, medians, noise_rows=()):
    """One GPU's run: the headline GEMM and another entry at the given medians."""
    doc = results.new_document({"id": f"node-gpu{gpu.index}", "started": "2026-11-24T07:00:00+00:00",
                                "finished": None, "status": "complete", "command_line": ["gpubench", "run"],
                                "options": {"refine_rounds": 0}})
    doc["machine"]["gpus"] = [{"name": gpu.name, "pci.bus_id": gpu.pci_bus_id, "uuid": gpu.uuid}]
    study = results.new_study({}, [1024, 4096])
    study["entries"] = [entry(HEADLINE, medians[0]), entry(OTHER, medians[1])]
    doc["studies"]["matmul"] = study
    doc["findings"] = {"noise_floor": {"rows": list(noise_rows), "trials": 3}}
    doc["warnings"] = [f"warning of gpu {gpu.index}"]
    return doc


def parts(slow=1.05, noise_rows=()):
    """Three GPUs, the third `slow` times the others on the headline GEMM."""
    return [(gpu, run_document(gpu, (0.100 * (slow if gpu.index == 2 else 1), 0.002), noise_rows)) for gpu in GPUS]


class SelectionTest(unittest.TestCase):
    def test_all_or_distinct_indices(self):
        self.assertEqual(gpus.parse_selection("all"), "all")
        self.assertEqual(gpus.parse_selection("0,3,1"), [0, 3, 1])
        for bad in ("0,0", "x", "1,", ""):
            with self.assertRaises(opts.UsageError, msg=bad):
                gpus.parse_selection(bad)

    def test_nvidia_smis_list(self):
        found = gpus.parse_gpu_list("0, GPU-aa, 00000000:18:00.0, NVIDIA H100 80GB HBM3\n"
                                    "1, GPU-bb, 00000000:2A:00.0, NVIDIA H100 80GB HBM3\nNo devices were found\n")
        self.assertEqual([(gpu.index, gpu.uuid, gpu.pci_bus_id) for gpu in found],
                         [(0, "GPU-aa", "00000000:18:00.0"), (1, "GPU-bb", "00000000:2A:00.0")])

    def test_select(self):
        self.assertEqual(gpus.select(GPUS, "all"), GPUS)
        self.assertEqual(gpus.select(GPUS, [2, 0]), [GPUS[2], GPUS[0]])
        with self.assertRaisesRegex(opts.UsageError, "no GPU 7"):
            gpus.select(GPUS, [0, 7])
        with self.assertRaisesRegex(opts.UsageError, "no GPU"):
            gpus.select([], "all")


class SubRunTest(unittest.TestCase):
    def test_command_line_loses_the_parents_flags(self):
        argv = ["run", "--gpus", "all", "--studies=matmul", "--out", "/r/node", "--run-id=node", "--quick"]
        self.assertEqual(gpus.sub_run_argv(argv, GPUS[1], "/r/node", "node"),
                         ["run", "--studies=matmul", "--quick", "--out", "/r/node/gpu1", "--run-id", "node-gpu1",
                          "--no-build"])

    def test_each_sub_run_sees_its_gpu_alone_by_uuid(self):
        env = gpus.sub_run_environment(GPUS[2])
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "GPU-0002")
        self.assertEqual(env[gpus.SUB_RUN_VARIABLE], "2")
        self.assertTrue(env["PYTHONPATH"].startswith(outputs.SCRIPTS_DIR))

    def test_nvidia_smi_is_limited_to_that_gpu(self):
        self.assertEqual(environment.visible_gpu_selection({"CUDA_VISIBLE_DEVICES": "GPU-0002"}), ["-i", "GPU-0002"])
        self.assertEqual(environment.visible_gpu_selection({"CUDA_VISIBLE_DEVICES": "0,1"}), [])
        self.assertEqual(environment.visible_gpu_selection({}), [])

    def test_a_sub_run_starts_no_sub_runs(self):
        with unittest.mock.patch.dict(os.environ, {gpus.SUB_RUN_VARIABLE: "0"}):
            with self.assertRaisesRegex(opts.UsageError, "already one GPU's sub-run"):
                gpus.run(support.run_options(gpus="all"), ["run", "--gpus", "all"])

    def test_the_cli_refuses_gpus_with_repeatability(self):
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            self.assertEqual(cli.main(["run", "--gpus", "all", "--repeatability", "--no-build"]), 2)
        self.assertIn("--gpus: not with --repeatability", stderr.getvalue())


class SpreadTest(unittest.TestCase):
    def rows(self, found):
        return {row["gpu"]: row for row in found["entries"][0]["gpus"]}

    def test_a_gpu_slower_than_the_band_is_an_outlier(self):
        found = gpus.spread(parts(slow=1.05))
        self.assertEqual([row["entry"] for row in found["entries"]], [HEADLINE])  # headline-like entries only
        self.assertAlmostEqual(found["entries"][0]["node_median_s"], 0.100)
        rows = self.rows(found)
        self.assertAlmostEqual(rows[2]["ratio_to_node"], 1.05)
        self.assertEqual(rows[2]["threshold"], 0.02)  # one run's A/A band for GPU entries of 100 us or more
        self.assertEqual(rows[2]["verdict"], gpus.SLOWER)
        self.assertEqual(rows[0]["verdict"], gpus.WITHIN)
        self.assertEqual(found["outliers"], [2])

    def test_within_the_band_is_no_outlier(self):
        found = gpus.spread(parts(slow=1.015))
        self.assertEqual(self.rows(found)[2]["verdict"], gpus.WITHIN)
        self.assertEqual(found["outliers"], [])

    def test_the_floor_a_run_measured_replaces_the_band(self):
        noisy = [{"kind": "GPU entries of 100 us or more", "floor": 0.08}]
        found = gpus.spread(parts(slow=1.05, noise_rows=noisy))
        self.assertEqual(self.rows(found)[2]["threshold"], 0.08)
        self.assertEqual(found["outliers"], [])

    def test_a_faster_gpu_is_said_but_not_flagged(self):
        found = gpus.spread(parts(slow=0.9))
        self.assertEqual(self.rows(found)[2]["verdict"], gpus.FASTER)
        self.assertEqual(found["outliers"], [])

    def test_without_headline_entries_the_long_gpu_entries_are_compared(self):
        found_parts = parts(slow=1.05)
        for _, document in found_parts:  # a --quick run: no headline entry
            document["studies"]["matmul"]["entries"] = [e for e in document["studies"]["matmul"]["entries"]
                                                        if e["name"] == OTHER]
        found = gpus.spread(found_parts)
        self.assertEqual(found["basis"], gpus.LONG_BASIS)
        self.assertEqual([row["entry"] for row in found["entries"]], [OTHER])
        self.assertEqual(found["outliers"], [])  # the third GPU is slow on the headline entry alone

    def test_gpus_md(self):
        text = gpus.page_text(gpus.spread(parts(slow=1.05)))
        self.assertIn("Verdict: GPU 2 slower than the node's median beyond noise on at least one of the entries below. "
                      "Entries: headline entries", text)
        self.assertIn("| 2 | 105.00 ms | 1.050 | 2.0% | slower than the node |", text)
        self.assertIn("no GPU slower than the node's median beyond noise", gpus.page_text(gpus.spread(parts(slow=1.0))))


class GatherTest(unittest.TestCase):
    def setUp(self):
        self.document = gpus.gather(parts(slow=1.05), "node", ["run", "--gpus", "all"])

    def test_every_entry_tagged_with_its_gpu_and_every_gpu_in_the_machine_record(self):
        entries = self.document["studies"]["matmul"]["entries"]
        self.assertEqual(sorted((e["gpu"], e["name"]) for e in entries),
                         sorted((gpu.index, name) for gpu in GPUS for name in (HEADLINE, OTHER)))
        self.assertEqual([gpu["uuid"] for gpu in self.document["machine"]["gpus"]], [g.uuid for g in GPUS])
        self.assertEqual([run["run_id"] for run in self.document["run"]["gpus"]],
                         ["node-gpu0", "node-gpu1", "node-gpu2"])
        self.assertEqual(self.document["run"]["id"], "node")
        self.assertIn("gpu 1: warning of gpu 1", self.document["warnings"])
        self.assertEqual(self.document["findings"]["gpus"]["outliers"], [2])
        results.validate(results.without_non_finite(self.document))

    def test_node_view_takes_the_median_gpus_entry(self):
        node = collect.node_view(self.document)
        headline = next(e for e in node["studies"]["matmul"]["entries"] if e["name"] == HEADLINE)
        self.assertAlmostEqual(headline["time_s"]["median"], 0.100)
        self.assertEqual(len(node["studies"]["matmul"]["entries"]), 2)
        one_gpu = run_document(GPUS[0], (0.1, 0.002))
        self.assertIs(collect.node_view(one_gpu), one_gpu)  # a file of one GPU is read as it is

    def test_a_tag_that_is_no_index_is_refused(self):
        broken = copy.deepcopy(self.document)
        broken["studies"]["matmul"]["entries"][0]["gpu"] = "0"
        with self.assertRaisesRegex(results.ResultsError, "gpu"):
            results.validate(results.without_non_finite(broken))

    def test_report_reads_the_node_median(self):
        with tempfile.TemporaryDirectory() as directory:
            gathered = os.path.join(directory, "results.json")
            results.write(self.document, gathered)
            with contextlib.redirect_stdout(io.StringIO()):
                summary = report.regenerate(gathered)
            with open(summary, encoding="utf-8") as stream:
                self.assertIn("matmul", stream.read().lower())

    def test_compare_reads_the_node_median(self):
        with tempfile.TemporaryDirectory() as directory:
            gathered = os.path.join(directory, "node.json")
            results.write(self.document, gathered)
            single = os.path.join(directory, "one.json")
            results.write({**run_document(GPUS[0], (0.1, 0.002)), "findings": None}, single)
            sources = compare.load_sources([gathered, single], [])
            self.assertEqual(len(sources[0].document["studies"]["matmul"]["entries"]), 2)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(["compare", gathered, single, "--out", os.path.join(directory, "c")]), 0)
            with open(os.path.join(directory, "c", "compare.md"), encoding="utf-8") as stream:
                self.assertIn(HEADLINE, stream.read())


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
VECTOR_ADD = os.path.join(BUILD_DIR, "bench", "gpubench_vector_add")
# nvidia-smi listing two GPUs whose UUIDs CUDA does not know: each sub-run sees no GPU and runs the CPU entries.
FAKE_NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *index,uuid,pci.bus_id,name*) printf '0, GPU-aaaa, 00000000:18:00.0, Fake\\n1, GPU-bbbb, 00000000:2A:00.0, Fake\\n';;
  *) exit 1;;
esac
"""


@unittest.skipUnless(os.access(VECTOR_ADD, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_vector_add not built")
class EndToEndTest(unittest.TestCase):
    def test_two_sub_runs_gathered(self):
        with tempfile.TemporaryDirectory() as directory:
            bin_dir = os.path.join(directory, "bin")
            os.makedirs(bin_dir)
            support.write_executable(os.path.join(bin_dir, "nvidia-smi"), FAKE_NVIDIA_SMI)
            out = os.path.join(directory, "node")
            env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
            done = support.gpubench_run("--gpus", "all", "--studies", "vector_add", "--sizes", "1024", "--trials", "2",
                                        "--no-reference", "--out", out, build_dir=BUILD_DIR, env=env)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            document = results.load(os.path.join(out, "results.json"))
            self.assertTrue(os.path.exists(os.path.join(out, "gpu1", "results.json")))
            with open(os.path.join(out, "gpus.md"), encoding="utf-8") as stream:
                self.assertIn("GPUs 0, 1, each run at once", stream.read())
            self.assertTrue(os.path.exists(os.path.join(out, "summary.md")))
        entries = document["studies"]["vector_add"]["entries"]
        self.assertEqual(sorted({entry["gpu"] for entry in entries}), [0, 1])
        self.assertEqual(len(entries) % 2, 0)
        self.assertEqual([run["uuid"] for run in document["run"]["gpus"]], ["GPU-aaaa", "GPU-bbbb"])


if __name__ == "__main__":
    unittest.main()
