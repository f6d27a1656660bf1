"""What older drivers wrote, brought to what the driver reads now, in this one place: the only code that
reads a value out of an entry's name.

An entry's axes come from its binary's --describe (its `entries`, each with its axes by name, and its `axes`,
each name's slot). Files written before that need no name reading: every results.json (schema 1) stores
each entry's slots as fields (impl, device, mode, precision, n; batch since the batch studies, absent
before: None). The run's journal is the exception: its lines carry their entry's axis fields since
JOURNAL_LAYOUT 2; a line of layout 1, left by a driver killed before it folded its journal, has only the
name, which is read here by the naming contract those binaries followed."""
import re

from gpubench_driver.lib import gbench

# The journal lines' layout: 2 carries "axis_fields" (gbench.axis_fields); 1 (no "layout") only the name.
JOURNAL_LAYOUT = 2
# The entry names of layout 1's binaries: <study>/<impl>/<device>/<mode>/<precision>/n:<n>[/batch:<b>].
LAYOUT_1_NAME = re.compile(
    r"^(?P<study>[^/]+)/(?P<impl>[^/]+)/(?P<device>[^/]+)/(?P<mode>[^/]+)/(?P<precision>[^/]+)/n:(?P<n>[0-9]+)"
    r"(?:/batch:(?P<batch>[0-9]+))?$")


def journal_axis_fields(line, axis_names):
    """The axis fields (gbench.axis_fields) of a journal line's entry: those it carries, or for a line of
    layout 1 those its name gives under its study's axis_names ({slot: name}); None for a name outside the
    contract."""
    if line.get("layout", 1) >= JOURNAL_LAYOUT:
        fields = line.get("axis_fields")
        return fields if isinstance(fields, dict) else None
    return axis_fields_of_name(line["name"], axis_names)


def axis_fields_of_name(name, axis_names):
    """The axis fields a layout-1 entry name gives, its axes named by axis_names ({slot: name}, a slot named
    None left out; the device is always 'device'); None for a name outside the contract."""
    match = LAYOUT_1_NAME.match(name)
    if not match:
        return None
    values = {**match.groupdict(), "n": int(match["n"]), "batch": int(match["batch"]) if match["batch"] else None}
    names = {**axis_names, "device": "device"}
    return gbench.axis_fields({names[slot]: values[slot] for slot in gbench.AXES if names.get(slot)},
                              {names[slot]: slot for slot in gbench.AXES if names.get(slot)})
