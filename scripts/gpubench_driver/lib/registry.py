"""What a study plug-in declares (studies/<name>.py): its Study record, everything the driver knows of the study
that its binary's --describe does not say. The stages read these records (studies.STUDIES) and name no study."""
from dataclasses import dataclass, field
from typing import Callable, Optional

from gpubench_driver.lib import formatting, gbench

AXIS_SLOTS = gbench.NAMED_SLOTS  # the slots a study names (--describe's axis_names)
# The names a slot has where nothing else is said; the slot holding a number format is "precision".
PLAIN_AXES = {"impl": "impl", "mode": "mode", "precision": "precision", "n": "n", "batch": None}


# --- reference runs -------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """One reference run: a script in scripts/ and its arguments, under an interpreter that has `library` (a key
    of reference.PROBES); a `gpu` run only when the study's GPU part ran. sizes_at, batches_at: the arguments
    that list the sizes and batches it times (those the study ran); own_process: run in an interpreter of its
    own rather than the run's reference worker (one that starts processes of its own)."""
    library: str
    script: str
    args: tuple
    gpu: bool
    sizes_at: int = None
    batches_at: int = None
    own_process: bool = False


@dataclass(frozen=True)
class Comparison:
    """Which study entries (impl, mode, precision at each (n, batch) point) are compared with which reference
    results (those of `run` with the fields in `result`); `reference` names it, `target`: what the study is held to."""
    study: str
    impl: str
    mode: str
    precision: str
    run: str
    reference: str
    result: dict
    points: tuple
    target: str = None


def csv(values):
    return ",".join(map(str, values))


# The GEMM studies' PyTorch reference: the sizes it times, and what their cuBLAS GEMM is held to (issue 13).
TORCH_SIZES = (4096, 8192)
GEMM_TARGET = "the same cuBLAS GEMM as PyTorch's, both timed in the steady state: a time ratio within 0.98-1.02"


# --- progress lines: rates of one finished entry from its console line ------------------------
def flop_rates(axes, counters, median_s):
    """FLOP/s from the entry's flop counter."""
    flop = counters.get("flop")
    return [formatting.rate(flop / median_s)] if flop and flop > 0 else []


def item_rates(unit, with_flop):
    """Items of the batch per second (and FLOP/s when the study's FLOP are those that ran)."""
    def rates(axes, counters, median_s):
        items = formatting.rate((axes["batch"] or 1) / median_s, f"{unit}/s", " ")
        return [*(flop_rates(axes, counters, median_s) if with_flop else []), items]
    return rates


def no_rates(axes, counters, median_s):
    return []


GIB = float(1 << 30)


def copy_rates(axes, counters, median_s):
    """The bandwidth of one copy: its bytes_transferred counter (both directions of a bidirectional copy)."""
    moved = counters.get("bytes_transferred")
    return [f"{moved / median_s / GIB:.2f} GiB/s"] if moved and moved > 0 else []


def traffic_rates(axes, counters, median_s):
    """The memory traffic of one call (the bytes it reads and writes, as the binary counts them) per second."""
    read, written = counters.get("memory_read_bytes"), counters.get("memory_written_bytes")
    if not read and not written:
        return []
    return [f"{((read or 0) + (written or 0)) / median_s / 1e9:.1f} GB/s"]


def size_rates(unit):
    """What the size axis counts (elements) per second."""
    def rates(axes, counters, median_s):
        return [formatting.rate(axes["n"] / median_s, f"{unit}/s", " ")]
    return rates


# --- the record --------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryRoof:
    """How a study measures the roofline's memory roof (the run's: the first study by rank that measured one)."""
    rank: int
    bandwidth: Callable  # (its study's results record) -> (bandwidth record, None), or (None, why none or None)
    absent: str          # the study as the run lacks it, in "the run has neither <absent> nor <absent>"
    figure: Callable     # (bandwidth record, its entry, its (low, high), datasheet reference) -> headline figure
    caption: Callable    # (bandwidth record) -> the roofline chart's words on the roof
    summary: Callable    # (bandwidth record) -> the summary's sentence on the roof


