"""gpubench check: its verdicts on synthetic check results (a healthy GPU, a figure 20% low, no GPU), the checks
beside the figures, check.json read back and recorded by `gpubench expected`, the command line's bad input, and
the command end to end on a stand-in precision binary behind a stand-in nvidia-smi."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from support import SCRIPTS_DIR, TESTS_DIR, fixture, write_executable
from test_run_studies import FAKE_STUDY

from gpubench_driver import studies
from gpubench_driver.commands import expected as expected_command
from gpubench_driver.lib import check_results, expected
from gpubench_driver.lib.figures import figure
from gpubench_driver.stages import check_render, check_verdicts, health

MODEL = "NVIDIA H100 80GB HBM3"
OTHER_MODEL = "NVIDIA H200"
DATASHEET = "datasheet (dense)"


def gemm(value, key="rate/bf16", label="BF16 GEMM (cuBLAS)", where="precision: cublas resident n=8192",
         reference=1000e12):
    """A check figure as the precision plug-in makes it, its interval 1% either side."""
    row = figure(key, label, value, (value * 0.99, value * 1.01), "FLOP/s", "higher", "throughput: device time",
                 where, {"value": reference, "what": DATASHEET})
    return {**row, "study": "precision", "entry": "precision/cublas/gpu/resident/bf16/n:8192"}


def ranges(values, fractions=()):
    """A ranges file's model records: MODEL's runs measured the BF16 GEMM at `values`; OTHER_MODEL's check runs
    reached `fractions` of their datasheet."""
    where = "precision: cublas resident n=8192"
    models = {MODEL: {"runs": [], "figures": {"rate/bf16": {where: {
        "values": list(values), "runs": [f"r{i}" for i in range(len(values))],
        "min": min(values), "max": max(values), "median": sorted(values)[len(values) // 2]}}}}} if values else {}
    if fractions:
        models[OTHER_MODEL] = {"runs": [], "figures": {"rate/bf16": {where: {
            "values": [1.0] * len(fractions), "runs": [f"h{i}" for i in range(len(fractions))],
            "fractions": [{"run": f"h{i}", "value": value, "of": DATASHEET} for i, value in enumerate(fractions)],
            "min": 1.0, "max": 1.0, "median": 1.0}}}}
    return models


def judged(row, models, model=MODEL):
    return {**row, **check_verdicts.judge_figure(row, model, models)}


def part(figures, checks=()):
    return {"index": 0, "name": MODEL, "uuid": "GPU-aaaa", "pci_bus_id": "00000000:18:00.0", "results": None,
            "figures": list(figures), "checks": [dict(check) for check in checks]}


RUN = {"id": "check-test", "started": None, "finished": None, "command_line": [], "git": None, "build_dir": "b",
       "measure_s": 40.0}
CHECKS_OK = ({"check": "ecc", "ok": True, "text": "ECC Enabled"},)


class FigureVerdictTest(unittest.TestCase):
    def test_within_the_models_range_is_as_expected(self):
        row = judged(gemm(700e12), ranges([690e12, 705e12, 710e12]))
        self.assertEqual((row["status"], row["basis"]), (health.AS_EXPECTED, check_verdicts.EXPECTED_RANGE))
        self.assertIn("3 run(s)", row["why"])

    def test_twenty_percent_below_the_range_is_below(self):
        row = judged(gemm(560e12), ranges([690e12, 700e12, 710e12]))
        self.assertEqual(row["status"], health.BELOW)
        self.assertAlmostEqual(row["by"], 0.2, places=2)

    def test_a_model_without_ranges_is_held_to_the_fraction_healthy_gpus_reached(self):
        models = ranges((), fractions=[0.72, 0.75])
        healthy = judged(gemm(720e12), models)
        self.assertEqual((healthy["status"], healthy["basis"]), (health.AS_EXPECTED, check_verdicts.DATASHEET_FRACTION))
        self.assertEqual(healthy["healthy_fraction"]["models"], [OTHER_MODEL])
        low = judged(gemm(0.8 * 720e12), models)
        self.assertEqual(low["status"], health.BELOW)
        self.assertIn("72.0%", low["why"])

    def test_a_gpu_checked_beside_others_is_held_only_to_gpus_checked_as_many_at_once(self):
        together = check_verdicts.model_key(MODEL, 8)
        self.assertEqual(together, f"{MODEL}, 8 checked at once")
        alone = ranges((), fractions=[0.72])
        self.assertEqual(judged(gemm(720e12), alone, together)["status"], health.NOT_JUDGED)
        beside = {check_verdicts.model_key(OTHER_MODEL, 8): alone[OTHER_MODEL]}
        self.assertEqual(judged(gemm(0.5 * 720e12), beside, together)["status"], health.BELOW)
        self.assertEqual(judged(gemm(720e12), beside)["status"], health.NOT_JUDGED)  # one alone: not by those

    def test_a_fraction_of_another_reference_is_no_basis(self):
        row = gemm(720e12)
        row["reference"] = {"value": 2e15, "what": "datasheet, without tensor cores"}
        self.assertEqual(judged(row, ranges((), fractions=[0.72]))["status"], health.NOT_JUDGED)

    def test_without_range_or_fraction_a_figure_is_not_judged(self):
        row = judged(gemm(700e12), {})
        self.assertEqual((row["status"], row["basis"]), (health.NOT_JUDGED, None))
        self.assertIn("gpubench expected", row["why"])

    def test_a_pair_short_of_its_peers_median_is_below(self):
        rows = [{**gemm(value, key=f"p2p/gpu0-gpu{i}"), "status": health.NOT_JUDGED, "timed_as": "latency: host"}
                for i, value in enumerate((400e9, 410e9, 405e9, 320e9))]
        check_verdicts.judge_peers(rows)
        self.assertEqual([row["status"] for row in rows], [health.AS_EXPECTED] * 3 + [health.BELOW])
        self.assertEqual(rows[3]["basis"], check_verdicts.PEER_MEDIAN)

    def gpu_parts(self, rates, launches):
        """One part per GPU checked at once, none judged by a record: a BF16 GEMM rate and a launch time each."""
        launch = {"key": "launch/sync_each", "label": "Kernel launch latency", "unit": "s", "better": "lower",
                  "where": "launch_overhead: empty_kernel sync_each n=100", "timed_as": "latency: host"}
        return [{**part([{**gemm(rate), "status": health.NOT_JUDGED},
                         {**launch, "value": seconds, "status": health.NOT_JUDGED}]), "index": index}
                for index, (rate, seconds) in enumerate(zip(rates, launches))]

    def test_a_gpu_short_of_the_others_median_is_below_in_the_better_direction_of_each_figure(self):
        parts = self.gpu_parts((700e12, 705e12, 350e12, 702e12), (9e-6, 9.1e-6, 20e-6, 9.05e-6))
        check_verdicts.judge_across_gpus(parts)
        statuses = [[row["status"] for row in gpu["figures"]] for gpu in parts]
        fine, below = [health.AS_EXPECTED] * 2, [health.BELOW] * 2
        self.assertEqual(statuses, [fine, fine, below, fine])
        self.assertIn("of the median of its 4 GPUs checked at once", parts[2]["figures"][0]["why"])

    def test_healthy_gpus_are_as_expected_and_two_gpus_stay_not_judged(self):
        healthy = self.gpu_parts((700e12, 705e12, 698e12), (9e-6, 9.1e-6, 9.05e-6))
        check_verdicts.judge_across_gpus(healthy)
        self.assertEqual({row["status"] for gpu in healthy for row in gpu["figures"]}, {health.AS_EXPECTED})
        two = self.gpu_parts((700e12, 350e12), (9e-6, 20e-6))
        check_verdicts.judge_across_gpus(two)  # two cannot tell which of them is off
        self.assertEqual({row["status"] for gpu in two for row in gpu["figures"]}, {health.NOT_JUDGED})


def entry(name, clock, power=0.0, thermal=0.0, protocol="throughput"):
    return {"name": name, "protocol": protocol, "sm_clock_mhz": clock, "power_limited_fraction": power,
            "thermal_limited_fraction": thermal}


class ChecksTest(unittest.TestCase):
    GPU = {"clocks.max.sm": 1980, "power.limit": 700.0, "power.default_limit": 700.0}

    def test_clocks_held_by_the_power_cap_are_the_gpus_own(self):
        check = check_verdicts.clock_check(self.GPU, [entry("a", 1980), entry("b", 1600, power=0.9)])
        self.assertTrue(check["ok"])
        self.assertIn("1 held by the power limit", check["text"])

    def test_a_thermal_slowdown_fails(self):
        check = check_verdicts.clock_check(self.GPU, [entry("a", 1400, thermal=0.8)])
        self.assertFalse(check["ok"])
        self.assertIn("thermal", check["text"])

    def test_a_lowered_clock_with_no_limit_active_fails(self):
        check = check_verdicts.clock_check(self.GPU, [entry("a", 1500), entry("host", 300, protocol="latency")])
        self.assertFalse(check["ok"])
        self.assertIn("locked or lowered", check["text"])
        self.assertIn("1 device-timed entries", check["text"])

    def test_a_power_limit_below_its_default_fails(self):
        self.assertFalse(check_verdicts.power_check({**self.GPU, "power.limit": 500.0}, None)["ok"])
        self.assertTrue(check_verdicts.power_check(self.GPU, None)["ok"])

    def test_checks_of_a_gpu(self):
        gpu = {**self.GPU, "pcie.link.gen.max": 4, "pcie.link.width.max": 16, "ecc.mode.current": "Enabled",
               "ecc.errors.uncorrected.volatile.total": 0}
        sheet = {"link": {"generation": 5, "width": 16}, "power_limit_w": 700}
        found = {check["check"]: check["ok"] for check in
                 check_verdicts.gpu_checks(gpu, sheet, [entry("a", 1980)],
                                           [{"pid": 1, "name": "x", "used_memory_mib": 500}])}
        self.assertEqual(found, {"clocks": True, "power_limit": True, "link": False, "ecc": True, "processes": False})


class VerdictAndExitStatusTest(unittest.TestCase):
    def check(self, parts, node=None, errors=()):
        found = check_render.document(dict(RUN), copy.deepcopy(parts), node, errors)
        return found, check_render.console(found, "out/check.json", RUN["measure_s"])

    def test_a_healthy_gpu_exits_0(self):
        models = ranges([690e12, 700e12, 710e12])
        found, screen = self.check([part([judged(gemm(700e12), models)], CHECKS_OK)])
        self.assertEqual((found["verdict"], found["exit_status"]), (check_verdicts.HEALTHY, 0))
        self.assertIn("gpubench check: healthy (exit status 0)", screen)
        self.assertIn("BF16 GEMM (cuBLAS)", screen)
        self.assertLessEqual(len(screen.splitlines()), 30)

    def test_a_figure_twenty_percent_low_exits_1_and_is_named(self):
        models = ranges([690e12, 700e12, 710e12])
        rows = [judged(gemm(560e12), models), judged(gemm(700e12, key="rate/fp16", label="FP16 GEMM (cuBLAS)",
                                                          where="elsewhere"), models)]
        found, screen = self.check([part(rows, CHECKS_OK)])
        self.assertEqual((found["verdict"], found["exit_status"]), (check_verdicts.BELOW, 1))
        self.assertIn("below: GPU 0: BF16 GEMM (cuBLAS)", screen)
        self.assertIn("BELOW 20% off", screen)
        self.assertIn("1 figure(s) not judged", screen)  # the other figure: below wins over not judged

    def test_a_failed_check_exits_1_and_is_named(self):
        failing = ({"check": "ecc", "ok": False, "text": "ECC Enabled, 3 uncorrected error(s)"},)
        found, screen = self.check([part([judged(gemm(700e12), ranges([700e12]))], failing)])
        self.assertEqual(found["exit_status"], 1)
        self.assertIn("below: GPU 0: ecc", screen)

    def test_no_gpu_exits_2_with_the_reason(self):
        found, screen = self.check([], errors=["no GPU: nvidia-smi lists none on this machine"])
        self.assertEqual((found["verdict"], found["exit_status"]), (check_verdicts.NOT_JUDGED, 2))
        self.assertTrue(screen.startswith("gpubench check: no GPU"))

    def test_a_figure_without_basis_exits_2(self):
        found, _ = self.check([part([judged(gemm(700e12), {})], CHECKS_OK)])
        self.assertEqual(found["exit_status"], 2)

    def test_several_gpus_share_one_table_and_the_node_is_judged(self):
        models = ranges([690e12, 700e12, 710e12])
        parts = [dict(part([judged(gemm(value), models)], CHECKS_OK), index=index)
                 for index, value in enumerate((700e12, 705e12, 560e12))]
        pairs = [{**gemm(value, key=f"p2p/gpu0-gpu{i}", label=f"Peer copy gpu0 to gpu{i}"), "unit": "B/s",
                  "status": health.NOT_JUDGED} for i, value in enumerate((400e9, 402e9, 300e9))]
        check_verdicts.judge_peers(pairs)
        found, screen = self.check(parts, node={"gpus": [0, 1, 2], "name": f"{MODEL} x3", "results": None,
                                                "figures": pairs, "checks": []})
        self.assertEqual([gpu["verdict"] for gpu in found["gpus"]], ["healthy", "healthy", "below"])
        self.assertEqual(found["node"]["verdict"], "below")
        self.assertIn("GPU 2: BF16 GEMM (cuBLAS)", screen)
        self.assertIn("between GPUs: Peer copy gpu0 to gpu2", screen)
        self.assertIn("560.0!", screen)


class CheckFileTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.directory.name, check_results.FILE)

    def tearDown(self):
        self.directory.cleanup()

    def write(self, found):
        with open(self.path, "w", encoding="utf-8") as stream:
            json.dump(found, stream)

    def healthy_check(self):
        row = {**judged(gemm(720e12), {}), "fraction_of_reference": 0.72}
        return check_render.document(dict(RUN), [part([row], CHECKS_OK)], None)

    def test_expected_records_a_checks_figures_and_their_fractions(self):
        self.write(self.healthy_check())
        ranges_path = os.path.join(self.directory.name, "ranges.json")
        self.assertEqual(expected_command.update([self.path], ranges_path), {MODEL: 1})
        models = expected.load(ranges_path)
        point = models[MODEL]["figures"]["rate/bf16"]["precision: cublas resident n=8192"]
        self.assertEqual(point["values"], [720e12])
        self.assertEqual(point["fractions"], [{"run": "check-test-gpu0", "value": 0.72, "of": DATASHEET}])
        # Another model without ranges of its own is now held to that fraction.
        self.assertEqual(check_verdicts.judge_figure(gemm(0.5e15), OTHER_MODEL, models)["status"], health.BELOW)

    def test_the_figures_between_gpus_are_a_run_of_the_nodes_model(self):
        pair = {**gemm(400e9, key="p2p/gpu0-gpu1", label="Peer copy gpu0 to gpu1"), "unit": "B/s",
                "status": health.NOT_JUDGED}
        node = {"gpus": [0, 1], "name": f"{MODEL} x2", "results": None, "figures": [pair], "checks": []}
        found = check_render.document(dict(RUN), [part([judged(gemm(720e12), {})], CHECKS_OK)], node)
        self.write(found)
        ranges_path = os.path.join(self.directory.name, "ranges.json")
        self.assertEqual(expected_command.update([self.path], ranges_path), {MODEL: 1, f"{MODEL} x2": 1})
        self.assertIn("p2p/gpu0-gpu1", expected.load(ranges_path)[f"{MODEL} x2"]["figures"])

    def test_a_foreign_or_newer_or_damaged_file_is_refused_by_name(self):
        found = self.healthy_check()
        for change, words in ((lambda d: d.update(schema="x"), "not a gpubench-check file"),
                              (lambda d: d.update(schema_version=99), "schema_version"),
                              (lambda d: d["gpus"][0]["figures"][0].update(value="fast"), "figures[0].value")):
            damaged = copy.deepcopy(found)
            change(damaged)
            self.write(damaged)
            with self.assertRaises(check_results.CheckFileError) as caught:
                check_results.load(self.path)
            self.assertIn(words, str(caught.exception))


def driver(*args, env=None, cwd=None):
    environment = {**(env or os.environ), "PYTHONPATH": SCRIPTS_DIR}
    return subprocess.run([sys.executable, "-m", "gpubench_driver", "check", *args], capture_output=True, text=True,
                          timeout=300, env=environment, cwd=cwd)


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.directory.name, "check")

    def tearDown(self):
        self.directory.cleanup()

    def assert_refused(self, done, words):
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertIn(words, done.stderr)
        self.assertNotIn("Traceback", done.stdout + done.stderr)

    def test_bad_gpus(self):
        self.assert_refused(driver("--gpus", "0,x", "--no-build", "--out", self.out), "--gpus")
        self.assertFalse(os.path.exists(self.out))

    def test_an_unknown_flag(self):
        self.assert_refused(driver("--trials", "3"), "unrecognized arguments: --trials")

    def test_out_in_the_source_tree(self):
        self.assert_refused(driver("--no-build", "--out", os.path.join(SCRIPTS_DIR, "x")), "--out")

    def test_a_ranges_file_that_cannot_be_read(self):
        bad = os.path.join(self.directory.name, "ranges.json")
        with open(bad, "w", encoding="utf-8") as stream:
            stream.write("{")
        self.assert_refused(driver("--no-build", "--out", self.out, "--ranges", bad), "cannot read the expected ranges")

    def test_no_gpu_exits_2_with_a_clear_message(self):
        empty = os.path.join(self.directory.name, "bin")
        os.makedirs(empty)  # a PATH without nvidia-smi
        done = driver("--no-build", "--out", self.out, env={**os.environ, "PATH": empty})
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertIn("no GPU: nvidia-smi lists none on this machine", done.stdout)
        self.assertNotIn("Traceback", done.stdout + done.stderr)
        self.assertEqual(check_results.load(os.path.join(self.out, check_results.FILE))["exit_status"], 2)


# nvidia-smi of one H100: its list, its record (environment.NVIDIA_SMI_FIELDS) and no other process.
FAKE_NVIDIA_SMI = textwrap.dedent("""\
    #!/bin/sh
    case "$*" in
      *index,uuid,pci.bus_id,name*) printf '0, GPU-aaaa, 00000000:18:00.0, NVIDIA H100 80GB HBM3\\n';;
      *query-gpu=name,uuid*) printf 'NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:18:00.0, 81559, 1980, 2619, 1980, 700.00, \
    700.00, 5, 5, 16, 16, Enabled, 0, 550.54, 40\\n';;
      *query-compute-apps*) ;;
      *) exit 1;;
    esac
    """)


class EndToEndTest(unittest.TestCase):
    """The precision study's stand-in replays the fixture's entries (cuBLAS at n = 8192 among them); the other
    studies with a check point are not built, so the check says so and cannot call the GPU healthy."""

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        root = self.directory.name
        self.build_dir = os.path.join(root, "build")
        os.makedirs(os.path.join(self.build_dir, "bench"))
        os.makedirs(os.path.join(root, "bin"))
        write_executable(os.path.join(root, "bin", "nvidia-smi"), FAKE_NVIDIA_SMI)
        self.env = {**os.environ, "PATH": os.path.join(root, "bin") + os.pathsep + os.environ["PATH"]}
        self.stand_in(fixture("gbench_precision.json"))

    def tearDown(self):
        self.directory.cleanup()

    def stand_in(self, benchmarks):
        write_executable(os.path.join(self.build_dir, "bench", "gpubench_precision"),
                         FAKE_STUDY.format(python=sys.executable, tests=TESTS_DIR,
                                           describe=fixture("precision_describe.json"), benchmarks=benchmarks))

    def check(self, name, *args):
        out = os.path.join(self.directory.name, name)
        done = driver("--no-build", "--build-dir", self.build_dir, "--out", out, *args, env=self.env)
        self.assertNotIn("Traceback", done.stdout + done.stderr)
        return done, check_results.load(os.path.join(out, check_results.FILE)), out

    def slower_tf32(self):
        """The fixture with the TF32 GEMM's time at n = 8192 twice as long: its rate half. (The fixture's entries
        carry no measurement record, so the noise model holds them to its widest kind's margin, about 25%.)"""
        with open(fixture("gbench_precision.json"), encoding="utf-8") as stream:
            found = json.load(stream)
        for run in found["benchmarks"]:
            if run["run_name"].startswith("precision/cublas/gpu/resident/tf32/n:8192"):
                run["real_time"] *= 2
        path = os.path.join(self.directory.name, "slower.json")
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(found, stream)
        return path

    def test_first_check_then_ranges_then_a_slower_gemm(self):
        # No ranges yet: a file that does not exist holds none (the repository's file has this GPU's).
        nothing = ("--ranges", os.path.join(self.directory.name, "none.json"))
        done, found, out = self.check("first", *nothing)
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        rows = found["gpus"][0]["figures"]
        gemms = [row for row in rows if row["study"] == "precision"]
        self.assertEqual([row["key"] for row in gemms][:3], ["rate/fp32", "rate/tf32", "rate/fp16"])
        self.assertTrue(all(row["point"] == "n = 8192; impls cublas; modes resident" for row in gemms))
        self.assertTrue(all(row["plateau"] == studies.BY_NAME["precision"].check.plateau for row in gemms))
        self.assertTrue(all(row["status"] == health.NOT_JUDGED for row in gemms))
        missing = {row["study"] for row in rows if row["value"] is None}
        self.assertEqual(missing, {"transfer", "stream", "roofline", "launch_overhead"})
        self.assertTrue(os.path.exists(os.path.join(out, "results.json")))
        self.assertEqual({check["check"] for check in found["gpus"][0]["checks"]},
                         {"power_limit", "link", "ecc", "processes"})

        # A range is made of at least three runs (health.MIN_RUNS): two more checks of the same GPU.
        outs = [out] + [self.check(name, *nothing)[2] for name in ("second", "third")]
        ranges_path = os.path.join(self.directory.name, "ranges.json")
        expected_command.update([os.path.join(each, check_results.FILE) for each in outs], ranges_path)
        done, found, _ = self.check("again", "--ranges", ranges_path)
        self.assertEqual(done.returncode, 2)  # the studies not built are still not judged
        self.assertTrue(all(row["status"] == health.AS_EXPECTED for row in found["gpus"][0]["figures"]
                            if row["study"] == "precision"))

        self.stand_in(self.slower_tf32())
        done, found, _ = self.check("slower", "--ranges", ranges_path)
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertIn("below: GPU 0: TF32 GEMM (cuBLAS)", done.stdout)
        tf32 = next(row for row in found["gpus"][0]["figures"] if row["key"] == "rate/tf32")
        self.assertEqual((tf32["status"], tf32["basis"]), (health.BELOW, check_verdicts.EXPECTED_RANGE))
        self.assertAlmostEqual(tf32["by"], 0.5, places=2)


    def test_a_binary_that_fails_is_not_judged_and_named(self):
        write_executable(os.path.join(self.build_dir, "bench", "gpubench_precision"), textwrap.dedent(f"""\
            #!{sys.executable}
            import json, sys
            sys.path.insert(0, {TESTS_DIR!r})
            import support
            if "--describe" in sys.argv:
                with open({fixture("precision_describe.json")!r}) as stream:
                    description = json.load(stream)
                print(json.dumps(support.described(description,
                                                   ["precision/cublas/gpu/resident/bf16/n:8192/manual_time"])))
            else:
                print("cuBLAS: CUBLAS_STATUS_EXECUTION_FAILED", file=sys.stderr)
                sys.exit(3)
            """))
        done, found, _ = self.check("failing")
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        failed = [row for row in found["gpus"][0]["figures"] if row["study"] == "precision"]
        self.assertEqual(len(failed), 1)
        self.assertIn("exited with status 3", failed[0]["why"])
        self.assertIn("precision: not measured", done.stdout)

    def test_two_gpus_each_checked_by_a_sub_check_then_between_them(self):
        with open(os.path.join(self.directory.name, "bin", "nvidia-smi"), "w", encoding="utf-8") as stream:
            stream.write(FAKE_NVIDIA_SMI.replace("NVIDIA H100 80GB HBM3\\n';;", "NVIDIA H100 80GB HBM3\\n"
                                                 "1, GPU-bbbb, 00000000:2A:00.0, NVIDIA H100 80GB HBM3\\n';;", 1))
        # The committed ranges without any record of GPUs checked together: nothing judges these fakes.
        with open(expected.EXPECTED, encoding="utf-8") as stream:
            document = json.load(stream)
        document["models"] = {name: model for name, model in document["models"].items()
                              if check_verdicts.TOGETHER_MARK not in name and not name.endswith(" x2")}
        alone = os.path.join(self.directory.name, "alone-ranges.json")
        with open(alone, "w", encoding="utf-8") as stream:
            json.dump(document, stream)
        done, found, out = self.check("node", "--ranges", alone)
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        self.assertEqual([(part["index"], part["results"]) for part in found["gpus"]],
                         [(0, os.path.join("gpu0", "results.json")), (1, os.path.join("gpu1", "results.json"))])
        self.assertTrue(all(any(row["key"] == "rate/tf32" for row in part["figures"]) for part in found["gpus"]))
        self.assertEqual(found["node"]["name"], f"{MODEL} x2")
        self.assertEqual({part["model"] for part in found["gpus"]}, {f"{MODEL}, 2 checked at once"})
        ranges_path = os.path.join(self.directory.name, "node-ranges.json")
        self.assertEqual(expected_command.update([os.path.join(out, check_results.FILE)], ranges_path),
                         {f"{MODEL}, 2 checked at once": 2})
        self.assertEqual({row["study"] for row in found["node"]["figures"]}, {"p2p", "collectives"})
        self.assertIn("GPU 0     GPU 1", done.stdout)


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
PRECISION = os.path.join(BUILD_DIR, "bench", "gpubench_precision")


