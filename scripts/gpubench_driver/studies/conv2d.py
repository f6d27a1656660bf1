"""The conv2d study's plug-in: forward convolutions of ResNet-50's layers (n names the layer) by cuDNN in both
layouts and on the CPU, against torch.nn.functional.conv2d. Findings, sections and plots are every batch
study's (lib/batch_report.py), with cuDNN's chosen algorithm; FLOP are nominal (the direct algorithm's)."""
from gpubench_driver.lib import batch_report
from gpubench_driver.lib.batch_study import BatchStudy
from gpubench_driver.lib.registry import Comparison, Run, csv, item_rates

CONV_SIZES = (56, 28, 14, 7)  # every layer of the convolution study
CONV_BATCHES = (1, 32, 256)
CONV_LAYOUTS = ("nchw", "nhwc")  # cudnn_<layout> in the study
# The study's precision -> the reference's dtype.
CONV_DTYPES = {"fp32": "float32", "tf32": "tf32", "fp16": "float16"}
CONV_TARGET = ("within 5% of torch.nn.functional.conv2d (cudnn.benchmark=True) for the same layer, dtype, layout "
               "and batch: a time ratio of at most 1.05")
CONV2D = BatchStudy(
    title="Convolution", unit="samples", item="sample", size_name="layer n",
    batch_meaning="images per forward convolution, n the layer's input height and width",
    chooses_algorithm=True)
NOMINAL_FLOP = ("a convolution's FLOP are those of the direct algorithm; cuDNN may choose Winograd or FFT algorithms, "
                "which do fewer operations, so its rate can exceed what the multiply units did, and its fraction of "
                "the peak 100%")
REFERENCES = {"torch_conv2d": Run("torch", "reference_conv2d.py", ("torch", csv(CONV_SIZES), csv(CONV_BATCHES),
                                                                   csv(CONV_DTYPES.values()), csv(CONV_LAYOUTS)),
                                  gpu=True, sizes_at=1, batches_at=2)}
COMPARISONS = tuple(Comparison("conv2d", f"cudnn_{layout}", "resident", precision, "torch_conv2d",
                               "torch.nn.functional.conv2d", {"dtype": dtype, "layout": layout},
                               tuple((n, b) for n in CONV_SIZES for b in CONV_BATCHES), CONV_TARGET)
                    for layout in CONV_LAYOUTS for precision, dtype in CONV_DTYPES.items())

# n: the layer (56: conv2_x, 7: conv5_x's 1x1).
STUDY = batch_report.study_record("conv2d", CONV2D, roofline_marker="D",
                                  rates=item_rates("samples", with_flop=False), axes={"n": "layer"},
                                  nominal_flop=NOMINAL_FLOP, references=REFERENCES, comparisons=COMPARISONS,
                                  position=50)
