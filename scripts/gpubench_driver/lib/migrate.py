"""What older drivers wrote, brought to what the driver reads now: the only code that reads a value out of an
entry's name, for a journal line of layout 1 (before the lines carried their axis fields), which has only it."""
import re

from gpubench_driver.lib import gbench

JOURNAL_LAYOUT = 2  # a journal line's "axis_fields" (gbench.axis_fields); layout 1 (no "layout"): the name only
LAYOUT_1_NAME = re.compile(r"^[^/]+/(?P<impl>[^/]+)/(?P<device>[^/]+)/(?P<mode>[^/]+)/(?P<precision>[^/]+)"
                           r"/n:(?P<n>[0-9]+)(?:/batch:(?P<batch>[0-9]+))?$")


def journal_axis_fields(line, axis_names):
    """The axis fields of a journal line's entry: its own, or a layout-1 line's from its name; None where unknown."""
    if line.get("layout", 1) >= JOURNAL_LAYOUT:
        return line.get("axis_fields") if isinstance(line.get("axis_fields"), dict) else None
    return axis_fields_of_name(line["name"], axis_names)


def axis_fields_of_name(name, axis_names):
    """The axis fields of a layout-1 entry name by axis_names; None for a name outside the contract."""
    match = LAYOUT_1_NAME.match(name)
    if not match:
        return None
    values = {**match.groupdict(), "n": int(match["n"]), "batch": int(match["batch"]) if match["batch"] else None}
    named = {slot: axis for slot, axis in {**axis_names, "device": "device"}.items() if axis}
    return gbench.axis_fields({named[slot]: values[slot] for slot in gbench.AXES if slot in named},
                              {axis: slot for slot, axis in named.items()})
