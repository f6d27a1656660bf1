"""run --gpus: choosing the GPUs, each sub-run's command line and environment, gathering the sub-runs into
one results.json (entries tagged with their GPU, the findings on the node's median), the outlier verdict
against the measured noise, gpus.md, and compare and report on a gathered file."""
import contextlib
import copy
import io
import math
import os
import tempfile
import unittest
import unittest.mock

import support

from gpubench_driver.lib import environment, noise_model, outputs, results, stats
from gpubench_driver.lib.noise_model import KindModel, Model
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


# A model of known widths for every kind: 0.5% between trials, 0.3% between runs.
MODEL = Model({kind: KindModel(0.005, math.inf, 0.003, 0.0) for kind in noise_model.KINDS}, {}, {"runs": []})
CPU_HEADLINE = "matmul/openblas/cpu/host/fp32/n:4096"  # numpy's counterpart: headline-like, host-paced
PAGEABLE_COPY = "transfer/copy_engine/gpu/pageable/h2d/n:67108864"  # torch's counterpart: host-paced


def node(medians_per_gpu):
    """[(Gpu, its run)] of len(medians_per_gpu) GPUs, each run holding {name: (protocol, median)}."""
    found = []
    for index, medians in enumerate(medians_per_gpu):
        gpu = gpus.Gpu(index, f"GPU-{index:04d}", f"00000000:{16 + index:02x}:00.0", "NVIDIA H100 80GB HBM3")
        doc = run_document(gpu, (0.1, 0.002))
        by_study = {}
        for name, (protocol, median) in medians.items():
            record = entry(name, median)
            record["protocol"] = protocol
            by_study.setdefault(name.split("/")[0], []).append(record)
        for study, entries in by_study.items():
            doc["studies"][study] = results.new_study({}, [4096])
            doc["studies"][study]["entries"] = entries
        found.append((gpu, doc))
    return found


