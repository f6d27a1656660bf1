"""The study registry: one record (Study) per study, holding everything the driver knows of it that
its binary does not say: the sizes and batches a quick run and the default suite sweep, whether
crossovers are refined, how its findings are derived, its summary sections and plots, its reference
runs and what they are compared with, its progress line, and how the findings across the studies and
`compare` treat it. options, report, runner, derive_run, plots, reference, compare and session read
these records; a new study is one record here (and its derive/summary module).

Import rule: this module imports the modules whose functions the records name (derive_*, plots);
those never import it at module level (plots and derive_batch reach it inside functions). The
modules that read the registry (options, report, runner, derive_run, reference, compare, session)
import it; it imports none of them."""
import functools
import importlib
from dataclasses import dataclass, field
from typing import Callable, Optional

from gpubench_driver.lib import findings, batch_study
from gpubench_driver.lib.batch_study import BatchStudy
from gpubench_driver.lib import formatting
from gpubench_driver.studies import overlap, precision, roofline, stream, transfer
from gpubench_driver.studies import mandelbrot, vector_add
from gpubench_driver.studies import primitives
from gpubench_driver.studies import launch_overhead, occupancy
from gpubench_driver.studies import gemm_ladder
from gpubench_driver.studies import p2p
from gpubench_driver.studies import collectives
from gpubench_driver.stages import plots

# The slots of an entry name, <study>/<impl>/<device>/<mode>/<precision>/n:<n>[/batch:<b>], that a
# study names (--describe's axis_names); the device slot is always the device.
AXIS_SLOTS = ("impl", "mode", "precision", "n", "batch")
# The names a slot has where nothing else is said; the slot holding a number format is "precision".
PLAIN_AXES = {"impl": "impl", "mode": "mode", "precision": "precision", "n": "n", "batch": None}


# --- reference runs -------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """One reference run: a script in scripts/ and its arguments, under an interpreter that has
    `library` (a key of reference.PROBES); a `gpu` run only when the study's GPU part ran. sizes_at and
    batches_at: which argument lists the sizes and batches it times, so that it times only those
    the study ran."""
    library: str
    script: str
    args: tuple
    gpu: bool
    sizes_at: int = None
    batches_at: int = None


@dataclass(frozen=True)
class Comparison:
    """Which study entries (impl, mode, precision at each (n, batch) point; batch None in a study
    without a batch axis) are compared with which reference results (those of `run` with the
    fields in `result`); `reference` names it in the report, `target` what the study is held to."""
    study: str
    impl: str
    mode: str
    precision: str
    run: str
    reference: str
    result: dict
    points: tuple
    target: str = None


def _csv(values):
    return ",".join(map(str, values))


NUMPY_SIZES = (4096,)
TORCH_SIZES = (4096, 8192)
CONV_SIZES = (56, 28, 14, 7)  # every layer of the convolution study
CONV_BATCHES = (1, 32, 256)
CONV_LAYOUTS = ("nchw", "nhwc")  # cudnn_<layout> in the study
MLP_WIDTH = 1024  # the hidden width the torch MLP has
MLP_BATCHES = (256, 1024, 8192)
# The study's precision -> the reference's dtype.
CONV_DTYPES = {"fp32": "float32", "tf32": "tf32", "fp16": "float16"}
MLP_DTYPES = {"fp32": "float32", "bf16_mixed": "bf16_mixed"}
# The precision study's precision -> (the reference, its dtype): every format PyTorch has a GEMM of, FP32 with
# them so that the precision study's own FP32 entry is checked at its sizes (the matmul suite stops at 4096).
PRECISION_DTYPES = {"fp32": ("torch", "float32"), "tf32": ("torch", "tf32"), "fp16": ("torch", "float16"),
                    "bf16": ("torch", "bfloat16"),
                    "fp8_e4m3": ("torch._scaled_mm", "float8_e4m3fn")}
TRANSFER_BYTES = 64 << 20  # 64 MiB, the largest copy of the default suite (past the L2 of 50-60 MB)
# (host memory, direction) of the transfer study -> what its torch counterpart is held to.
TRANSFER_TARGETS = {
    ("pinned", "h2d"): "within 2% of torch's pinned copy",
    ("pinned", "d2h"): "within 2% of torch's pinned copy",
    ("pageable", "h2d"): "at least torch's rate from written pageable memory: a time ratio of at most 1",
    ("pageable", "d2h"): None,
    ("pageable_zero_page", "h2d"): None,  # the pitfall, shown beside torch's untouched tensor
    ("device", "d2d"): "within 3% of torch's device copy",
}
CONV_TARGET = ("within 5% of torch.nn.functional.conv2d (cudnn.benchmark=True) for the same layer, dtype, layout "
               "and batch: a time ratio of at most 1.05")
# The precision study's cuBLAS GEMM and PyTorch's (cuBLAS too), both in the steady state (issue 13).
GEMM_TARGET = "the same cuBLAS GEMM as PyTorch's, both timed in the steady state: a time ratio within 0.98-1.02"
ALLREDUCE_SIZES = (33,)  # log2 bytes: the 8 GiB all-reduce of issue 18's target
# Against the study's out-of-place entry, the one the suite's placement and --impls all_reduce run (the driver's
# --modes names no placement); torch's call is in place, which moves the same bytes.
ALLREDUCE_TARGET = ("bus bandwidth within 2% of torch.distributed's all-reduce over the same GPUs and NCCL: a time "
                    "ratio within 0.98-1.02")
MLP_TARGET = ("within 10% of an equivalent eager PyTorch training step at batch 256 and above: a time ratio of "
              "at most 1.10")


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


def size_rates(unit):
    """What the size axis counts (elements) per second."""
    def rates(axes, counters, median_s):
        return [formatting.rate(axes["n"] / median_s, f"{unit}/s", " ")]
    return rates


def pixel_rates(axes, counters, median_s):
    """Pixels per second from the image's width and height counters."""
    pixels = (counters.get("width") or 0) * (counters.get("height") or 0)
    return [formatting.rate(pixels / median_s, "pixels/s", " ")] if pixels else []


