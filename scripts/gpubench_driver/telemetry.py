"""GPU clocks, power and temperature sampled with nvidia-smi while a study binary runs, so a
report can say whether the GPU held its clock or was throttled during the measurements."""
import contextlib
import shutil
import statistics
import subprocess
import threading
import time

from gpubench_driver import environment

INTERVAL_S = 1.0
QUERY_TIMEOUT_S = 5
NOT_AVAILABLE = {"note": "nvidia-smi not available"}
# nvidia-smi field -> key of a sample.
FIELDS = {"clocks.sm": "sm_clock_mhz", "clocks.mem": "mem_clock_mhz", "power.draw": "power_w",
          "temperature.gpu": "temperature_c"}
# Newer drivers call the throttle reasons 'clocks_event_reasons' (and may drop the old name);
# older ones only know 'clocks_throttle_reasons'. The first name the driver accepts is used;
# without either the samples have no reasons.
REASON_FIELDS = ("clocks_throttle_reasons.active", "clocks_event_reasons.active")
# Bits of the reasons mask (nvml's clocksThrottleReason / clocksEventReason values).
REASON_BITS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting"))
IDLE = "gpu_idle"


class TelemetryError(Exception):
    """nvidia-smi did not answer a query."""


def reason_names(mask_text):
    """'0x0000000000000004' -> ['sw_power_cap']; None when the mask is not reported."""
    try:
        mask = int(mask_text, 16)
    except ValueError:
        return None
    names = [name for bit, name in REASON_BITS if mask & bit]
    unknown = mask & ~sum(bit for bit, _ in REASON_BITS)
    return names + ([hex(unknown)] if unknown else [])


def parse_sample(text, fields):
    """One line of '--format=csv,noheader,nounits' for `fields` -> a sample without its time."""
    values = [value.strip() for value in text.strip().splitlines()[0].split(",")] if text.strip() else []
    if len(values) != len(fields):
        raise TelemetryError(f"nvidia-smi printed {text.strip()[:200]!r} for {len(fields)} fields")
    sample = {}
    for field, value in zip(fields, values):
        if field in FIELDS:
            number = environment.smi_value(field, value)
            sample[FIELDS[field]] = number if isinstance(number, (int, float)) else None
        else:
            sample["throttle_reasons"] = reason_names(value)
    sample.setdefault("throttle_reasons", None)
    return sample


class NvidiaSmi:
    """Reads one sample of one GPU (its PCI bus id, or index 0)."""

    def __init__(self, gpu=None):
        self.gpu = gpu or "0"
        self.fields = None  # found on the first answered query

    def __call__(self):
        if self.fields is None:
            self.fields = self._accepted_fields()
        return parse_sample(self._query(self.fields), self.fields)

    def _accepted_fields(self):
        base = tuple(FIELDS)
        for fields in [base + (reason,) for reason in REASON_FIELDS] + [base]:
            try:
                self._query(fields)
            except TelemetryError:
                continue
            return fields
        raise TelemetryError(f"nvidia-smi answers no query of {', '.join(base)} for GPU {self.gpu}")

    def _query(self, fields):
        command = ["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits",
                   "--id=" + self.gpu]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise TelemetryError(f"nvidia-smi: {error}") from None
        if result.returncode != 0:
            raise TelemetryError(f"nvidia-smi exited {result.returncode}: "
                                 f"{(result.stderr or result.stdout).strip()[:200]}")
        return result.stdout


class Sampler:
    """Calls `read` every interval_s in a daemon thread from start() to stop(). A failed read is
    counted, never raised: telemetry must not break a run."""

    def __init__(self, read, interval_s=INTERVAL_S):
        self.read = read
        self.interval_s = interval_s
        self.samples = []
        self.failures = 0
        self.last_problem = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpubench-telemetry", daemon=True)
        self._started = None

    def start(self):
        self._started = time.monotonic()
        self._thread.start()
        return self

    def stop(self):
        """Stop sampling (waits at most one query) and return the telemetry record."""
        self._stopping.set()
        self._thread.join(timeout=QUERY_TIMEOUT_S + 1)
        return self.record()

    def record(self):
        samples = list(self.samples)  # a copy: a thread that outlived join() may still append
        record = {"interval_s": self.interval_s, "samples": samples, "summary": summarize(samples)}
        if self.failures:
            record["note"] = f"{self.failures} nvidia-smi queries failed; the last: {self.last_problem}"
        return record

    def _loop(self):
        while not self._stopping.is_set():
            began = time.monotonic()
            self._take_sample()
            self._stopping.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def _take_sample(self):
        try:
            sample = self.read()
        except Exception as error:  # noqa: BLE001 (whatever goes wrong, the run goes on)
            self.failures += 1
            self.last_problem = str(error)
            return
        self.samples.append({"t_s": round(time.monotonic() - self._started, 3), **sample})


def _spread(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)} if values else None


def summarize(samples):
    """What the clock, power and temperature did over the samples."""
    def values(key):
        return [sample[key] for sample in samples if sample.get(key) is not None]
    with_reasons = [sample["throttle_reasons"] for sample in samples if sample.get("throttle_reasons") is not None]
    throttled = [reasons for reasons in with_reasons if set(reasons) - {IDLE}]
    # The GPU idles between entries (and through CPU entries): its clock under load is the busy samples'.
    busy = [sample["sm_clock_mhz"] for sample in samples if sample.get("sm_clock_mhz") is not None
            and sample.get("throttle_reasons") is not None and IDLE not in sample["throttle_reasons"]]
    return {
        "samples": len(samples),
        "sm_clock_mhz": _spread(values("sm_clock_mhz")),
        "busy_sm_clock_mhz": _spread(busy),
        "mem_clock_mhz": _spread(values("mem_clock_mhz")),
        "max_power_w": max(values("power_w"), default=None),
        "max_temperature_c": max(values("temperature_c"), default=None),
        # Idle is no throttle: the GPU sits idle between entries while the CPU prepares the next.
        "throttled_fraction": len(throttled) / len(with_reasons) if with_reasons else None,
        "throttle_reasons": sorted({reason for reasons in throttled for reason in reasons} - {IDLE}),
    }


@contextlib.contextmanager
def recorded(study, gpu=None, read=None):
    """Sample while the block runs; study['telemetry'] gets the record however the block ends
    (Ctrl-C included). `read` replaces nvidia-smi (tests)."""
    if read is None and shutil.which("nvidia-smi") is None:
        study["telemetry"] = dict(NOT_AVAILABLE)
        yield
        return
    sampler = Sampler(read or NvidiaSmi(gpu)).start()
    try:
        yield
    finally:
        study["telemetry"] = sampler.stop()
