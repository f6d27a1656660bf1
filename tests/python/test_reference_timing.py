"""The reference scripts' steady-state protocol (scripts/reference_timing.py), without a GPU: the
stopping rule on the cases the C++ rule is tested on too (fixtures/stopping_rule_cases.json), the
warm-up's settle logic and the held samples on fake clocks, devices and operations.

The fixture: each case's samples are fed one at a time; after the i-th, measured_s is the sum of the
first i of measured_s_per_sample (one number: i times it) and elapsed_s is i x elapsed_s_per_sample;
expect names the 1-based sample after which the rule stops and why. The samples are dyadic, so the
sums and the noise at the exact-threshold cases are exact in any summation order."""
import json
import math
import os
import subprocess
import statistics
import unittest
from unittest import mock

import support

import reference_timing
from gpubench_driver.lib import results
from reference_timing import StoppingRule, noise

with open(support.fixture("measurement_protocol.json"), encoding="utf-8") as stream:
    PROTOCOL_TEXT = stream.read()
PROTOCOL = json.loads(PROTOCOL_TEXT)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class StoppingRuleTest(unittest.TestCase):
    def test_the_shared_cases(self):
        with open(support.fixture("stopping_rule_cases.json"), encoding="utf-8") as stream:
            cases = json.load(stream)
        self.assertGreaterEqual(len(cases), 8)
        self.assertEqual({case["expect"]["reason"] for case in cases}, {"noise", "plateau", "timeout"})
        for case in cases:
            with self.subTest(case["name"]):
                self.assertEqual(self.run_case(case), (case["expect"]["stop_after"], case["expect"]["reason"]))

    @staticmethod
    def run_case(case):
        """(samples taken, reason) of sample_until_stopped on the case's samples and clocks."""
        measured = case["measured_s_per_sample"]
        measured = measured if isinstance(measured, list) else [measured] * len(case["samples_s"])
        clock, taken = FakeClock(), []

        def take_sample():
            index = len(taken)
            taken.append(index)
            clock.now = (index + 1) * case["elapsed_s_per_sample"]
            return case["samples_s"][index], measured[index]
        sampling = reference_timing.sample_until_stopped(take_sample, StoppingRule(**case["rule"]), clock)
        assert sampling.measured_s == math.fsum(measured[:len(taken)])  # dyadic: exact in any order
        return len(sampling.samples), sampling.reason

    def test_noise_is_the_sample_standard_deviation_over_the_mean(self):
        self.assertEqual(noise([1.0, 2.0, 3.0]), 0.5)  # stdev 1 (n - 1), mean 2
        self.assertEqual(noise([4.0, 4.0]), 0.0)
        self.assertIsNone(noise([1.0]))

    def test_a_rule_needs_two_samples_for_its_noise(self):
        with self.assertRaises(reference_timing.ProtocolError):
            StoppingRule(max_noise=0.01, min_samples=1, min_time_s=0, timeout_s=1, plateau_tolerance=0.02)

    def test_the_rule_from_a_protocol_section(self):
        rule = StoppingRule.of(PROTOCOL["throughput"])  # sample_s and max_calls_per_sample are not the rule's
        self.assertEqual((rule.max_noise, rule.min_samples, rule.timeout_s),
                         tuple(PROTOCOL["throughput"][key] for key in ("max_noise", "min_samples", "timeout_s")))


# Warm-up parameters in powers of two, so that the windows close after exactly known batches.
WARMUP = {"batch_s": 2.0 ** -7, "window_s": 2.0 ** -5, "settle_windows": 3, "settle_tolerance": 0.01,
          "min_s": 2.0 ** -3, "max_s": 0.25}
T = 2.0 ** -10  # seconds per call at the start


def fake_batches(per_call_s, clock):
    """batches(k) whose i-th batch takes k x per_call_s(i) seconds, device and wall alike."""
    def batches(calls):
        for index in range(10000):
            seconds = calls * per_call_s(index)
            clock.now += seconds
            yield seconds
    return batches


