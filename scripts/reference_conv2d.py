"""Reference convolution timings from PyTorch, printed as one JSON object: torch.nn.functional.conv2d
(cuDNN, with torch.backends.cudnn.benchmark = True, so torch times cuDNN's algorithms once per
shape and keeps the fastest, as the study's cuDNN plans do) on the layers of the conv2d study.

    python3 reference_conv2d.py --protocol PROTOCOL torch N[,N...] BATCH[,BATCH...] DTYPE[,...] LAYOUT[,...]
    e.g. python3 reference_conv2d.py --protocol PROTOCOL torch 56,14 1,32,256 float32,tf32,float16 nchw,nhwc

N names a layer by its input height and width, as the study's size axis does (7, 14, 28, 56).
DTYPE: float32 (TF32 off), tf32 (FP32 tensors, TF32 allowed), float16. LAYOUT: nchw (contiguous
tensors) or nhwc (torch.channels_last for input and filter; the output follows). Inputs are
uniform in [-1, 1) on the device, timed as the study times a GPU entry (PROTOCOL, the study's
`--describe` "measurement" object, through reference_timing.cuda_event_timing). Without torch or a
CUDA device there are no results, a note says why, and the exit status is 0; a configuration torch
cannot run (too little memory) becomes a note and the others still run.
"""
import json
import sys

from reference_timing import cuda_event_timing, protocol_and_arguments

# bench/conv2d.cpp's layers: n -> (in_channels, out_channels, kernel, padding), stride 1.
LAYERS = {7: (512, 2048, 1, 0), 14: (256, 256, 3, 1), 28: (128, 128, 3, 1), 56: (64, 64, 3, 1)}
DTYPES = ("float32", "tf32", "float16")
LAYOUTS = ("nchw", "nhwc")
SEED = 12345


def flop(n, batch):
    """2·N·K·P·Q·C·R·S, as Conv2dShape::flop counts it; these layers keep P = Q = n."""
    in_channels, out_channels, kernel, _ = LAYERS[n]
    return 2.0 * batch * out_channels * n * n * in_channels * kernel * kernel


def conv_operation(torch, n, batch, dtype, layout):
    """conv2d on random device tensors in the dtype and memory format."""
    in_channels, out_channels, kernel, padding = LAYERS[n]
    tensor_dtype = torch.float16 if dtype == "float16" else torch.float32
    memory_format = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    generator = torch.Generator(device="cuda").manual_seed(SEED)

    def uniform(shape):
        values = torch.rand(shape, device="cuda", dtype=torch.float32, generator=generator) * 2 - 1
        return values.to(tensor_dtype).contiguous(memory_format=memory_format)

    x = uniform((batch, in_channels, n, n))
    w = uniform((out_channels, in_channels, kernel, kernel))
    return lambda: torch.nn.functional.conv2d(x, w, None, 1, padding)


def time_conv(torch, n, batch, dtype, layout, protocol):
    torch.backends.cudnn.benchmark = True
    # FP32 as the study's fp32 entries run it: no TF32 unless TF32 is what is timed.
    torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    measured = cuda_event_timing(torch, conv_operation(torch, n, batch, dtype, layout), protocol)
    in_channels, out_channels, kernel, padding = LAYERS[n]
    return {"library": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name(0),
            "workload": "conv2d", "op": "torch.nn.functional.conv2d", "cudnn_benchmark": True,
            "allow_tf32": torch.backends.cudnn.allow_tf32, "n": n, "batch": batch, "dtype": dtype,
            "layout": layout, "in_channels": in_channels, "out_channels": out_channels, "kernel": kernel,
            "stride": 1, "padding": padding, "timer": "CUDA events", **measured,
            "flop_per_s": flop(n, batch) / measured["time_s"]["median"]}


def time_all(torch, protocol, sizes, batches, dtypes, layouts):
    """Results and notes: a configuration torch cannot run is noted and the rest still run."""
    results, notes = [], []
    for n in sizes:
        for batch in batches:
            for dtype in dtypes:
                for layout in layouts:
                    try:
                        results.append(time_conv(torch, n, batch, dtype, layout, protocol))
                    except RuntimeError as error:  # torch.cuda.OutOfMemoryError among them
                        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
                        notes.append(f"{dtype} {layout} at n={n} batch={batch}: not run: {reason}")
                    torch.cuda.empty_cache()  # the next, larger batch gets the memory back
    return results, notes


def parse(argv):
    """(sizes, batches, dtypes, layouts), or None when the arguments are not valid."""
    if len(argv) != 5 or argv[0] != "torch":
        return None
    try:
        sizes = [int(v) for v in argv[1].split(",")]
        batches = [int(v) for v in argv[2].split(",")]
    except ValueError:
        return None
    dtypes, layouts = argv[3].split(","), argv[4].split(",")
    if (any(n not in LAYERS for n in sizes) or any(b <= 0 for b in batches)
            or any(d not in DTYPES for d in dtypes) or any(l not in LAYOUTS for l in layouts)):
        return None
    return sizes, batches, dtypes, layouts


def main(argv):
    with_protocol = protocol_and_arguments(argv, "reference_conv2d.py")
    if with_protocol is None:
        return 2
    protocol, argv = with_protocol
    parsed = parse(argv)
    if parsed is None:
        print(f"usage: reference_conv2d.py --protocol JSON torch N[,N...] BATCH[,BATCH...] DTYPE[,...] LAYOUT[,...] "
              f"(N: {', '.join(map(str, LAYERS))}; DTYPE: {', '.join(DTYPES)}; LAYOUT: {', '.join(LAYOUTS)})",
              file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError as error:
        print(json.dumps({"results": [], "notes": [f"not run: PyTorch is not installed ({error})"]}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"results": [], "notes": [f"not run: torch {torch.__version__} has no usable CUDA device"]}))
        return 0
    results, notes = time_all(torch, protocol, *parsed)
    print(json.dumps({"results": results, "notes": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
