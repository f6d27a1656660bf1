"""How the reference scripts time a call, shared by reference_matmul, reference_conv2d,
reference_mlp and reference_transfer: the study binaries' steady-state protocol, with the parameters
the study binary publishes (`--describe`'s "measurement", which the driver passes as
`--protocol JSON`), so that a study entry and its reference are timed the same way and their ratio
measures the library, not the clocks.

1. Warm-up: the operation back to back in batches of about `batch_s`, grouped into windows of at
   least `window_s`; it ends once `min_s` has passed and the last `settle_windows` windows' per-call
   times agree within `settle_tolerance` (settled), or at `max_s` (not settled).
2. Samples, until the stopping rule (StoppingRule) says enough: on the device, k calls between two
   CUDA events behind a spin kernel that holds the stream while the host enqueues them (launch
   latency excluded; "throughput" parameters); on the host clock, one call until the work is
   complete ("latency" parameters).
3. The headline is the median sample."""
import itertools
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass, replace

# The parameters each section of the protocol must give (the study's --describe has more: throttle
# and energy belong to its NVML telemetry, which the references do not sample).
PROTOCOL_KEYS = {
    "warmup": ("batch_s", "window_s", "settle_windows", "settle_tolerance", "min_s", "max_s"),
    "throughput": ("sample_s", "max_calls_per_sample", "max_noise", "min_samples", "min_time_s", "timeout_s",
                   "plateau_tolerance"),
    "latency": ("max_noise", "min_samples", "min_time_s", "timeout_s", "plateau_tolerance"),
    "cpu": ("sample_s", "max_noise", "min_samples", "min_time_s", "timeout_s", "plateau_tolerance"),
    "energy": ("window_s",),
}
MAX_BATCH_CALLS = 10000  # as the study binaries' kMaxBatchCalls (warm-up, long calls' and CPU samples)
RULE_KEYS = PROTOCOL_KEYS["latency"]  # what the stopping rule reads of a section
FIRST_HOLD_S = 50e-6    # the spin before a sample's calls; doubled while the host is slower to enqueue
MAX_HOLD_S = 0.1        # a hold the host still cannot beat means the operation waits for the device
SPIN_CALIBRATION_CYCLES = 1 << 20


class ProtocolError(ValueError):
    """--protocol missing or not the study's measurement object."""


def parse_protocol(text):
    """The protocol object from its JSON text, every parameter PROTOCOL_KEYS names checked."""
    try:
        protocol = json.loads(text)
    except ValueError as error:
        raise ProtocolError(f"--protocol is not JSON: {error}") from None
    for section, keys in PROTOCOL_KEYS.items():
        values = protocol.get(section) if isinstance(protocol, dict) else None
        missing = [key for key in keys if not isinstance((values or {}).get(key), (int, float))
                   or isinstance(values[key], bool)]
        if missing:
            raise ProtocolError(f"--protocol: {section} lacks the numbers {', '.join(missing)}")
    return protocol


def protocol_and_arguments(argv, script):
    """(protocol, the other arguments) from `--protocol JSON ...`; None after saying on stderr why not."""
    if len(argv) < 2 or argv[0] != "--protocol":
        print(f"{script}: the first arguments must be --protocol JSON (the study's measurement protocol, "
              f"from its --describe)", file=sys.stderr)
        return None
    try:
        return parse_protocol(argv[1]), argv[2:]
    except ProtocolError as error:
        print(f"{script}: {error}", file=sys.stderr)
        return None


# --- the stopping rule ---------------------------------------------------------------
def noise(samples):
    """Sample standard deviation (n - 1) over the mean, in two passes (mean, then the squared
    deviations), as the C++ rule computes it; None below two samples."""
    n = len(samples)
    if n < 2:
        return None
    mean = math.fsum(samples) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in samples) / (n - 1)) / mean


@dataclass(frozen=True)
class StoppingRule:
    """When a series of samples is enough; the study binaries apply the identical rule
    (tests/python/fixtures/stopping_rule_cases.json holds the cases both are tested on)."""
    max_noise: float
    min_samples: int
    min_time_s: float
    timeout_s: float
    plateau_tolerance: float

    def __post_init__(self):
        if self.min_samples < 2:
            raise ProtocolError(f"min_samples is {self.min_samples}: noise needs at least 2 samples")

    @classmethod
    def of(cls, section):
        return cls(**{key: section[key] for key in RULE_KEYS})

    def stop_reason(self, samples, measured_s, elapsed_s):
        """"noise", "plateau" or "timeout" to stop after these samples (seconds per call), None to go
        on; measured_s: the seconds measured in all of them, elapsed_s: wall seconds since the start."""
        if len(samples) >= self.min_samples and measured_s >= self.min_time_s:
            all_noise = noise(samples)
            if all_noise <= self.max_noise:
                return "noise"
            if (len(samples) >= 4 * self.min_samples
                    and abs(all_noise - noise(samples[:-self.min_samples])) <= self.plateau_tolerance * all_noise):
                return "plateau"  # more samples no longer change the noise: it is the operation's own
        if elapsed_s >= self.timeout_s:
            return "timeout"
        return None