class SpreadTest(unittest.TestCase):
    def rows(self, found, name=HEADLINE):
        row = next(row for row in found["entries"] if row["entry"] == name)
        return {gpu["gpu"]: gpu for gpu in row["gpus"]}

    def test_a_gpu_slower_beyond_noise_is_an_outlier(self):
        found = gpus.spread(parts(slow=1.05), MODEL)
        self.assertEqual([row["entry"] for row in found["entries"]], [HEADLINE])  # headline-like entries only
        self.assertAlmostEqual(found["entries"][0]["node_median_s"], 0.100)
        rows = self.rows(found)
        self.assertAlmostEqual(rows[2]["ratio_to_node"], 1.05)
        # One trial each: the GPU's log median has 0.005^2 + 0.003^2, the median of three 0.449 of that.
        sd = math.sqrt((1 + noise_model.median_variance(3)) * (0.005 ** 2 + 0.003 ** 2))
        self.assertAlmostEqual(rows[2]["threshold"], math.expm1(math.log(1.02) + 1.6449 * sd), places=4)
        self.assertEqual(rows[2]["verdict"], gpus.SLOWER)
        self.assertEqual(rows[0]["verdict"], gpus.WITHIN)
        self.assertEqual(found["outliers"], [2])

    def test_a_slowdown_within_noise_names_no_gpu(self):
        found = gpus.spread(parts(slow=1.015), MODEL)
        self.assertNotEqual(self.rows(found)[2]["verdict"], gpus.SLOWER)
        self.assertEqual(found["outliers"], [])

    def test_a_noisier_entry_needs_a_larger_slowdown(self):
        noisy = Model({"throughput-long": KindModel(0.03, math.inf, 0.02, 0.0)}, {}, {"runs": []})
        found = gpus.spread(parts(slow=1.05), noisy)
        self.assertGreater(self.rows(found)[2]["threshold"], 0.05)
        self.assertEqual(found["outliers"], [])

    def test_a_faster_gpu_is_said_but_not_flagged(self):
        found = gpus.spread(parts(slow=0.9), MODEL)
        self.assertEqual(self.rows(found)[2]["verdict"], gpus.FASTER)
        self.assertEqual(found["outliers"], [])

    def test_four_gpus_one_slower_on_device_timed_entries_is_named_alone(self):
        jitter = (1.0, 1.003, 0.997, 1.0)  # the healthy GPUs a few tenths apart
        slow = (1.0, 1.08, 1.0, 1.0)
        found = gpus.spread(node([{HEADLINE: ("throughput", 2e-3 * jitter[i] * slow[i]),
                                   "matmul/cublas/gpu/resident/fp32/n:8192": ("throughput", 16e-3 * jitter[3 - i] * slow[i])}
                                  for i in range(4)]), MODEL)
        self.assertEqual(found["outliers"], [1])
        for name in (HEADLINE, "matmul/cublas/gpu/resident/fp32/n:8192"):
            verdicts = {index: gpu["verdict"] for index, gpu in self.rows(found, name).items()}
            self.assertEqual(verdicts, {0: gpus.WITHIN, 1: gpus.SLOWER, 2: gpus.WITHIN, 3: gpus.WITHIN})
        self.assertIn("GPU 1 slower than the node's median beyond noise", gpus.page_text(found))

    def test_host_paced_differences_name_no_gpu(self):
        found = gpus.spread(node([{HEADLINE: ("throughput", 2e-3 * (1.0, 1.003, 0.997, 1.0)[i]),
                                   CPU_HEADLINE: ("cpu", 0.2 * (1.1 if i == 2 else 1)),
                                   PAGEABLE_COPY: ("latency", 5e-3 * (1.1 if i == 3 else 1))}
                                  for i in range(4)]), MODEL)
        bound = {row["entry"]: row["bound"] for row in found["entries"]}
        self.assertEqual(bound, {HEADLINE: gpus.GPU_BOUND, CPU_HEADLINE: gpus.HOST_PACED,
                                 PAGEABLE_COPY: gpus.HOST_PACED})
        self.assertEqual(self.rows(found, PAGEABLE_COPY)[3]["verdict"], gpus.SLOWER)  # the host's copy is slower...
        self.assertEqual(found["outliers"], [])  # ...and no GPU is named for it
        text = gpus.page_text(found)
        self.assertIn("no GPU slower than the node's median beyond noise on the 1 GPU-bound entries", text)
        self.assertIn("## Host-paced entries (the host's)", text)

    def test_two_gpus_tell_a_difference_not_which_is_off(self):
        found = gpus.spread(node([{HEADLINE: ("throughput", 2e-3 * (1.08 if i == 1 else 1))} for i in range(2)]), MODEL)
        self.assertEqual((found["outliers"], found["differing"]), ([], [HEADLINE]))
        row = found["entries"][0]
        self.assertAlmostEqual(row["pair"]["ratio"], 1.08)
        self.assertEqual({gpu["verdict"] for gpu in row["gpus"]}, {gpus.DIFFER})
        text = gpus.page_text(found)
        self.assertIn("GPUs 0 and 1 differ beyond noise on 1 of 1 GPU-bound entries; two GPUs cannot tell which", text)
        same = gpus.spread(node([{HEADLINE: ("throughput", 2e-3)} for _ in range(2)]), MODEL)
        self.assertEqual(same["differing"], [])
        self.assertIn("differ beyond noise on none of the 1", gpus.page_text(same))

    def test_without_headline_entries_the_long_gpu_entries_are_compared(self):
        found_parts = parts(slow=1.05)
        for _, document in found_parts:  # a --quick run: no headline entry
            document["studies"]["matmul"]["entries"] = [e for e in document["studies"]["matmul"]["entries"]
                                                        if e["name"] == OTHER]
        found = gpus.spread(found_parts, MODEL)
        self.assertEqual(found["basis"], gpus.LONG_BASIS)
        self.assertEqual([row["entry"] for row in found["entries"]], [OTHER])
        self.assertEqual(found["outliers"], [])  # the third GPU is slow on the headline entry alone

    def test_without_a_noise_model_the_times_are_shown_unjudged(self):
        with unittest.mock.patch.object(noise_model, "load", side_effect=noise_model.NoiseModelError("no model")):
            found = gpus.spread(parts(slow=1.05))
        self.assertEqual((found["judged"], found["outliers"]), (False, []))
        self.assertIn("Verdict: not judged (no model)", gpus.page_text(found))

    def test_gpus_md(self):
        text = gpus.page_text(gpus.spread(parts(slow=1.05), MODEL))
        self.assertIn("Verdict: GPU 2 slower than the node's median beyond noise on at least one of the GPU-bound "
                      "entries below. Entries: headline entries", text)
        self.assertRegex(text, r"\| 2 \| 105\.00 ms \| 1\.050 \| 1\.0\d\d–1\.0\d\d \| \d\.\d% \| "
                               r"slower than the node \|")
        self.assertIn("no GPU slower than the node's median beyond noise",
                      gpus.page_text(gpus.spread(parts(slow=1.0), MODEL)))


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
