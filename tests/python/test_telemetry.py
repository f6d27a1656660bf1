"""GPU telemetry: the reasons mask, the series files the study binaries write (absent, unavailable,
damaged), joining them over a study's processes, the study summary, the per-entry telemetry (one run per entry,
several in older files), and its validation in results.json. Whether an entry ran clock-limited and
its energy per call come from its measurement: test_measurements.py."""
import json
import os
import tempfile
import unittest

import support

from gpubench_driver.lib import gbench, results, telemetry


def sample(sm, reasons, power=300.0, temperature=50):
    return {"sm_clock_mhz": sm, "mem_clock_mhz": 2619, "power_w": power, "temperature_c": temperature,
            "throttle_reasons": reasons}


def raw(unix_s, sm=1980, reasons=0, energy=1000.0):
    """A sample as a study binary writes it."""
    return {"t_s": unix_s - 1000.0, "unix_s": unix_s, "sm_clock_mhz": sm, "mem_clock_mhz": 2619, "power_w": 310.5,
            "energy_j": energy, "temperature_c": 45, "gpu_util": 100, "mem_util": 40, "memory_used_mib": 1234.5,
            "reasons": reasons}


class ReasonsTest(unittest.TestCase):
    def test_reason_names(self):
        self.assertEqual(telemetry.reason_names(0), [])
        self.assertEqual(telemetry.reason_names(1), ["gpu_idle"])
        self.assertEqual(telemetry.reason_names(0x44), ["sw_power_cap", "hw_thermal_slowdown"])
        self.assertEqual(telemetry.reason_names(0x1000), ["0x1000"])
        for unknown in (None, "0x4", -1, True, 1.5):
            self.assertIsNone(telemetry.reason_names(unknown))


class SeriesFileTest(unittest.TestCase):
    def read(self, text):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "telemetry.json")
            if text is not None:
                with open(path, "w", encoding="utf-8") as stream:
                    stream.write(text)
            return telemetry.read_series(path)

    def test_samples(self):
        samples, note = self.read(json.dumps({"source": "nvml", "interval_s": 0.1,
                                              "samples": [raw(5.0), "junk", {"no": "time"}]}))
        self.assertIsNone(note)
        self.assertEqual(len(samples), 1)

    def test_unavailable_says_why(self):
        self.assertEqual(self.read('{"source": "nvml", "unavailable": "no GPU: none"}'), ([], "no GPU: none"))

    def test_missing_damaged_and_foreign_files(self):
        self.assertIn("did not finish", self.read(None)[1])
        self.assertIn("unreadable", self.read('{"samples": [')[1])
        self.assertIn("unreadable", self.read("[1, 2]")[1])
        self.assertIn("no 'samples' list", self.read('{"samples": 3}')[1])


class StudySeriesTest(unittest.TestCase):
    def test_processes_join_on_one_time_axis(self):
        series = telemetry.StudySeries(started_unix_s=100.0)
        series.add([raw(101.0), raw(101.1, sm=1755, reasons=4)], None)
        series.add([raw(100.5, reasons=1)], None)  # an earlier process's file read later
        record = series.record()
        self.assertEqual(record["source"], "nvml")
        self.assertEqual([s["t_s"] for s in record["samples"]], [0.5, 1.0, 1.1])
        self.assertEqual(record["samples"][2]["throttle_reasons"], ["sw_power_cap"])
        self.assertEqual(record["samples"][1]["memory_used_mib"], 1234.5)
        self.assertEqual(record["summary"]["busy_sm_clock_mhz"], {"min": 1755, "median": 1867.5, "max": 1980})
        self.assertNotIn("note", record)

    def test_no_samples_keeps_the_reasons(self):
        series = telemetry.StudySeries(0.0)
        series.add([], "no GPU: none")
        series.add([], "no GPU: none")
        self.assertEqual(series.record(), {"source": "nvml", "note": "no GPU: none"})

    def test_a_non_finite_reading_becomes_none(self):
        series = telemetry.StudySeries(0.0)
        series.add([{**raw(1.0), "power_w": float("nan"), "energy_j": "x"}], None)
        joined = series.record()["samples"][0]
        self.assertIsNone(joined["power_w"])
        self.assertIsNone(joined["energy_j"])