@dataclass
class Sampling:
    samples: list      # seconds per call
    measured_s: float  # seconds measured in all of them
    reason: str


def sample_until_stopped(take_sample, rule, clock=time.perf_counter):
    """Samples from take_sample() -> (seconds per call, seconds measured) until the rule stops them."""
    samples, measured_s, start = [], 0.0, clock()
    while True:
        per_call_s, sample_s = take_sample()
        samples.append(per_call_s)
        measured_s += sample_s
        reason = rule.stop_reason(samples, measured_s, clock() - start)
        if reason:
            return Sampling(samples, measured_s, reason)


# --- warm-up -----------------------------------------------------------------------
@dataclass
class WarmUp:
    calls_per_batch: int
    burst_s: float          # per call in the first batch: the cool GPU's rate
    window_per_call_s: list
    seconds: float
    settled: bool

    @property
    def per_call_s(self):
        """The steady state it reached: the last window's per-call time."""
        return self.window_per_call_s[-1] if self.window_per_call_s else self.burst_s


def settled(window_per_call_s, parameters):
    """The last windows agree within the tolerance, or move up and down (noise, not a drift), as the
    binaries' settled()."""
    last = window_per_call_s[-parameters["settle_windows"]:]
    if len(last) < parameters["settle_windows"]:
        return False
    if max(last) <= min(last) * (1 + parameters["settle_tolerance"]):
        return True
    return last != sorted(last) and last != sorted(last, reverse=True)


def warm_up(first_call_s, batches, parameters, clock=time.perf_counter):
    """Runs batches(k), an iterator of the seconds of successive batches of k back-to-back calls,
    until the per-call time settles (parameters: the protocol's "warmup")."""
    calls = calls_for(parameters["batch_s"], first_call_s, MAX_BATCH_CALLS)
    windows, window_s, window_calls, burst_s = [], 0.0, 0, None
    start = clock()
    for batch_s in batches(calls):
        burst_s = batch_s / calls if burst_s is None else burst_s
        window_s, window_calls = window_s + batch_s, window_calls + calls
        if window_s >= parameters["window_s"]:
            windows.append(window_s / window_calls)
            window_s, window_calls = 0.0, 0
        elapsed_s = clock() - start
        steady = elapsed_s >= parameters["min_s"] and settled(windows, parameters)
        if steady or elapsed_s >= parameters["max_s"]:
            return WarmUp(calls, burst_s, windows, elapsed_s, steady)
    raise ValueError("batches() ended before the warm-up did")


def calls_for(target_s, per_call_s, max_calls):
    """Calls in a sample or batch of target_s, within [1, max_calls] (the binaries' calls_for). The quotient is
    rounded to 9 digits first: a time per call summed from many calls is off in its last bits, and 50.0000001
    must not become 51."""
    return min(max(math.ceil(round(target_s / per_call_s, 9)), 1), max_calls) if per_call_s > 0 else 1


def calls_per_sample(per_call_s, parameters):
    """k calls per held sample: enough for `sample_s` of device time, within [1, max_calls_per_sample]."""
    return calls_for(parameters["sample_s"], per_call_s, parameters["max_calls_per_sample"])


# --- the record of one measurement ----------------------------------------------------
def spread(samples):
    ordered = sorted(samples)
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1],
            "stddev": statistics.stdev(ordered) if len(ordered) > 1 else 0.0, "samples": samples}


def record(kind, warm, sampling, calls):
    """What a reference result keeps of its measurement: `time_s` (the samples and their spread, the
    median the headline) and `measurement` (how the steady state was reached and why sampling stopped)."""
    return {"time_s": spread(sampling.samples),
            "measurement": {"protocol": kind, "burst_s": warm.burst_s, "settled": warm.settled,
                            "warmup_s": warm.seconds, "warmup_window_per_call_s": warm.window_per_call_s,
                            "calls_per_batch": warm.calls_per_batch, "calls_per_sample": calls,
                            "stop_reason": sampling.reason, "converged": sampling.reason != "timeout",
                            "noise": noise(sampling.samples), "measured_s": sampling.measured_s}}


# --- on the device: CUDA events ------------------------------------------------------
def _event(torch):
    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event


