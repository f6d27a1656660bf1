"""The study registry: every module of this package is a study's plug-in, defining its record STUDY
(lib/registry.Study), ordered by the records' `position`. A new study is one plug-in module, listed nowhere.
Import rule: a plug-in imports only lib/ (never another plug-in, a stage or a command)."""
import importlib
import pkgutil

from gpubench_driver.lib.registry import AXIS_SLOTS, PLAIN_AXES, Study


class PluginError(Exception):
    """A plug-in module that does not make a registry: no STUDY, or two studies at one position or of one name."""


def discover(path, package):
    """The plug-in modules at `path` (every module but a private _name), in their records' order."""
    found = [importlib.import_module(f"{package}.{module.name}") for module in pkgutil.iter_modules(path)
             if not module.name.startswith("_")]
    for plugin in found:
        if not isinstance(getattr(plugin, "STUDY", None), Study):
            raise PluginError(f"{plugin.__name__}: a study plug-in defines its record, STUDY (lib/registry.Study)")
    for field in ("position", "name"):
        values = [getattr(plugin.STUDY, field) for plugin in found]
        clashes = sorted({value for value in values if values.count(value) > 1})
        if clashes:
            modules = [plugin.__name__ for plugin in found if getattr(plugin.STUDY, field) in clashes]
            raise PluginError(f"studies of one {field}: {', '.join(map(str, clashes))} ({', '.join(modules)})")
    return tuple(sorted(found, key=lambda plugin: plugin.STUDY.position))


PLUGINS = discover(__path__, __name__)
STUDIES = tuple(plugin.STUDY for plugin in PLUGINS)
BY_NAME = {study.name: study for study in STUDIES}
NAMES = tuple(BY_NAME)
BATCH_NAMES = tuple(study.name for study in STUDIES if study.batch_axis)
HOST_BOUND_FIGURES = frozenset(key for study in STUDIES for key in study.host_bound_figures)
PRICED_FIGURES = frozenset(key for study in STUDIES for key in study.priced_figures)
CLAIMS = tuple(sorted((claim for study in STUDIES for claim in study.claims), key=lambda claim: claim.position))


def axis_names(name, record=None):
    """{slot: name} of a study: its --describe's `axis_names` slot by slot, else this registry's, else plain."""
    known = BY_NAME[name].axis_names if name in BY_NAME else dict(PLAIN_AXES)
    described = (record or {}).get("axis_names")
    if isinstance(described, dict):
        known.update({slot: described[slot] for slot in AXIS_SLOTS
                      if slot in described and (described[slot] is None or isinstance(described[slot], str))})
    return known


def format_note(name, record=None):
    """None where the precision slot holds a number format; else why the study has no peak or roofline."""
    slot = axis_names(name, record)["precision"]
    if slot == PLAIN_AXES["precision"]:
        return None
    return f"its precision axis is the {slot or 'unnamed slot'}, not a number format"


def is_headline(study_name, entry):
    """An entry the study compares with a reference (its record's comparisons): the figures people quote."""
    record = BY_NAME.get(study_name)
    return bool(record) and any(
        (entry.get("impl"), entry.get("mode"), entry.get("precision")) == (c.impl, c.mode, c.precision)
        and (entry.get("n"), entry.get("batch")) in c.points for c in record.comparisons)
