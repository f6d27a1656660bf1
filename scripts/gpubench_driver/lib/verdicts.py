"""What an entry is held to outside a comparison's own verdicts (noise_verdicts.py): its A/A target's kind and
the smallest change worth a verdict."""
from gpubench_driver.lib import noise_model, noise_verdicts


def long_gpu_entry(entry):
    """A GPU entry of noise_model.LONG_ENTRY_S or more: the A/A targets' kind held to 2% (docs/methodology.md)."""
    return entry["device"] == "gpu" and entry["time_s"]["median"] >= noise_model.LONG_ENTRY_S


def min_effect(entry):
    """The equivalence band of the entry's kind (noise_verdicts.band_of)."""
    return noise_verdicts.band_of(noise_model.kind_of(entry, entry["time_s"]["median"]))