def _device_batches(torch, operation, calls):
    """Device seconds of successive batches of `calls` calls, an event after each; the next batch is
    enqueued before the last is waited for, so the device does not idle between batches."""
    def enqueue():
        for _ in range(calls):
            operation()
        return _event(torch)
    previous, pending = _event(torch), enqueue()
    while True:
        following = enqueue()
        pending.synchronize()
        yield previous.elapsed_time(pending) / 1000.0
        previous, pending = pending, following


def spin_cycles_per_s(torch):
    """How many torch.cuda._sleep cycles spin a second, timed once per measurement, right after its
    warm-up: at the clock of the steady state its samples run at."""
    torch.cuda.synchronize()
    start = _event(torch)
    torch.cuda._sleep(SPIN_CALIBRATION_CYCLES)
    end = _event(torch)
    end.synchronize()
    return SPIN_CALIBRATION_CYCLES / (start.elapsed_time(end) / 1000.0)


def held_sample_taker(torch, operation, calls, cycles_per_s):
    """take_sample() for sample_until_stopped: a spin kernel holds the stream while the host
    enqueues the start event, `calls` calls and the end event behind it, so the sample is the
    device's time alone. A sample the host took longer to enqueue than the hold lasted may hold
    launch gaps: it is dropped and the hold doubled (up to MAX_HOLD_S: an operation that synchronizes
    cannot be held, and is refused rather than timed with its gaps)."""
    hold_s = FIRST_HOLD_S

    def take_sample():
        nonlocal hold_s
        while True:
            enqueue_start = time.perf_counter()  # before the spin is queued: it cannot start earlier
            torch.cuda._sleep(round(hold_s * cycles_per_s))
            start = _event(torch)
            for _ in range(calls):
                operation()
            end = _event(torch)
            enqueued_s = time.perf_counter() - enqueue_start
            end.synchronize()
            if enqueued_s < hold_s:
                seconds = start.elapsed_time(end) / 1000.0
                return seconds / calls, seconds
            hold_s *= 2
            if hold_s > MAX_HOLD_S:
                raise RuntimeError(f"{calls} calls took the host {enqueued_s:.3g} s to queue behind a hold: the "
                                   f"operation waits for the device, and held samples cannot leave its gaps out")
    return take_sample


def _batch_sample_taker(batches, calls):
    def take_sample():
        seconds = next(batches)
        return seconds / calls, seconds
    return take_sample


def cuda_event_timing(torch, operation, protocol):
    """record() of operation() on the device as the study times a resident entry: warm-up to the
    steady state; then samples: calls shorter than throughput.sample_s held behind a spin, longer
    ones in back-to-back batches of warmup.batch_s for at least energy.window_s (the study reads
    its energy counter over them: the same thermal history)."""
    operation()  # the first call: kernels loaded and chosen (cudnn.benchmark searches here)
    torch.cuda.synchronize()
    start = _event(torch)
    operation()
    end = _event(torch)
    end.synchronize()
    warm = warm_up(start.elapsed_time(end) / 1000.0, lambda k: _device_batches(torch, operation, k),
                   protocol["warmup"])
    per_call_s, rule = warm.per_call_s, StoppingRule.of(protocol["throughput"])
    if per_call_s >= protocol["throughput"]["sample_s"]:
        calls = calls_for(protocol["warmup"]["batch_s"], per_call_s, MAX_BATCH_CALLS)
        take_sample = _batch_sample_taker(_device_batches(torch, operation, calls), calls)
        rule = replace(rule, min_time_s=max(rule.min_time_s, protocol["energy"]["window_s"]))
    else:
        calls = calls_per_sample(per_call_s, protocol["throughput"])
        take_sample = held_sample_taker(torch, operation, calls, spin_cycles_per_s(torch))
    sampling = sample_until_stopped(take_sample, rule)
    return record("throughput", warm, sampling, calls)


# --- on the host clock -----------------------------------------------------------
def host_clock_timing(operation, protocol, complete=lambda: None, kind="latency"):
    """record() of operation() on the host clock, from the call until complete() returns (a device
    synchronize: what the caller waits): warm-up in batches so timed, then single calls ("latency",
    as the study's GPU entries with copies), or batches of cpu.sample_s ("cpu", as its CPU entries)."""
    def timed(calls):
        start = time.perf_counter()
        for _ in range(calls):
            operation()
        complete()
        return time.perf_counter() - start

    timed(1)  # the first call: allocations, pages mapped, libraries loaded
    warm = warm_up(timed(1), lambda k: (timed(k) for _ in itertools.count()), protocol["warmup"])

    calls = 1 if kind == "latency" else calls_for(protocol["cpu"]["sample_s"], warm.per_call_s, MAX_BATCH_CALLS)

    def take_sample():
        seconds = timed(calls)
        return seconds / calls, seconds
    sampling = sample_until_stopped(take_sample, StoppingRule.of(protocol[kind]))
    return record(kind, warm, sampling, calls)
