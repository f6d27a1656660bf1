"""The binaries' measurements file (--measurements-out): reading it (a crash can cut its last line),
joining each record to its entry (time, latency, cold-L2 time, burst, energy; an ok entry without a
record is an error), and whether an entry ran clock-limited."""
import json
import os
import tempfile
import unittest

import support
from support import measurement

from gpubench_driver.lib import gbench, measurements

GPU = "matmul/cublas/gpu/resident/fp32/n:256"
CPU = "matmul/openblas/cpu/host/fp32/n:64"


def line(name, record):
    return json.dumps({"name": name, "measurement": record})


def gbench_entry(name, status="ok", flop=2.0 * 256 ** 3, **counters):
    """An entry as read from Google Benchmark's output: one run of one iteration (its time Google
    Benchmark's single figure, which the measurement replaces)."""
    run = {"name": f"{name}/iterations:1/repeats:1/manual_time", "run_type": "iteration", "repetitions": 1,
           "iterations": 1, "real_time": 999.0, "time_unit": "ms", "flop": flop, **counters}
    run["run_name"] = run["name"]
    if status == "error":
        run.update(error_occurred=True, error_message="wrong result: x")
    [entry] = support.entries_of(gbench.GbenchOutput({}, [run]))
    return entry


class ReadFileTest(unittest.TestCase):
    def read(self, text):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "measurements.jsonl")
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(text)
            return measurements.read_file(path)

    def test_complete_lines_are_read(self):
        found = self.read(line(CPU, measurement([2e-6, 3e-6])) + "\n" + line(GPU, measurement([1e-3], "throughput")))
        self.assertEqual(set(found), {CPU, GPU})
        self.assertEqual(found[CPU]["headline"]["samples_s"], [2e-6, 3e-6])
        self.assertEqual(found[GPU]["protocol"], "throughput")

    def test_a_truncated_last_line_is_skipped(self):
        complete = line(CPU, measurement([2e-6]))
        cut = line(GPU, measurement([1e-3, 2e-3], "throughput"))
        found = self.read(complete + "\n" + cut[: len(cut) // 2])
        self.assertEqual(list(found), [CPU])

    def test_garbage_lines_are_skipped(self):
        garbage = ["", "not json", "[1, 2]", '"a string"', json.dumps({"name": 7, "measurement": measurement([1.0])}),
                   json.dumps({"name": GPU}), json.dumps({"name": GPU, "measurement": "fast"}),
                   line(GPU, measurement([1e-3], protocol="guess")), "[" * 100000]
        found = self.read("\n".join([*garbage, line(CPU, measurement([2e-6]))]))
        self.assertEqual(list(found), [CPU])

    def test_an_entry_without_samples_is_skipped(self):
        for headline in ({"median_s": 1e-3}, {"samples_s": []}, {"samples_s": [0.0, -1.0, None, "1"]},
                         {"samples_s": "1e-3"}, None):
            with self.subTest(headline=headline):
                self.assertEqual(self.read(line(GPU, measurement([1e-3], headline=headline))), {})

    def test_a_missing_file_holds_nothing(self):
        self.assertEqual(measurements.read_file(os.path.join(support.FIXTURES, "no_such_file.jsonl")), {})


class JoinTest(unittest.TestCase):
    def test_time_comes_from_the_samples(self):
        entry = gbench_entry(GPU)
        measurements.join([entry], {GPU: measurement([3e-3, 1e-3, 2e-3, 4e-3, 100e-3], "throughput")})
        self.assertEqual(entry["status"], "ok")
        self.assertEqual(entry["time_s"]["median"], 3e-3)  # not Google Benchmark's 999 ms
        self.assertEqual(entry["time_s"]["samples"], [3e-3, 1e-3, 2e-3, 4e-3, 100e-3])
        self.assertAlmostEqual(entry["flop_per_s"], 2.0 * 256 ** 3 / 3e-3)
        self.assertEqual((entry["protocol"], entry["converged"]), ("throughput", True))
        self.assertEqual(entry["burst_s"], 3e-3)
        # The measurement is kept, less the samples time_s holds.
        self.assertEqual(entry["measurement"]["headline"]["stop"], "plateau")
        self.assertNotIn("samples_s", entry["measurement"]["headline"])

    def test_unusable_samples_are_left_out_of_the_time(self):
        entry = gbench_entry(CPU)
        measurements.join([entry], {CPU: measurement([2e-6, float("nan"), -1.0, 4e-6])})
        self.assertEqual(entry["time_s"]["samples"], [2e-6, 4e-6])
        self.assertAlmostEqual(entry["time_s"]["median"], 3e-6)

    def test_latency_and_cold_l2_beside_the_headline(self):
        entry = gbench_entry(GPU)
        record = measurement([1e-3, 1e-3, 1e-3], "throughput", latency={"samples_s": [5e-3, 7e-3, 6e-3]},
                             cold_l2={"samples_s": [2e-3, 2e-3]}, warmup={"burst_call_s": 0.5e-3})
        record["headline"]["converged"] = False
        measurements.join([entry], {GPU: record})
        self.assertEqual(entry["latency_s"]["median"], 6e-3)
        self.assertEqual(entry["cold_l2_s"]["samples"], [2e-3, 2e-3])
        self.assertEqual(entry["time_s"]["median"], 1e-3)
        self.assertEqual((entry["burst_s"], entry["converged"]), (0.5e-3, False))

    def test_energy_per_call(self):
        entry = gbench_entry(GPU)
        energy = {"j_per_call": 0.25, "j_per_call_uncertainty": 0.01, "j_per_call_above_idle": 0.2}
        measurements.join([entry], {GPU: measurement([1e-3], "throughput", energy=energy)})
        self.assertEqual((entry["energy_j_per_op"], entry["energy_j_per_op_uncertainty"],
                          entry["energy_j_per_op_above_idle"]), (0.25, 0.01, 0.2))
        # A window too short to measure energy says why, and gives no figure.
        entry = gbench_entry(GPU)
        measurements.join([entry], {GPU: measurement([1e-3], "throughput", energy={"note": "call too short"})})
        self.assertIsNone(entry["energy_j_per_op"])
        self.assertEqual(entry["measurement"]["energy"], {"note": "call too short"})

    def test_a_missing_record_is_an_error(self):
        missing, measured = gbench_entry(GPU), gbench_entry(CPU, flop=2.0 * 64 ** 3)
        measurements.join([missing, measured], {CPU: measurement([2e-6])})
        self.assertEqual(missing["status"], "error")
        self.assertIn("no measurement record", missing["message"])
        self.assertEqual((missing["time_s"], missing["flop_per_s"], missing["protocol"]), (None, None, None))
        self.assertEqual(measured["status"], "ok")

    def test_an_entry_that_did_not_run_keeps_its_failure(self):
        entry = gbench_entry(GPU, status="error")
        measurements.join([entry], {GPU: measurement([1e-3], "throughput")})
        self.assertEqual((entry["status"], entry["message"]), ("error", "wrong result: x"))
        self.assertEqual({entry[key] for key in (*measurements.FIELDS, "time_s", "measurement")}, {None})


class ClockLimitedTest(unittest.TestCase):
    BUSY_MHZ = 1980.0

    def limited(self, sm_clock_mhz, power=0.0, thermal=0.0, samples=10, busy_clock_mhz=BUSY_MHZ):
        entry = {"telemetry_samples": samples, "sm_clock_mhz": sm_clock_mhz, "power_limited_fraction": power,
                 "thermal_limited_fraction": thermal}
        return measurements._clock_limited(entry, busy_clock_mhz)

    def test_a_limit_flag_at_full_clock_limits_nothing(self):
        self.assertIs(self.limited(self.BUSY_MHZ, power=1.0), False)

    def test_a_lower_clock_with_flags_in_most_readings_is_limited(self):
        self.assertIs(self.limited(0.9 * self.BUSY_MHZ, power=0.8), True)
        self.assertIs(self.limited(0.9 * self.BUSY_MHZ, thermal=0.6), True)

    def test_a_lower_clock_without_flags_in_most_readings_is_not(self):
        self.assertIs(self.limited(0.9 * self.BUSY_MHZ, power=0.3, thermal=0.3), False)
        self.assertIs(self.limited(0.9 * self.BUSY_MHZ, power=None, thermal=None), False)

    def test_too_little_to_tell_is_none(self):
        self.assertIsNone(self.limited(0.9 * self.BUSY_MHZ, power=1.0, samples=measurements.CLOCK_LIMITED_SAMPLES - 1))
        self.assertIsNone(self.limited(0.9 * self.BUSY_MHZ, power=1.0, samples=None))
        self.assertIsNone(self.limited(None, power=1.0))
        self.assertIsNone(self.limited(0.9 * self.BUSY_MHZ, power=1.0, busy_clock_mhz=None))

    def test_joined_from_the_telemetry_and_the_busy_clock(self):
        entry = gbench_entry(GPU, telemetry_samples=8, sm_clock_mhz=1600.0, power_limited_fraction=0.75,
                             thermal_limited_fraction=0.0)
        measurements.join([entry], {GPU: measurement([1e-3], "throughput", busy_clock_mhz=self.BUSY_MHZ)})
        self.assertIs(entry["clock_limited"], True)
        entry = gbench_entry(GPU, telemetry_samples=8, sm_clock_mhz=1600.0, power_limited_fraction=0.75)
        measurements.join([entry], {GPU: measurement([1e-3], "throughput")})  # no busy clock measured
        self.assertIsNone(entry["clock_limited"])


if __name__ == "__main__":
    unittest.main()