def copy_rates(axes, counters, median_s):
    return transfer.progress_rates(counters, median_s)


def bandwidth_rates(axes, counters, median_s):
    return stream.progress_rates(counters, median_s)


# --- the record --------------------------------------------------------------------------
def _summary(module, *leading):
    """The study's sections of summary.md: `sections(*leading, study, document)` of the summary module
    beside its derive module, imported when first used (summary modules read `reference`, which
    reads this registry)."""
    def sections(study, document):
        return importlib.import_module(f"gpubench_driver.{module}").sections(*leading, study, document)
    return sections


@dataclass(frozen=True)
class Study:
    """One study, as the driver knows it beyond what its binary's --describe says."""
    name: str                      # its binary is gpubench_<name>; its key in results.json
    quick_sizes: tuple             # run --quick
    suite_sizes: tuple             # the default suite (run --full: the binary's default_sizes)
    derive: Callable               # (study record, results document, refine rounds) -> its findings ("derived")
    summary: Callable              # (study record, results document) -> its blocks of summary.md (document.py)
    rates: Callable                # (name's axes, console counters, median s) -> rates for the progress line
    batch_axis: bool = False       # entries have a batch axis besides n; only such studies get --batches
    quick_batches: tuple = None
    suite_batches: tuple = None
    refined: bool = False          # crossovers in n refined by extra sizes (options.refine_rounds)
    plots: Optional[Callable] = None  # (pyplot, study record, plot dir) -> paths of the PNGs written
    roofline_marker: Optional[str] = None  # its points' marker on the roofline chart (else plots.OTHER_MARKER)
    references: dict = field(default_factory=dict)  # {key in results.json 'references': Run} run after it
    comparisons: tuple = ()        # Comparison rows of its entries against those references
    nominal_flop: Optional[str] = None  # why its FLOP are a reference algorithm's, not what ran (sets no peak)
    gemm_cost: bool = False        # compare: USD per 1000 GEMMs and TFLOP/s per USD-hour
    batch: Optional[BatchStudy] = None  # the batch studies' findings (derive_batch)
    # {slot: name} where its binary names a slot otherwise than PLAIN_AXES: what files and binaries from
    # before --describe's axis_names mean (the binary's own axis_names win).
    axes: dict = field(default_factory=dict)
    # The implementations and modes the default suite and --quick run, where not all of them (None: all);
    # the user's --impls/--modes and run --full take every one.
    suite_impls: Optional[tuple] = None
    suite_modes: Optional[tuple] = None

    @property
    def axis_names(self):
        """{slot: name} as this record knows them (batch: None without a batch axis)."""
        return {**PLAIN_AXES, "batch": "batch" if self.batch_axis else None, **self.axes}


