"""GPU telemetry: nvidia-smi's CSV (with [N/A] and [Not Supported] fields), the reasons mask,
the summary, the field-name fallback of newer drivers, and a sampler that always stops."""
import os
import stat
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from unittest import mock

import support

from gpubench_driver import results, telemetry

WITH_REASONS = tuple(telemetry.FIELDS) + ("clocks_event_reasons.active",)
CANNED = "1980, 2619, 612.47, 61, 0x0000000000000004\n"


def fake_read(samples):
    """A read() that returns canned samples in turn, then the last one again."""
    queue = list(samples)
    return lambda: dict(queue.pop(0) if len(queue) > 1 else queue[0])


def sample(sm, reasons, power=300.0, temperature=50):
    return {"sm_clock_mhz": sm, "mem_clock_mhz": 2619, "power_w": power, "temperature_c": temperature,
            "throttle_reasons": reasons}


class ParseTest(unittest.TestCase):
    def test_a_line_with_reasons(self):
        self.assertEqual(telemetry.parse_sample(CANNED, WITH_REASONS),
                         {"sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "power_w": 612.47, "temperature_c": 61,
                          "throttle_reasons": ["sw_power_cap"]})

    def test_not_available_fields_become_none(self):
        parsed = telemetry.parse_sample("1410, [N/A], [Not Supported], 40, [N/A]\n", WITH_REASONS)
        self.assertEqual(parsed, {"sm_clock_mhz": 1410, "mem_clock_mhz": None, "power_w": None, "temperature_c": 40,
                                  "throttle_reasons": None})

    def test_without_the_reasons_field(self):
        parsed = telemetry.parse_sample("1980, 2619, 100.0, 40", tuple(telemetry.FIELDS))
        self.assertIsNone(parsed["throttle_reasons"])

    def test_a_short_line_is_an_error(self):
        with self.assertRaises(telemetry.TelemetryError):
            telemetry.parse_sample("No devices were found", WITH_REASONS)

    def test_reason_names(self):
        self.assertEqual(telemetry.reason_names("0x0000000000000000"), [])
        self.assertEqual(telemetry.reason_names("0x0000000000000001"), ["gpu_idle"])
        self.assertEqual(telemetry.reason_names("0x0000000000000044"), ["sw_power_cap", "hw_thermal_slowdown"])
        self.assertEqual(telemetry.reason_names("0x0000000000001000"), ["0x1000"])
        self.assertIsNone(telemetry.reason_names("[N/A]"))


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


class SamplerTest(unittest.TestCase):
    def assert_no_sampler_thread(self):
        self.assertNotIn("gpubench-telemetry", [thread.name for thread in threading.enumerate()])

    def test_samples_until_stopped_and_no_longer(self):
        sampler = telemetry.Sampler(fake_read([sample(1980, [])]), interval_s=0.01).start()
        time.sleep(0.2)
        record = sampler.stop()
        self.assert_no_sampler_thread()
        count = len(record["samples"])
        self.assertGreater(count, 2)
        time.sleep(0.05)
        self.assertEqual(len(sampler.samples), count)
        self.assertEqual(record["interval_s"], 0.01)
        times = [s["t_s"] for s in record["samples"]]
        self.assertEqual(times, sorted(times))
        self.assertEqual(record["summary"]["samples"], count)
        self.assertNotIn("note", record)

    def test_failing_reads_are_counted_not_raised(self):
        def broken():
            raise OSError("nvidia-smi vanished")
        sampler = telemetry.Sampler(broken, interval_s=0.01).start()
        time.sleep(0.05)
        record = sampler.stop()
        self.assertEqual(record["samples"], [])
        self.assertIn("nvidia-smi vanished", record["note"])

    def test_stop_waits_for_a_slow_read(self):
        def slow():
            time.sleep(0.3)
            return sample(1980, [])
        sampler = telemetry.Sampler(slow, interval_s=0.01).start()
        time.sleep(0.05)
        started = time.monotonic()
        record = sampler.stop()
        self.assertLess(time.monotonic() - started, telemetry.QUERY_TIMEOUT_S + 2)
        self.assert_no_sampler_thread()
        self.assertEqual(len(record["samples"]), 1)

    def test_ctrl_c_still_records_and_stops(self):
        study = {}
        with self.assertRaises(KeyboardInterrupt):
            with telemetry.recorded(study, read=fake_read([sample(1980, [])])):
                time.sleep(0.05)
                raise KeyboardInterrupt
        self.assert_no_sampler_thread()
        self.assertGreaterEqual(len(study["telemetry"]["samples"]), 1)

    def test_without_nvidia_smi(self):
        study = {}
        with mock.patch("shutil.which", return_value=None):
            with telemetry.recorded(study):
                pass
        self.assertEqual(study["telemetry"], {"note": "nvidia-smi not available"})


class ValidationTest(unittest.TestCase):
    def test_samples_are_checked_in_results_json(self):
        document = support.precision_document()
        samples = [{"t_s": 0.5, **sample(1980, [])}]
        document["studies"]["precision"]["telemetry"] = {"interval_s": 1.0, "samples": samples,
                                                         "summary": telemetry.summarize(samples)}
        results.validate(document)
        samples[0]["power_w"] = "650 W"
        with self.assertRaises(results.ResultsError) as caught:
            results.validate(document)
        self.assertIn("studies.precision.telemetry.samples[0].power_w", str(caught.exception))


# Answers like a driver that knows only the newer name of the reasons field.
FAKE_NVIDIA_SMI = textwrap.dedent('''\
    #!{python}
    import sys
    query = next(a for a in sys.argv if a.startswith("--query-gpu="))
    if "clocks_throttle_reasons" in query:
        print('Field "clocks_throttle_reasons.active" is not a valid field to query.')
        sys.exit(2)
    print("1755, 2619, [N/A], 55" + (", 0x0000000000000004" if "clocks_event_reasons" in query else ""))
''')


class NvidiaSmiTest(unittest.TestCase):
    def test_falls_back_to_the_newer_field_name(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "nvidia-smi")
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(FAKE_NVIDIA_SMI.format(python=sys.executable))
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
            with mock.patch.dict(os.environ, {"PATH": directory + os.pathsep + os.environ["PATH"]}):
                read = telemetry.NvidiaSmi("00000000:00:06.0")
                first, second = read(), read()
        self.assertEqual(read.fields[-1], "clocks_event_reasons.active")
        self.assertEqual(first, {"sm_clock_mhz": 1755, "mem_clock_mhz": 2619, "power_w": None, "temperature_c": 55,
                                 "throttle_reasons": ["sw_power_cap"]})
        self.assertEqual(first, second)

    def test_no_answer_at_all_is_an_error(self):
        with mock.patch.dict(os.environ, {"PATH": tempfile.gettempdir()}):
            with self.assertRaises(telemetry.TelemetryError):
                telemetry.NvidiaSmi()()


if __name__ == "__main__":
    unittest.main()
