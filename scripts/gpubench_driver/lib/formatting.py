"""Human-readable numbers and Markdown-safe text for progress lines and reports."""
import math
import re

# Only what can change inline Markdown: our lines never start with text from a file, so
# '#', '+' and '-' are harmless there, and '(' only matters after an (escaped) ']'.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def _no_number(value):
    """None, NaN or an infinity (a ratio or product that overflowed): shown as n/a, never 'infx'."""
    return value is None or isinstance(value, float) and not math.isfinite(value)


def _in_units(value, units):
    """The value in the first of units ((name, scale), largest first) it reaches, else in the last."""
    unit, scale = next(((unit, scale) for unit, scale in units if value >= scale), units[-1])
    return f"{value / scale:.2f} {unit}"


def seconds(value):
    if _no_number(value):
        return "n/a"
    if value < 0:  # a difference of times (time saved can be negative)
        return "-" + seconds(-value)
    return _in_units(value, (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)))


DECIMAL_PREFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def _prefixed(value, prefixes, unit, digits, separator=""):
    """The value under the first of prefixes ((prefix, scale), largest first) it reaches, else whole."""
    for prefix, scale in prefixes:
        if value >= scale:
            return f"{value / scale:.{digits}f} {prefix}{separator}{unit}"
    return f"{value:.0f} {unit}"


def rate(per_s, unit="FLOP/s", separator=""):
    """12.3e9 -> '12.30 GFLOP/s'; rate(12.3e3, "products/s", " ") -> '12.30 k products/s'."""
    return "n/a" if _no_number(per_s) else _prefixed(per_s, DECIMAL_PREFIXES, unit, 2, separator)


def byte_size(value):
    """Binary units: 49152 -> '48.0 KiB'."""
    return "n/a" if value is None else _prefixed(value, (("Gi", 2 ** 30), ("Mi", 2 ** 20), ("Ki", 2 ** 10)), "B", 1)


def joules(value):
    """0.0123 -> '12.30 mJ'."""
    return "n/a" if value is None else _in_units(value, (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6), ("nJ", 1e-9)))


def ratio(value):
    return "n/a" if _no_number(value) else f"{value:.2f}x"


def percent(value, digits=1):
    return "n/a" if value is None else f"{value:.{digits}%}"


def percent_interval(value, interval):
    """A share and its interval (low, high), where it has one."""
    return percent(value) + (f" ({percent(interval[0])}–{percent(interval[1])})" if interval else "")


def whole(value):
    """A count, a clock, a number of FMAs: rounded to a whole number."""
    return "n/a" if value is None else f"{value:.0f}"


def gb_per_s(bytes_per_s, digits=1):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / 1e9:.{digits}f} GB/s"


def gib_per_s(bytes_per_s):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / 2 ** 30:.2f} GiB/s"


def scientific(value):
    return "n/a" if value is None else f"{value:.2e}"


# A figure's unit -> how its value is written (first screen, check, rank, fleet).
UNIT_TEXT = {"FLOP/s": rate, "OP/s": lambda value: rate(value, "OP/s"), "B/s": gb_per_s, "s": seconds,
             "J": joules, "n": whole}


def unit_text(value, unit, none="—", digits=3, units=tuple(UNIT_TEXT)):
    """The value in its unit (UNIT_TEXT, of `units`), or to `digits` significant digits, the unit after."""
    if value is None:
        return none
    return UNIT_TEXT[unit](value) if unit in units else f"{value:.{digits}g} {unit}"


def md(text):
    """Text from files and tools, escaped so it cannot change the Markdown around it."""
    if text is None:
        return "n/a"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