def _batch_study(name, spec, **fields):
    return Study(name=name, batch_axis=True, batch=spec,
                 derive=lambda study, document, rounds: batch_study.derive(spec, study),
                 plots=functools.partial(plots.batch_plots, name, spec), summary=_summary("lib.batch_report", name, spec),
                 **fields)


BATCHED_GEMM = BatchStudy(
    title="Batched GEMM", unit="products", item="product", size_name="n",
    batch_meaning="products of n x n FP32 matrices per call",
    operands="3 n x n FP32 matrices", operand_bytes=lambda n: 3 * 4 * n * n,  # A, B and C
    loop_baseline="cublas_loop", against_loop=("cublas_strided", "cublas_graph"))
MLP_TRAINING = BatchStudy(
    title="MLP training", unit="samples", item="sample", size_name="hidden width n",
    batch_meaning="samples per SGD step of the MLP 784 -> n -> n -> 10, n its hidden width",
    epoch_samples=60000)
CONV2D = BatchStudy(
    title="Convolution", unit="samples", item="sample", size_name="layer n",
    batch_meaning="images per forward convolution, n the layer's input height and width",
    chooses_algorithm=True)

# The stream study's default suite and --quick: the kernels that answer its questions (docs/methodology.md).
STREAM_SUITE_IMPLS = ("triad_one_per_thread", "dot_grid_stride", "triad_thrust", "triad_openmp")

