"""The collect stage: a results file as the stages after it read it (journal.load: a killed run's journal
folded in); a file of every GPU of a node (run --gpus) as one GPU's, each entry the node's median."""
import copy

from gpubench_driver.lib import stats
from gpubench_driver.lib.findings import group_by
from gpubench_driver.stages import journal

GPU_FIELD = "gpu"  # an entry's GPU (nvidia-smi index) in a gathered file; absent in one GPU's file


def gpus_of(document):
    """The GPUs a document's entries are tagged with, in order (none in one GPU's file)."""
    return sorted({entry[GPU_FIELD] for study in document["studies"].values() for entry in study["entries"]
                   if entry.get(GPU_FIELD) is not None})


def node_median_entry(entries):
    """Of one entry's per-GPU records the one at the node's median (lower middle); None if none is ok."""
    ok = sorted((entry for entry in entries if entry["status"] == "ok" and stats.finite((entry.get("time_s") or {})
                                                                                          .get("median"))),
                key=lambda entry: entry["time_s"]["median"])
    return ok[(len(ok) - 1) // 2] if ok else None


def node_view(document):
    """The document as one GPU's, each entry the GPU at the node's median (none ok: the first's)."""
    if len(gpus_of(document)) < 2:
        return document
    node = copy.deepcopy(document)
    for study in node["studies"].values():
        by_name = group_by(study["entries"], lambda entry: entry["name"])
        study["entries"] = [node_median_entry(entries) or entries[0] for entries in by_name.values()]
    return node


def load(path):
    """The results file at path (or the folder holding it) as one GPU's document (node_view)."""
    return node_view(journal.load(path))
