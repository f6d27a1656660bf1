"""summary.md split like the derivations: each study's sections (its plug-in, studies/<study>.py) and those
across the studies (stages/render_across.py) render what the findings put in `derived` and `findings`; nothing is
computed while rendering. The findings the summary needs are in results.json."""
import copy
import json
import os
import tempfile
import unittest

import support
from support import fixture, make_entry

from gpubench_driver import studies
from gpubench_driver.lib import document, findings, results
from gpubench_driver.stages import analyse, render


def matmul_document():
    with open(fixture("results_v1.json"), encoding="utf-8") as stream:
        made = json.load(stream)
    analyse.derive_findings(made, 0)
    return made


def summary_text(made):
    return render.render(made, [], tempfile.gettempdir())


class DerivedTest(unittest.TestCase):
    def test_headline_speedups(self):
        entries = [make_entry("openblas", "cpu", "host", 1024, 0.5),
                   make_entry("cublas", "gpu", "resident", 1024, 0.01), make_entry("cublas", "gpu", "resident", 64, 0.01)]
        found = findings.headline_speedups(entries)
        self.assertEqual(found["sizes"], [200, 1024, 4096, 8192])
        self.assertEqual(found["rows"], [{"n": 1024, "mode": "resident", "cpu_impl": "openblas", "cpu_median_s": 0.5,
                                          "gpu_impl": "cublas", "gpu_median_s": 0.01, "speedup": 50.0}])

    def test_failures_grouped_by_implementation_precision_and_reason(self):
        entries = [make_entry("cublas_loop", "gpu", mode, 64, 0, status="skipped", batch=batch)
                   for mode in ("resident", "transfer_pinned") for batch in (512, 8)]
        entries.append(make_entry("cublas_loop", "gpu", "resident", 256, 0, status="skipped", batch=8))
        for entry in entries:
            entry["message"] = "skipped: out of memory"
        self.assertEqual(findings.grouped_failures(entries), [{
            "impl": "cublas_loop", "precision": "fp32", "reason": "skipped: out of memory",
            "modes": ["resident", "transfer_pinned"],
            "sizes": [{"n": 64, "batches": [8, 512]}, {"n": 256, "batches": [8]}]}])
        text = summary_text({**matmul_document(), "studies": {"overlap": {"entries": entries, "invocations": [],
                                                                    "derived": {"failures": findings.grouped_failures(
                                                                        entries)}}}})
        self.assertIn("- cublas\\_loop fp32 (resident, transfer\\_pinned; n = 64 (batch 8, 512), 256 (batch 8)): "
                      "skipped: out of memory\n", text)

    def test_findings_for_the_summary(self):
        made = matmul_document()
        findings = made["findings"]
        self.assertEqual(findings["gpu_entries"], 16)
        roof = findings["roofline"]
        self.assertEqual([row["precision"] for row in roof["compute_roofs"]], ["fp32"])
        self.assertIsNone(roof["compute_roofs"][0]["ridge_intensity"])  # no transfer study: no memory roof
        self.assertEqual(findings["nominal_flop"]["notes"], [])
        self.assertEqual(findings["energy_per_gemm"], {"every_size": True, "rows": []})
        self.assertEqual(findings["energy_per_call"], [])
        self.assertEqual(sum(row["entries"] for row in roof["not_placed_groups"]),
                         sum(row["entries"] for row in roof["not_placed"]))

    def test_written_to_and_read_from_results_json(self):
        made = matmul_document()
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "results.json")
            results.write(made, path)
            loaded = results.load(path)
        self.assertEqual(loaded["studies"]["matmul"]["derived"]["headline_speedups"],
                         json.loads(json.dumps(made["studies"]["matmul"]["derived"]["headline_speedups"])))
        self.assertIn("compute_roofs", loaded["findings"]["roofline"])