class WarmUpTest(unittest.TestCase):
    def test_it_settles_once_the_last_windows_agree_after_min_s(self):
        # 4 batches at T (one window), then the clock sags: 1.25 T per call, windows of 4 batches each.
        clock = FakeClock()
        warm = reference_timing.warm_up(T, fake_batches(lambda i: T if i < 4 else 1.25 * T, clock), WARMUP, clock)
        self.assertEqual(warm.calls_per_batch, 8)  # batch_s / T
        self.assertEqual(warm.burst_s, T)
        self.assertEqual(warm.window_per_call_s, [T, 1.25 * T, 1.25 * T, 1.25 * T])
        self.assertTrue(warm.settled)
        # min_s passed during the third window of 1.25 T; the windows agreed only at its end.
        self.assertEqual(warm.seconds, 4 * 8 * T + 12 * 8 * 1.25 * T)
        self.assertEqual(warm.per_call_s, 1.25 * T)

    def test_agreeing_windows_wait_for_min_s(self):
        clock = FakeClock()
        warm = reference_timing.warm_up(T, fake_batches(lambda i: T, clock), WARMUP, clock)
        self.assertTrue(warm.settled)
        self.assertEqual(warm.seconds, WARMUP["min_s"])  # 4 windows of 2^-5 s, not the 3 that agreed first
        self.assertEqual(len(warm.window_per_call_s), 4)

    def test_it_gives_up_at_max_s(self):
        clock = FakeClock()  # every window 2% slower than the one before: a drift that never settles
        warm = reference_timing.warm_up(T, fake_batches(lambda i: T * 1.02 ** (i // 4), clock), WARMUP, clock)
        self.assertFalse(warm.settled)
        self.assertGreaterEqual(warm.seconds, WARMUP["max_s"])
        self.assertLess(warm.seconds - 8 * 1.25 * T, WARMUP["max_s"])  # the batch that crossed it was the last

    def test_windows_that_go_up_and_down_are_noise(self):
        clock = FakeClock()  # alternating windows of T and 1.25 T: no drift, so settled after min_s
        warm = reference_timing.warm_up(T, fake_batches(lambda i: T if i // 4 % 2 == 0 else 1.25 * T, clock),
                                        WARMUP, clock)
        self.assertTrue(warm.settled)
        self.assertLess(warm.seconds, WARMUP["max_s"])

    def test_calls_per_batch_from_the_first_call(self):
        # batch_s is 8 T: ceil(8 / 3), at least 1, as the binaries' calls_for.
        for first_call_s, batch_s, calls in ((3 * T, 8 * T, 3), (1.0, 8 * T, 1), (T / 4, 8 * T, 32), (2 * T, 5 * T, 3)):
            clock = FakeClock()
            warm = reference_timing.warm_up(first_call_s, fake_batches(lambda i: T, clock),
                                            dict(WARMUP, batch_s=batch_s), clock)
            self.assertEqual(warm.calls_per_batch, calls, first_call_s)


class HeldSampleTest(unittest.TestCase):
    def test_calls_per_sample(self):
        throughput = PROTOCOL["throughput"]  # sample_s 1e-4, at most 32 calls
        for per_call_s, calls in ((1e-3, 1), (1e-4, 1), (3e-5, 4), (1e-6, 32)):
            self.assertEqual(reference_timing.calls_per_sample(per_call_s, throughput), calls, per_call_s)

    def test_the_hold_doubles_until_the_host_enqueues_within_it(self):
        torch = FakeTorch(host_s_per_call=30e-6, device_s_per_call=20e-6)
        take_sample = reference_timing.held_sample_taker(torch, torch.operation, 4, 1e9)
        with mock.patch.object(reference_timing, "time", torch.host):
            per_call_s, measured_s = take_sample()
        # 4 calls take the host 120 us: holds of 50 and 100 us are too short, 200 us is kept.
        self.assertEqual(torch.spins, [50_000, 100_000, 200_000])
        self.assertAlmostEqual(per_call_s, 20e-6)
        self.assertAlmostEqual(measured_s, 80e-6)
        with mock.patch.object(reference_timing, "time", torch.host):
            take_sample()
        self.assertEqual(torch.spins[-1], 200_000)  # the hold that sufficed is kept

    def test_an_operation_that_waits_for_the_device_is_refused(self):
        torch = FakeTorch(host_s_per_call=1.0, device_s_per_call=20e-6)  # as if each call synchronized
        take_sample = reference_timing.held_sample_taker(torch, torch.operation, 1, 1e9)
        with mock.patch.object(reference_timing, "time", torch.host), self.assertRaises(RuntimeError) as raised:
            take_sample()
        self.assertIn("the operation waits for the device", str(raised.exception))
        self.assertLessEqual(torch.spins[-1], reference_timing.MAX_HOLD_S * 1e9)

    def test_spin_calibration(self):
        torch = FakeTorch(host_s_per_call=0, device_s_per_call=0)
        self.assertAlmostEqual(reference_timing.spin_cycles_per_s(torch) / torch.cycles_per_s, 1.0)


class FakeTorch:
    """torch.cuda as the held samples use it: each call costs the host host_s_per_call and the
    device device_s_per_call; a spin of c cycles costs the device c / 1e9 s; an event reads the
    device time of all the work enqueued before it."""
    cycles_per_s = 1e9

    def __init__(self, host_s_per_call, device_s_per_call):
        self.host_s_per_call, self.device_s_per_call = host_s_per_call, device_s_per_call
        self.host = mock.Mock(perf_counter=FakeClock())
        self.device_s, self.spins = 0.0, []
        fake = self

        class Event:
            def __init__(self, enable_timing):
                self.at = None

            def record(self):
                self.at = fake.device_s

            def synchronize(self):
                pass

            def elapsed_time(self, end):
                return (end.at - self.at) * 1000.0

        self.cuda = mock.Mock(Event=Event, _sleep=self.spin, synchronize=lambda: None)

    def spin(self, cycles):
        self.spins.append(cycles)
        self.device_s += cycles / self.cycles_per_s

    def operation(self):
        self.host.perf_counter.now += self.host_s_per_call
        self.device_s += self.device_s_per_call


class DeviceTimingTest(unittest.TestCase):
    """cuda_event_timing chooses the study's sampling by the settled time per call."""
    PROTOCOL = {**PROTOCOL, "energy": {"window_s": 0.2}}

    def test_long_calls_are_sampled_in_back_to_back_batches(self):
        torch = FakeTorch(host_s_per_call=1e-6, device_s_per_call=2e-4)
        measured = reference_timing.cuda_event_timing(torch, torch.operation, self.PROTOCOL)
        self.assertEqual(measured["measurement"]["calls_per_sample"], 50)  # ceil(batch_s 10 ms / 200 us)
        self.assertEqual(torch.spins, [])  # never held
        self.assertAlmostEqual(measured["time_s"]["median"], 2e-4)
        self.assertGreaterEqual(measured["measurement"]["measured_s"], 0.2)  # the energy window's length

    def test_short_calls_are_held(self):
        torch = FakeTorch(host_s_per_call=1e-6, device_s_per_call=5e-6)
        measured = reference_timing.cuda_event_timing(torch, torch.operation, self.PROTOCOL)
        # ceil(sample_s 100 us / 5 us), the per-call time read back from event differences in floating point
        self.assertIn(measured["measurement"]["calls_per_sample"], (20, 21))
        self.assertTrue(torch.spins)
        self.assertAlmostEqual(measured["time_s"]["median"], 5e-6)


class ProtocolTest(unittest.TestCase):
    def test_the_fixture_is_what_the_study_binaries_publish(self):
        binary = os.path.join(os.environ.get("GPUBENCH_BUILD_DIR", ""), "bench", "gpubench_matmul")
        if not os.access(binary, os.X_OK):
            self.skipTest(f"no study binary at {binary} (GPUBENCH_BUILD_DIR) to compare with")
        described = json.loads(subprocess.run([binary, "--describe"], capture_output=True, text=True,
                                              check=True).stdout)
        self.assertEqual(described["measurement"], PROTOCOL)

    def test_the_protocol_argument(self):
        protocol, rest = reference_timing.protocol_and_arguments(["--protocol", PROTOCOL_TEXT, "torch", "64"], "x.py")
        self.assertEqual((protocol, rest), (PROTOCOL, ["torch", "64"]))

    def test_without_or_with_a_broken_protocol(self):
        broken = json.loads(PROTOCOL_TEXT)
        del broken["warmup"]["settle_windows"]
        broken["latency"]["min_samples"] = "10"
        for argv, said in ((["torch", "64"], "must be --protocol JSON"), (["--protocol", "{"], "is not JSON"),
                           (["--protocol", json.dumps(broken), "torch", "64"],
                            "warmup lacks the numbers settle_windows"),
                           (["--protocol", json.dumps({**PROTOCOL, "latency": {**PROTOCOL["latency"],
                                                                               "timeout_s": True}})],
                            "latency lacks the numbers timeout_s")):
            with mock.patch("sys.stderr") as stderr:
                self.assertIsNone(reference_timing.protocol_and_arguments(argv, "x.py"), argv)
            self.assertIn(said, "".join(call.args[0] for call in stderr.write.call_args_list))


class HostClockTimingTest(unittest.TestCase):
    def test_a_host_clock_measurement_and_its_record(self):
        """The whole host-clock path on a real (CPU) operation: the record a reference result keeps."""
        completed = []
        measured = reference_timing.host_clock_timing(lambda: sum(range(2000)), PROTOCOL,
                                                      complete=lambda: completed.append(1))
        how = measured["measurement"]
        self.assertEqual((how["protocol"], how["calls_per_sample"]), ("latency", 1))
        self.assertEqual(how["converged"], how["stop_reason"] != "timeout")
        self.assertIn(how["stop_reason"], ("noise", "plateau", "timeout"))
        self.assertGreaterEqual(how["warmup_s"], PROTOCOL["warmup"]["min_s"])
        samples = measured["time_s"]["samples"]
        self.assertEqual(measured["time_s"]["median"], statistics.median(samples))
        self.assertAlmostEqual(how["measured_s"], sum(samples))
        self.assertGreater(len(completed), len(samples))  # every timed call was completed, warm-up ones too
        # The driver's validator takes it as a reference result.
        document = results.new_document({"id": "x", "started": "now", "finished": None, "status": "complete",
                                         "command_line": [], "options": {}})
        document["references"] = {"numpy": {"python": "/usr/bin/python3", "notes": [],
                                            "results": [{"library": "numpy", "n": 4, **measured}]}}
        results.validate(document)


    def test_cpu_samples_are_batches_of_the_cpu_sample_time(self):
        measured = reference_timing.host_clock_timing(lambda: sum(range(200)), PROTOCOL, kind="cpu")
        how = measured["measurement"]
        self.assertEqual(how["protocol"], "cpu")
        self.assertGreater(how["calls_per_sample"], 1)  # calls of microseconds, samples of cpu.sample_s
        self.assertGreaterEqual(how["measured_s"], PROTOCOL["cpu"]["min_time_s"])


if __name__ == "__main__":
    unittest.main()