@dataclass(frozen=True)
class CheckPoint:
    """What `gpubench check` measures of a study: one invocation at points where its figures have
    plateaued."""
    sizes: tuple
    # (study record, results document, datasheet record or None) -> [figure (lib/figures.figure) with "entry":
    # the name of the entry it was read from (lib/check_figures.of_entry)]
    figures: Callable
    plateau: str                   # why these points are on the plateau: what no longer grows past them
    budget: str                    # the entries it runs and what one costs (the protocol's stopping rule)
    batches: Optional[tuple] = None
    impls: Optional[tuple] = None
    modes: Optional[tuple] = None
    gpus: int = 1                  # GPUs its binary must see: 1, measured on each GPU; 2, once across the node
    # Its figures are one measure on different GPUs or pairs of them: each is also held to their median.
    peers: bool = False


@dataclass(frozen=True)
class Study:
    """One study, as the driver knows it beyond what its binary's --describe says."""
    name: str                      # its binary is gpubench_<name>; its key in results.json
    derive: Callable               # (study record, results document, refine rounds) -> its findings ("derived")
    summary: Callable              # (study record, results document) -> its blocks of summary.md (document.py)
    rates: Callable                # (name's axes, console counters, median s) -> rates for the progress line
    # Where the suite runs it and the report lists it (ascending; each study its own).
    position: int
    batch_axis: bool = False       # entries have a batch axis besides n; only such studies get --batches
    refined: bool = False          # crossovers in n refined by extra sizes (options.refine_rounds)
    plots: Optional[Callable] = None  # (pyplot, study record, plot dir) -> paths of the PNGs written
    roofline_marker: Optional[str] = None  # its points' marker on the roofline chart (else plots.OTHER_MARKER)
    references: dict = field(default_factory=dict)  # {key in results.json 'references': Run} run after it
    comparisons: tuple = ()        # Comparison rows of its entries against those references
    nominal_flop: Optional[str] = None  # why its FLOP are a reference algorithm's, not what ran (sets no peak)
    # One timed call is one GEMM: compare prices 1000 of them and TFLOP/s per USD-hour; its energy is per GEMM.
    one_gemm_per_call: bool = False
    batch: Optional[object] = None  # the batch studies' BatchStudy (lib/batch_study.py)
    # {slot: name} where its binary names a slot otherwise than PLAIN_AXES: what files and binaries from
    # before --describe's axis_names mean (the binary's own axis_names win).
    axes: dict = field(default_factory=dict)
    claims: tuple = ()             # the claims (lib/claims.Claim) its findings answer
    # ((kind, (results document) -> [figure]), ...): its headline figures (lib/figures.figure), listed on the page
    # kind by kind (stages/headline.KINDS) after the measured peaks and the memory bandwidth
    headline: tuple = ()
    memory_roof: Optional[MemoryRoof] = None  # how it measures the device memory bandwidth, where it does
    # Keys of its headline figures that the host paces as much as the GPU though they are the GPU's (a pageable
    # copy, staged by the CPU: the health check judges them apart), and of those whose seconds are one piece
    # of work a price turns into a cost (rank's USD per MLP epoch).
    host_bound_figures: tuple = ()
    priced_figures: tuple = ()
    measures_roofs: bool = False   # it measures the roofline's roofs: its entries are not placed under them as work
    experiment: bool = False       # its entries are experiments (starved grids, empty kernels), not workloads
    gpus_together: bool = False    # it measures the GPUs together: run --gpus, one GPU per sub-run, defeats it
    # (study record, results document) -> findings that read other studies' or the run's findings, added to
    # its own after every study's and the findings across the studies are derived
    derive_across: Optional[Callable] = None
    check: Optional[CheckPoint] = None  # what `gpubench check` measures of it, at its plateau

    @property
    def axis_names(self):
        """{slot: name} as this record knows them (batch: None without a batch axis)."""
        return {**PLAIN_AXES, "batch": "batch" if self.batch_axis else None, **self.axes}