class RendersDerivedTest(unittest.TestCase):
    """Change a derived value and the page shows it: the sections read `derived`, not the entries."""

    def test_matmul(self):
        made = matmul_document()
        made["studies"]["matmul"]["derived"]["headline_speedups"]["rows"][0]["speedup"] = 1234.0
        self.assertIn("| 1234.00x |", summary_text(made))
        made["studies"]["matmul"]["derived"]["failed_entries"] = [{"name": "x", "status": "error", "message": "m"}]
        self.assertIn("## Skipped and failed entries\n\n- x: error: m\n", summary_text(made))

    def test_precision(self):
        made = support.precision_document()
        derived = made["studies"]["precision"]["derived"]
        derived["cpu_notes"] = [{"precision": "fp4", "note": "a note"}]
        derived["tables"][0]["largest_measured"] = True
        text = summary_text(made)
        self.assertIn("## Precision: on the CPU\n\n- fp4: a note\n", text)
        self.assertIn("## Precision: speed and accuracy at n = 4096 (largest measured)\n", text)

    def test_batch(self):
        made = support.batched_document()
        derived = made["studies"]["batched_gemm"]["derived"]
        derived["series_axes"] = ["impl", "mode", "precision"]
        derived["cpu_precisions"] = ["fp64"]
        text = summary_text(made)
        self.assertIn("(the CPU runs fp64)", text)
        self.assertIn("| n | implementation | mode | precision | best rate |", text)

    def test_findings(self):
        made = matmul_document()
        made["findings"]["gpu_entries"] = 0
        self.assertNotIn("Across the studies", summary_text(made))


class BlocksTest(unittest.TestCase):
    def test_every_section_is_blocks(self):
        made = matmul_document()
        made["studies"].update(support.batched_document()["studies"])
        made["studies"].update(support.precision_document()["studies"])
        analyse.derive_findings(made, 0)
        kinds = (document.Heading, document.Paragraph, document.BulletList, document.Table, document.Figures,
                 document.Folded, document.Beside, document.Panel)
        page = render.blocks(made, [], tempfile.gettempdir())
        self.assertTrue(all(isinstance(block, kinds) for block in page))
        self.assertEqual(document.to_markdown(page), summary_text(made))
        for name, study in made["studies"].items():
            found = studies.BY_NAME[name].summary(study, made)
            self.assertIsInstance(found[0], document.Heading, name)

    def test_derived_is_not_changed_by_rendering(self):
        made = support.batched_document()
        before = copy.deepcopy(made)
        summary_text(made)
        self.assertEqual(made, before)


def no_gpu_document(options):
    """The fixture's matmul and the convolution study of a build with cuDNN, run where no GPU was found,
    with the run options given (as results.json records them)."""
    made = matmul_document()
    made["studies"].update(support.conv_document()["studies"])
    made["studies"]["conv2d"]["cudnn"] = {"available": True, "reason": None, "version": "9.19.0",
                                          "header_version": "9.19.0"}
    made["gpu"] = {"available": False, "reason": "no CUDA device found"}
    made["run"]["options"] = options
    made["references"] = None
    analyse.derive_findings(made, 0)
    return made


class NoGpuQuickRunTest(unittest.TestCase):
    """What a --quick run on a machine without a GPU says of what it did not run."""

    def test_the_references_name_the_option_that_skipped_them(self):
        cases = {"a --quick run skips the references (--reference times them)": {"quick": True, "reference": False},
                 "--cpu-only runs no references": {"quick": True, "reference": False, "cpu_only": True},
                 "--no-reference was given": {"quick": False, "reference": False}}
        for said, options in cases.items():
            with self.subTest(said):
                text = summary_text(no_gpu_document(options))
                self.assertIn(f"## Reference libraries\n\nNot run: {said}.\n", text)
                self.assertNotIn("(--no-reference or --cpu-only)", text)

    def test_a_gpu_library_is_not_named_as_used_without_a_gpu(self):
        text = summary_text(no_gpu_document({"quick": True, "reference": False}))
        self.assertNotIn("cuDNN 9.19.0.", text)
        self.assertIn("cuDNN not used: no GPU (no CUDA device found).", text)

    def test_the_machines_gpu_is_not_named_as_used_when_the_run_did_not_use_it(self):
        made = no_gpu_document({"cpu_only": True})
        made["gpu"] = {"available": False, "reason": "--cpu-only was given"}
        made["machine"]["gpus"] = [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "550.54.15"}]
        self.assertIn("GPU NVIDIA H100 80GB HBM3 (", render.machine_line(made))
        self.assertIn("driver 550.54.15; not used: --cpu-only was given)", render.machine_line(made))


if __name__ == "__main__":
    unittest.main()
