"""GPU telemetry of a study: the NVML series each study process samples (bench/harness/gpu_telemetry.hpp),
joined over the study's processes and summarised, and an entry's telemetry counters combined."""
import json
import statistics
import time

from gpubench_driver.lib import stats

# Number keys of a sample in results.json, as the binaries write them ('reasons', a bit mask, is read apart);
# the first four are the ones the study summary reads.
SAMPLE_KEYS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "energy_j", "gpu_util", "mem_util",
               "memory_used_mib")
# Bits of the reasons mask (NVML's clocksEventReason / clocksThrottleReason values).
REASON_BITS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting"))
IDLE = "gpu_idle"
OFF_FLAG = "--no-telemetry"
OUT_FLAG = "--telemetry-out="
NO_SAMPLES = "no samples"


def reason_names(mask):
    """4 -> ['sw_power_cap']; unknown bits as hex; None when the mask is not reported."""
    if not isinstance(mask, int) or isinstance(mask, bool) or mask < 0:
        return None
    names = [name for bit, name in REASON_BITS if mask & bit]
    unknown = mask & ~sum(bit for bit, _ in REASON_BITS)
    return names + ([hex(unknown)] if unknown else [])


def read_series(path):
    """A study process's series file -> (samples, None), or ([], why there are none)."""
    try:
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream)
    except FileNotFoundError:
        return [], "the study process wrote no telemetry (it did not finish)"
    except (OSError, ValueError) as error:
        return [], f"unreadable telemetry series: {error}"
    if not isinstance(document, dict):
        return [], "unreadable telemetry series: not a JSON object"
    if document.get("unavailable") is not None:
        return [], str(document["unavailable"])
    samples = document.get("samples")
    if not isinstance(samples, list):
        return [], "unreadable telemetry series: no 'samples' list"
    return [sample for sample in samples if isinstance(sample, dict) and stats.finite(sample.get("unix_s")) is not None], None


class StudySeries:
    """The series of one study's processes, on one time axis from the study's start."""

    def __init__(self, started_unix_s):
        self.started = started_unix_s
        self.samples = []
        self.notes = []

    @classmethod
    def resumed(cls, record):
        """The series a study's record holds (a run resumed), on its time axis (`started_unix_s`, kept
        with the samples); without samples it goes on from now."""
        record = record if isinstance(record, dict) else {}
        series = cls(stats.finite(record.get("started_unix_s")) or time.time())
        series.samples = [sample for sample in record.get("samples") or []
                          if isinstance(sample, dict) and stats.finite(sample.get("t_s")) is not None]
        series.notes = [note for note in (record.get("note") or "").split("; ") if note and note != NO_SAMPLES]
        return series

    def add(self, samples, note):
        self.samples += [self._sample(raw) for raw in samples]
        if note and note not in self.notes:
            self.notes.append(note)

    def _sample(self, raw):
        sample = {"t_s": round(raw["unix_s"] - self.started, 3)}
        sample.update({key: stats.finite(raw.get(key)) for key in SAMPLE_KEYS})
        sample["throttle_reasons"] = reason_names(raw.get("reasons"))
        return sample

    def record(self, interval_s=0.1):
        if not self.samples:
            return {"source": "nvml", "note": "; ".join(self.notes) or NO_SAMPLES}
        samples = sorted(self.samples, key=lambda sample: sample["t_s"])
        record = {"source": "nvml", "interval_s": interval_s, "samples": samples, "summary": summarize(samples),
                  "started_unix_s": self.started}
        if self.notes:
            record["note"] = "; ".join(self.notes)
        return record


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
    # Idle is no throttle: the GPU sits idle between entries while the CPU prepares the next.
    return {"samples": len(samples), "sm_clock_mhz": _spread(values("sm_clock_mhz")),
            "busy_sm_clock_mhz": _spread(busy), "mem_clock_mhz": _spread(values("mem_clock_mhz")),
            "max_power_w": max(values("power_w"), default=None),
            "max_temperature_c": max(values("temperature_c"), default=None),
            "throttled_fraction": len(throttled) / len(with_reasons) if with_reasons else None,
            "throttle_reasons": sorted({reason for reasons in throttled for reason in reasons} - {IDLE})}


# --- per entry --------------------------------------------------------------------------
# The entry fields made of the telemetry counters a GPU entry's binary reports (energy_j_per_op and
# clock_limited come from measurements.py).
SAMPLES = "telemetry_samples"
ENTRY_FIELDS = ("telemetry_samples", "sm_clock_mhz", "mem_clock_mhz", "power_w", "energy_j_per_op",
                "temperature_c_max", "power_limited_fraction", "thermal_limited_fraction", "clock_limited")


def combine(runs):
    """An entry's telemetry from its run objects' counters (stats.combine_repetitions)."""
    combined = stats.combine_repetitions(runs, SAMPLES, medians=("sm_clock_mhz", "mem_clock_mhz"),
                                         weighted=("power_w", "power_limited_fraction", "thermal_limited_fraction"),
                                         maxima=("temperature_c_max",))
    combined.update(energy_j_per_op=None, clock_limited=None)
    return combined