class SummaryTest(unittest.TestCase):
    def test_clock_power_temperature_and_throttling(self):
        summary = telemetry.summarize([sample(345, ["gpu_idle"], power=70.0), sample(1980, []),
                                       sample(1755, ["sw_power_cap"], power=699.0, temperature=71),
                                       sample(1980, None)])
        self.assertEqual(summary["samples"], 4)
        self.assertEqual(summary["sm_clock_mhz"], {"min": 345, "median": 1867.5, "max": 1980})
        self.assertEqual(summary["busy_sm_clock_mhz"], {"min": 1755, "median": 1867.5, "max": 1980})
        self.assertEqual((summary["max_power_w"], summary["max_temperature_c"]), (699.0, 71))
        self.assertAlmostEqual(summary["throttled_fraction"], 1 / 3)  # idle is no throttle; None is unknown
        self.assertEqual(summary["throttle_reasons"], ["sw_power_cap"])

    def test_no_samples(self):
        summary = telemetry.summarize([])
        self.assertEqual((summary["samples"], summary["sm_clock_mhz"], summary["throttled_fraction"]), (0, None, None))


def repetition(iterations, samples, sm=1980.0, power=300.0, energy=None, power_limited=0.0, thermal=0.0,
               temperature=50.0):
    run = {"iterations": iterations, "telemetry_samples": samples, "sm_clock_mhz": sm, "mem_clock_mhz": 2619.0,
           "power_w": power, "temperature_c_max": temperature, "power_limited_fraction": power_limited,
           "thermal_limited_fraction": thermal}
    if energy is not None:
        run["energy_j"] = energy
    return run


class EntryTelemetryTest(unittest.TestCase):
    def test_combined_over_the_repetitions(self):
        combined = telemetry.combine([
            repetition(100, 1, sm=1980.0, power=400.0, energy=10.0, temperature=50.0),
            repetition(100, 3, sm=1755.0, power=600.0, energy=30.0, power_limited=1 / 3, temperature=60.0),
            repetition(200, 0, sm=float("nan"), power=float("nan"), energy=0.0)])  # no sample inside its loop
        self.assertEqual(combined["telemetry_samples"], 4)
        self.assertEqual(combined["sm_clock_mhz"], (1980.0 + 1755.0) / 2)
        self.assertAlmostEqual(combined["power_w"], (400 * 1 + 600 * 3) / 4)
        self.assertAlmostEqual(combined["power_limited_fraction"], (1 / 3 * 3) / 4)
        self.assertEqual(combined["thermal_limited_fraction"], 0.0)
        self.assertEqual(combined["temperature_c_max"], 60.0)

    def test_energy_and_clock_limits_are_left_to_the_measurement(self):
        # A limit flag in every reading and a moving energy counter: still not decided here (measurements.py
        # weighs the flags against the busy clock; the energy per call is the binary's own figure).
        combined = telemetry.combine([repetition(100, 6, sm=1500.0, energy=50.0, power_limited=1.0, thermal=1.0)])
        self.assertEqual(combined["telemetry_samples"], 6)
        self.assertEqual(combined["power_limited_fraction"], 1.0)
        self.assertEqual((combined["energy_j_per_op"], combined["clock_limited"]), (None, None))

    def test_without_telemetry_everything_is_none(self):
        self.assertEqual(set(telemetry.combine([{"iterations": 5}]).values()), {None})
        self.assertEqual(set(telemetry.combine([]).values()), {None})

    def test_entries_of_google_benchmark_output_carry_it(self):
        name = "matmul/cublas/gpu/resident/fp32/n:64/iterations:1/repeats:1/manual_time"
        runs = [{"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "real_time": 10.0,
                 "time_unit": "us", **repetition(1, 7, sm=1755.0, power=450.0, energy=5.0)}]
        entry = support.entries_of(gbench.GbenchOutput({}, runs))[0]
        self.assertEqual(entry["name"], "matmul/cublas/gpu/resident/fp32/n:64")
        self.assertEqual((entry["telemetry_samples"], entry["sm_clock_mhz"], entry["power_w"]), (7, 1755.0, 450.0))
        self.assertIsNone(entry["energy_j_per_op"])  # its measurement's (measurements.join)
        self.assertIsNone(entry["wall_s"])  # the runner sets it from the console


class ValidationTest(unittest.TestCase):
    def test_samples_are_checked_in_results_json(self):
        document = support.precision_document()
        series = telemetry.StudySeries(0.0)
        series.add([raw(0.5)], None)
        document["studies"]["precision"]["telemetry"] = series.record()
        results.validate(document)
        document["studies"]["precision"]["telemetry"]["samples"][0]["power_w"] = "650 W"
        with self.assertRaises(results.ResultsError) as caught:
            results.validate(document)
        self.assertIn("studies.precision.telemetry.samples[0].power_w", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
