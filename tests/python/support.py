"""Shared set-up of the driver's tests: import path, fixtures, entry factory."""
import os
import sys

SOURCE_DIR = os.environ.get("GPUBENCH_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
SCRIPTS_DIR = os.path.join(SOURCE_DIR, "scripts")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
if SCRIPTS_DIR not in sys.path:
    sys.path.insert(0, SCRIPTS_DIR)


def fixture(name):
    return os.path.join(FIXTURES, name)


def make_entry(impl, device, mode, n, median_s, status="ok"):
    """A minimal ok entry as the driver writes it, for derivation tests."""
    from gpubench_driver import gbench, stats
    entry = gbench.blank_entry(f"matmul/{impl}/{device}/{mode}/fp32/n:{n}")
    entry.update(status=status, repetitions=1, iterations=1)
    if status == "ok":
        entry["time_s"] = stats.summarize([median_s])
        entry["flop"] = 2.0 * n ** 3
        entry["flop_per_s"] = entry["flop"] / median_s
    return entry