# The default suite: every study at the points that answer its questions, the whole run within
# about ten minutes on one H100 (docs/methodology.md). --full sweeps each study's own (longer)
# default list, which --describe reports as default_sizes/default_batches. A quick run (within two
# minutes) takes one or two points of each: enough to see every implementation run and verify, not
# to find a crossover or a saturation. conv2d's n names a layer (56: conv2_x, 7: conv5_x's 1x1); the
# MLP's is its hidden width.
STUDIES = (
    # Only matmul compares the GPU with the CPU at every size: the precision study has no crossover
    # to refine, and the batch studies' lie along the batch, which their batches sweep in doublings.
    Study(name="matmul", quick_sizes=(256,), suite_sizes=(64, 256, 1024, 4096),
          refined=True, derive=lambda study, document, rounds: findings.derive(study["entries"], rounds),
          summary=_summary("studies.matmul"), plots=plots.matmul_plots, roofline_marker="o", rates=flop_rates,
          gemm_cost=True,
          references={"numpy": Run("numpy", "reference_matmul.py", ("numpy", _csv(NUMPY_SIZES)), gpu=False,
                                   sizes_at=1),
                      "torch": Run("torch", "reference_matmul.py", ("torch", _csv(TORCH_SIZES), "float32"), gpu=True,
                                   sizes_at=1)},
          comparisons=(Comparison("matmul", "cublas", "resident", "fp32", "torch", "torch", {"dtype": "float32"},
                                  tuple((n, None) for n in TORCH_SIZES), GEMM_TARGET),
                       Comparison("matmul", "openblas", "host", "fp32", "numpy", "numpy", {"dtype": "float32"},
                                  tuple((n, None) for n in NUMPY_SIZES)))),
    # 4096: where each precision is compared with PyTorch in the default suite (8192 as well, with
    # --sizes 4096,8192: its 16 GPU entries and their references took 80 s of the ten minutes on the H100).
    Study(name="precision", quick_sizes=(1024,), suite_sizes=(4096,),
          derive=lambda study, document, rounds: precision.derive(study["entries"], study.get("precisions")),
          summary=_summary("summary_precision"), plots=plots.precision_plots, roofline_marker="s", rates=flop_rates,
          gemm_cost=True,
          references={"torch_precision": Run("torch", "reference_matmul.py", (
              "torch", _csv(TORCH_SIZES), _csv(dtype for _, dtype in PRECISION_DTYPES.values())), gpu=True,
              sizes_at=1)},
          comparisons=tuple(Comparison("precision", "cublas", "resident", precision, "torch_precision", reference,
                                       {"dtype": dtype}, tuple((n, None) for n in TORCH_SIZES), GEMM_TARGET)
                            for precision, (reference, dtype) in PRECISION_DTYPES.items())),
    _batch_study("batched_gemm", BATCHED_GEMM, quick_sizes=(32,), suite_sizes=(32, 128),
                 quick_batches=(1, 256), suite_batches=(1, 64, 4096), roofline_marker="^",
                 rates=item_rates("products", with_flop=True)),
    _batch_study("mlp_training", MLP_TRAINING, quick_sizes=(1024,), suite_sizes=(1024,),
                 quick_batches=(1, 256), suite_batches=(1, 256, 1024, 8192),
                 rates=item_rates("samples", with_flop=False), axes={"n": "hidden"},
                 references={"torch_mlp": Run("torch", "reference_mlp.py", (
                     "torch", _csv(MLP_BATCHES), _csv(MLP_DTYPES.values())), gpu=True, batches_at=1)},
                 comparisons=tuple(Comparison("mlp_training", "cublas_kernels", "resident", precision, "torch_mlp",
                                              "torch eager step", {"dtype": dtype},
                                              tuple((MLP_WIDTH, b) for b in MLP_BATCHES), MLP_TARGET)
                                   for precision, dtype in MLP_DTYPES.items())),
    _batch_study("conv2d", CONV2D, quick_sizes=(56,), suite_sizes=(7, 56),
                 quick_batches=(1, 32), suite_batches=(1, 32), roofline_marker="D",
                 rates=item_rates("samples", with_flop=False), axes={"n": "layer"},
                 nominal_flop="a convolution's FLOP are those of the direct algorithm; cuDNN may choose Winograd or "
                              "FFT algorithms, which do fewer operations, so its rate can exceed what the multiply "
                              "units did, and its fraction of the peak 100%",
                 references={"torch_conv2d": Run("torch", "reference_conv2d.py", (
                     "torch", _csv(CONV_SIZES), _csv(CONV_BATCHES), _csv(CONV_DTYPES.values()), _csv(CONV_LAYOUTS)),
                     gpu=True, sizes_at=1, batches_at=2)},
                 comparisons=tuple(Comparison("conv2d", f"cudnn_{layout}", "resident", precision, "torch_conv2d",
                                              "torch.nn.functional.conv2d", {"dtype": dtype, "layout": layout},
                                              tuple((n, b) for n in CONV_SIZES for b in CONV_BATCHES), CONV_TARGET)
                                   for layout in CONV_LAYOUTS for precision, dtype in CONV_DTYPES.items())),
    Study(name="transfer", quick_sizes=(1 << 20,), suite_sizes=(4 << 10, 64 << 20),
          derive=lambda study, document, rounds: transfer.derive(
              study["entries"], (document["machine"].get("gpus") or [None])[0]),
          summary=_summary("summary_transfer"), plots=plots.transfer_plots, rates=copy_rates,
          axes={"impl": "engine", "mode": "host_memory", "precision": "direction", "n": "bytes"},
          references={"torch_transfer": Run("torch", "reference_transfer.py", ("torch", str(TRANSFER_BYTES)),
                                            gpu=True, sizes_at=1)},
          comparisons=tuple(Comparison("transfer", "copy_engine", memory, direction, "torch_transfer", "torch copy_",
                                       {"memory": memory, "direction": direction}, ((TRANSFER_BYTES, None),), target)
                            for (memory, direction), target in TRANSFER_TARGETS.items())),
    # overlap's entries are whole pipelined runs: no rate on the progress line.
    Study(name="overlap", quick_sizes=(4096,), suite_sizes=(4096,), batch_axis=True, quick_batches=(1, 4),
          suite_batches=(1, 8), derive=lambda study, document, rounds: overlap.derive(study["entries"]),
          summary=_summary("summary_overlap"), plots=plots.overlap_plots, rates=no_rates,
          axes={"impl": "schedule", "mode": "host_memory", "precision": "workload", "batch": "chunks"}),
    # The two ends, 12 entries (as transfer's): 1 Ki elements, what launches and copies cost when there is
    # almost nothing to do; 64 Mi, 768 MiB a call, past every cache, from memory on both sides. --full
    # sweeps between (1 Mi, 12 MiB a call, inside the caches, is --quick's).
    Study(name="vector_add", quick_sizes=(1 << 20,), suite_sizes=(1 << 10, 64 << 20),
          derive=lambda study, document, rounds: vector_add.derive(study["entries"]),
          summary=_summary("summary_vector_add"), plots=plots.vector_add_plots, rates=size_rates("elements"),
          axes={"n": "elements"}),
    # n: the image's rows (1.5 n columns), batch: its iteration limit. The guide's configuration only (1536 x
    # 1024, 20 iterations): the heavy ones (8192 rows, 4096 iterations) take seconds a call on all cores and
    # minutes on one, which --full and --sizes/--batches/--caps reach (docs/methodology.md).
    Study(name="mandelbrot", quick_sizes=(mandelbrot.GUIDE["height"],),
          suite_sizes=(mandelbrot.GUIDE["height"],), batch_axis=True,
          quick_batches=(mandelbrot.GUIDE["max_iterations"],),
          suite_batches=(mandelbrot.GUIDE["max_iterations"],),
          derive=lambda study, document, rounds: mandelbrot.derive(study["entries"],
                                                                          study.get("implementations")),
          summary=_summary("summary_mandelbrot"), plots=plots.mandelbrot_plots, rates=pixel_rates,
          axes={"n": "rows", "batch": "max_iterations"}),
    # stream: an L2 size (2^20 elements: 8 to 24 MiB a call, warm in the 50-60 MB L2) and an HBM size
    # (2^25, BabelStream's default: 256 to 768 MiB a call, at least 4x the L2 of an H100 or H200), triad
    # by our one-vector-per-thread kernel and dot by our grid-stride one (each our faster on the H100:
    # run stream-kernels-h100-20261124, committed in 39cf32a), triad by Thrust and by OpenMP, resident
    # and on the host: 16 entries. The other operations and kernels, the transfer-inclusive mode and the
    # sweep from 2^10 to 2^30 elements: --full, or --impls/--modes/--sizes.
    Study(name="stream", quick_sizes=(1 << 25,), suite_sizes=(1 << 20, 1 << 25),
          suite_impls=STREAM_SUITE_IMPLS, suite_modes=("resident", "host"),
          derive=lambda study, document, rounds: stream.derive(study),
          summary=_summary("summary_stream"), plots=plots.stream_plots, roofline_marker="v", rates=bandwidth_rates,
          axes={"n": "elements"}),
    # roofline: one size past the L2 in every precision, k FMAs per element on both sides of the ridge
    # (an H100's datasheet puts it near k = 80 in each precision); the GPU only: the CPU's chains at
    # k = 1024 take tenths of a second a call. --full: k = 1, 2, 4, ..., 1024 on both.
    Study(name="roofline", quick_sizes=(1 << 25,), suite_sizes=(1 << 25,), batch_axis=True,
          quick_batches=(1, 1024), suite_batches=(1, 16, 128, 1024), suite_impls=("fma_kernel",),
          derive=lambda study, document, rounds: roofline.derive(study["entries"]),
          summary=_summary("summary_roofline"), plots=plots.roofline_sweep_plots, roofline_marker="X",
          rates=flop_rates, axes={"n": "elements", "batch": "fma_per_element"}),
    # primitives: reduce of 2^26 uint32 values (256 MiB, the Thrust-against-a-copy question) by every
    # library, resident and with pinned copies, and on the CPU: 8 entries. The other primitives (scan, the
    # three sorts, transform) and the sweep from 2^10 to 2^30 elements, where the crossovers and the sort of
    # 2^28 keys lie: --full, or --impls/--sizes (std::sort alone takes seconds a call there).
    Study(name="primitives", quick_sizes=(1 << 20,), suite_sizes=(1 << 26,), suite_impls=("reduce",),
          derive=lambda study, document, rounds: primitives.derive(study, document),
          summary=_summary("summary_primitives"), plots=plots.primitives_plots, rates=size_rates("elements"),
          axes={"impl": "primitive", "precision": "library", "n": "elements"}),
    # occupancy: n is threads per block, the batch blocks in the grid. The naive SGEMM only, at the
    # walk-through's 16 blocks (of 128 threads), one block per multiprocessor of an H100 or H200 (132) and
    # 32 per multiprocessor (4224: a whole grid of 256-thread blocks for its 1024 x 1024 output), at 128 and 256
    # threads: 6 entries, the fraction of the GPU the walk-through's launch reaches against the best of them.
    # The triad, 32 to 1024 threads and 1 to 32 x the multiprocessors (the GPU's own count): --full.
    Study(name="occupancy", quick_sizes=(128,), suite_sizes=(128, 256), batch_axis=True, quick_batches=(16, 4224),
          suite_batches=(16, 132, 4224), suite_impls=("naive_sgemm",),
          derive=lambda study, document, rounds: occupancy.derive(study),
          summary=_summary("summary_occupancy"), plots=plots.occupancy_plots, rates=occupancy.progress_rates,
          axes={"n": "threads_per_block", "batch": "blocks"}),
    # launch_overhead: chains of 1 kernel (an empty kernel's launch and synchronisation, the classic latency)
    # and of 100 (the time per kernel of each way of launching, the busy share of a small-kernel chain): 14
    # host-timed entries. Chains of 10 and 1000: --full.
    Study(name="launch_overhead", quick_sizes=(100,), suite_sizes=(1, 100),
          derive=lambda study, document, rounds: launch_overhead.derive(study["entries"]),
          summary=_summary("summary_launch_overhead"), plots=plots.launch_overhead_plots,
          rates=launch_overhead.progress_rates, axes={"n": "kernels"}),
    # gemm_ladder: every rung of both ladders and cuBLAS at 4096, where the targets are judged (8192,
    # the other target size, and 1000 and 1024: --full or --sizes): 15 entries, the slow rungs (the naive
    # kernels) at most a few tenths of a second a call there. --quick: 1024.
    Study(name="gemm_ladder", quick_sizes=(1024,), suite_sizes=(4096,),
          derive=lambda study, document, rounds: gemm_ladder.derive(study),
          summary=_summary("summary_gemm_ladder"), plots=plots.gemm_ladder_plots,
          rates=flop_rates, axes={"impl": "rung"}),
    # p2p: the copy engines at 16 B (each route's latency) and 64 MiB (its bandwidth, as transfer's largest
    # suite copy), one way and both ways. On one GPU that is 6 measured entries (the host to the GPU, both
    # ways, the GPU to the host) and the pair entries skipped ("one GPU visible"); on N GPUs it grows with the
    # N(N-1) ordered pairs (8 GPUs: 216 entries, an estimated two minutes a trial at half a second an entry).
    # The SM kernel and the sweep from 16 B to 1 GiB: --full, or --impls/--sizes.
    Study(name="p2p", quick_sizes=(64 << 20,), suite_sizes=(16, 64 << 20), suite_impls=("copy_engine",),
          derive=lambda study, document, rounds: p2p.derive(study),
          summary=_summary("summary_p2p"), plots=plots.p2p_plots, rates=copy_rates,
          axes={"impl": "engine", "mode": "direction", "precision": "route", "n": "bytes"}),
    # collectives (only where NCCL was found at build time): n is log2 of the message bytes. Every collective
    # out of place at 2^16 (64 KiB: latency-bound) and 2^28 (256 MiB: near the links' rate on NVLink), 10
    # entries. The 8 GiB all-reduce of the target (whose setup and check alone take seconds: eight
    # ranks' 8 GiB inputs) and torch.distributed's beside it: --sizes 33 --impls all_reduce. In place, CUDA
    # graphs and the sweep from 8 B to 8 GiB: --full. One process per GPU across nodes: run --launcher (its binary
    # says ranks_together), the ranks' record in the study's `ranks`.
    Study(name="collectives", quick_sizes=(24,), suite_sizes=(16, 28), suite_modes=("out_of_place",),
          derive=lambda study, document, rounds: collectives.derive(study),
          summary=_summary("summary_collectives"), plots=plots.collectives_plots,
          rates=collectives.progress_rates,
          axes={"impl": "collective", "mode": "placement", "n": "log2_bytes"},
          references={"torch_allreduce": Run("torch", "reference_allreduce.py", ("torch", _csv(ALLREDUCE_SIZES)),
                                             gpu=True, sizes_at=1)},
          comparisons=(Comparison("collectives", "all_reduce", "out_of_place", "fp32", "torch_allreduce",
                                  "torch.distributed all_reduce", {"workload": "all_reduce"},
                                  tuple((n, None) for n in ALLREDUCE_SIZES), ALLREDUCE_TARGET),)),
)
BY_NAME = {study.name: study for study in STUDIES}
NAMES = tuple(BY_NAME)
BATCH_NAMES = tuple(study.name for study in STUDIES if study.batch_axis)


def axis_names(name, record=None):
    """{slot: name} of a study: what its --describe said (`axis_names` in its results record), slot by
    slot, else what this registry knows (files and binaries from before axis_names), else the plain
    names."""
    known = BY_NAME[name].axis_names if name in BY_NAME else dict(PLAIN_AXES)
    described = (record or {}).get("axis_names")
    if isinstance(described, dict):
        known.update({slot: described[slot] for slot in AXIS_SLOTS
                      if slot in described and (described[slot] is None or isinstance(described[slot], str))})
    return known


def format_note(name, record=None):
    """None where the study's precision slot holds a number format; else why its entries have no
    peak, no fraction of it and no roofline point."""
    slot = axis_names(name, record)["precision"]
    if slot == PLAIN_AXES["precision"]:
        return None
    return f"its precision axis is the {slot or 'unnamed slot'}, not a number format"