def gpu_of_build():
    """The GPU the built precision binary finds ({available, reason})."""
    done = subprocess.run([PRECISION, "--describe"], capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout).get("gpu") or {} if done.returncode == 0 else {"available": False,
                                                                                 "reason": done.stderr[-200:]}


@unittest.skipUnless(os.access(PRECISION, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_precision not built")
class GpuCheckTest(unittest.TestCase):
    """gpubench check on this machine's first GPU with the binaries built: every check point measured, every figure
    with its point and plateau; the verdict is the GPU's (0 or 1), or 2 where no basis is recorded yet."""

    def setUp(self):
        gpu = gpu_of_build()
        if not gpu.get("available"):
            self.skipTest("no GPU: " + str(gpu.get("reason")))

    def test_every_check_point_is_measured_on_the_gpu(self):
        with tempfile.TemporaryDirectory() as directory:
            out = os.path.join(directory, "check")
            done = driver("--no-build", "--build-dir", BUILD_DIR, "--gpus", "0", "--out", out)
            found = check_results.load(os.path.join(out, check_results.FILE))
        self.assertIn(done.returncode, (0, 1, 2), done.stdout + done.stderr)
        self.assertNotIn("Traceback", done.stdout + done.stderr)
        rows = found["gpus"][0]["figures"]
        self.assertEqual([row["why"] for row in rows if row["value"] is None], [])
        self.assertEqual({row["study"] for row in rows},
                         {study.name for study in studies.STUDIES if study.check and study.check.gpus == 1})
        self.assertTrue(all(row["point"] and row["plateau"] and row["entry"] for row in rows))
        print(f"\ngpubench check on the GPU: {found['verdict']}, {found['run']['measure_s']:.1f} s after the build "
              f"({len(rows)} figures)")


class CheckPointsTest(unittest.TestCase):
    def test_every_check_point_says_why_it_is_a_plateau_and_what_it_costs(self):
        points = {study.name: study.check for study in studies.STUDIES if study.check}
        self.assertEqual(set(points), {"precision", "roofline", "stream", "transfer", "launch_overhead", "p2p",
                                       "collectives"})
        for name, check in points.items():
            self.assertTrue(check.plateau and check.budget and check.sizes, name)
            self.assertIn(check.gpus, (1, 2), name)


if __name__ == "__main__":
    unittest.main()
