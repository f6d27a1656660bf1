"""The binaries' measurements file (--measurements-out): one JSON object per finished entry, joined to the entries
read from Google Benchmark's output; the entry's time is its headline samples' median (docs/methodology.md)."""
import json

from gpubench_driver.lib import stats

FLAG = "--measurements-out="
PROTOCOLS = ("throughput", "latency", "cpu")
# An entry ran clock-limited when over its sustained window (at least CLOCK_LIMITED_SAMPLES telemetry
# readings) a power or thermal limit was active in most readings AND the SM clock sat below
# CLOCK_LIMITED_CLOCK of the busy (maximum) clock: a limit flag alone, at full clock, limits nothing.
CLOCK_LIMITED_SAMPLES = 5
CLOCK_LIMITED_CLOCK = 0.97
# Entry fields made from the measurement (None where it has none).
FIELDS = ("protocol", "latency_s", "cold_l2_s", "burst_s", "converged", "energy_j_per_op",
          "energy_j_per_op_uncertainty", "energy_j_per_op_above_idle")


def json_objects(text):
    """The JSON objects of a file of one per line (measurements, journal); an incomplete line is skipped."""
    found = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def read_objects(path):
    """json_objects of a file; none where it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return json_objects(handle.read())
    except OSError:
        return []


def read_file(path):
    """{entry name: measurement}, for the lines with a usable measurement."""
    return {record["name"]: record["measurement"] for record in read_objects(path)
            if isinstance(record.get("name"), str) and usable(record.get("measurement"))}


def usable(measurement):
    if not isinstance(measurement, dict) or measurement.get("protocol") not in PROTOCOLS:
        return False
    return bool(_samples(measurement.get("headline")))


class Tail:
    """The measurement of an entry that has just finished, reading only the lines added since the last call."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.found = {}

    def get(self, name):
        try:
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                added = stream.read()
        except OSError:
            added = b""
        complete = added[:added.rfind(b"\n") + 1]  # a line still being written waits for the next call
        self.offset += len(complete)
        for record in json_objects(complete.decode("utf-8", errors="replace")):
            if isinstance(record.get("name"), str):
                self.found[record["name"]] = record.get("measurement")
        return self.found.get(name)


def _samples(phase):
    samples = phase.get("samples_s") if isinstance(phase, dict) else None
    if not isinstance(samples, list):
        return []
    return [value for value in map(stats.finite, samples) if value is not None and value > 0]


def apply(entry, measurement):
    """Entry fields from its measurement, kept under 'measurement' (its headline samples are time_s.samples)."""
    for field, phase in (("time_s", "headline"), ("latency_s", "latency"), ("cold_l2_s", "cold_l2")):
        samples = _samples(measurement.get(phase))
        entry[field] = stats.summarize(samples) if samples else None
    entry["protocol"] = measurement["protocol"]
    warmup = measurement.get("warmup") if isinstance(measurement.get("warmup"), dict) else {}
    entry["burst_s"] = stats.finite(warmup.get("burst_call_s"))
    entry["converged"] = bool(measurement["headline"].get("converged"))
    energy = measurement.get("energy") if isinstance(measurement.get("energy"), dict) else {}
    for suffix in ("", "_uncertainty", "_above_idle"):
        entry[f"energy_j_per_op{suffix}"] = stats.finite(energy.get(f"j_per_call{suffix}"))
    entry["clock_limited"] = _clock_limited(entry, stats.finite(measurement.get("busy_clock_mhz")))
    kept = dict(measurement)
    kept["headline"] = {key: value for key, value in measurement["headline"].items() if key != "samples_s"}
    entry["measurement"] = kept
    median = entry["time_s"]["median"]
    entry["flop_per_s"] = entry["flop"] / median if entry.get("flop") is not None and median else None


def _clock_limited(entry, busy_clock_mhz):
    samples, clock = stats.finite(entry.get("telemetry_samples")), stats.finite(entry.get("sm_clock_mhz"))
    if not samples or samples < CLOCK_LIMITED_SAMPLES or clock is None or not busy_clock_mhz:
        return None
    fractions = [stats.finite(entry.get(name)) for name in ("power_limited_fraction", "thermal_limited_fraction")]
    limited = any(value is not None and value >= 0.5 for value in fractions)
    return limited and clock < CLOCK_LIMITED_CLOCK * busy_clock_mhz


def join(entries, measured):
    """Apply each ok entry's measurement; an ok entry without one is an error (it would have no samples)."""
    for entry in entries:
        entry.update(dict.fromkeys(FIELDS))
        entry["measurement"] = None
        if entry["status"] != "ok":
            continue
        if entry["name"] in measured:
            apply(entry, measured[entry["name"]])
        else:
            entry.update(status="error", time_s=None, flop_per_s=None,
                         message="no measurement record for this entry (the measurements file lacks it)")
