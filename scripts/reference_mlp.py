"""Reference MLP training-step timings from eager PyTorch on the GPU, printed as one JSON object.

The step gpubench_mlp_training times, written as a PyTorch user would: nn.Linear x3 with ReLU
(784 -> 1024 -> 1024 -> 10), F.cross_entropy, loss.backward(), torch.optim.SGD(lr=0.1).step(), on
random inputs and labels already on the device. Run by the gpubench driver with an interpreter that
has torch, PROTOCOL the study's `--describe` "measurement" object:
    python3 reference_mlp.py --protocol PROTOCOL torch 256,1024,8192 [DTYPE,...]
DTYPE (default float32): float32 (FP32, TF32 off), bf16_mixed (forward and loss under
torch.autocast(bfloat16): BF16 GEMMs, FP32 master weights, gradients and optimizer). Each step is
timed like the study's GPU entries (reference_timing.cuda_event_timing). Without torch or a CUDA
device, a note and no results (exit 0); a batch or dtype that cannot run (out of memory, no BF16)
becomes a note and the rest still run.
"""
import json
import sys

from reference_timing import cuda_event_timing, protocol_and_arguments

INPUTS, HIDDEN, OUTPUTS = 784, 1024, 10
LEARNING_RATE = 0.1  # the study's; it does not change the time
EPOCH_SAMPLES = 60000
DTYPES = ("float32", "bf16_mixed")


def training_step(torch, batch, dtype):
    """One optimizer step as a closure, on a fresh randomly initialised model and a random batch."""
    nn, functional = torch.nn, torch.nn.functional
    torch.manual_seed(12345 + batch)  # nn.Linear's default (Kaiming-uniform) initialisation draws from it
    model = nn.Sequential(nn.Linear(INPUTS, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, OUTPUTS)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    inputs = torch.rand((batch, INPUTS), device="cuda")  # uniform [0, 1), like pixels, as the study's
    labels = torch.randint(0, OUTPUTS, (batch,), device="cuda")
    mixed = dtype == "bf16_mixed"

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mixed):
            loss = functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()

    return step


def time_step(torch, batch, dtype, protocol):
    # FP32 as the study measures it: no TF32 shortcut (autocast's BF16 GEMMs are unaffected).
    torch.backends.cuda.matmul.allow_tf32 = False
    if dtype == "bf16_mixed" and not torch.cuda.is_bf16_supported():
        raise RuntimeError(f"{torch.cuda.get_device_name(0)} has no BF16 support in torch {torch.__version__}")
    measured = cuda_event_timing(torch, training_step(torch, batch, dtype), protocol)
    samples_per_s = batch / measured["time_s"]["median"]
    return {"library": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "workload": "mlp_training", "n": HIDDEN, "batch": batch,
            "dtype": dtype, "allow_tf32": False, "timer": "CUDA events", **measured,
            "samples_per_s": samples_per_s, "epoch_s": EPOCH_SAMPLES / samples_per_s}


def time_all(batches, dtypes, protocol):
    """Results and notes: what cannot run is noted, the rest still runs."""
    try:
        import torch
    except ImportError as error:
        return [], [f"torch not importable: {error}"]
    if not torch.cuda.is_available():
        return [], [f"torch {torch.__version__} has no usable CUDA device"]
    results, notes = [], []
    for dtype in dtypes:
        for batch in batches:
            try:
                results.append(time_step(torch, batch, dtype, protocol))
            except RuntimeError as error:  # torch.cuda.OutOfMemoryError is one
                reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
                notes.append(f"{dtype} at batch {batch}: not run: {reason}")
            torch.cuda.empty_cache()  # the next batch starts from what this one held
    return results, notes


def main(argv):
    parsed = protocol_and_arguments(argv, "reference_mlp.py")
    if parsed is None:
        return 2
    protocol, argv = parsed
    dtypes = argv[2].split(",") if len(argv) == 3 else ["float32"]
    if not argv or argv[0] != "torch" or len(argv) not in (2, 3) or any(d not in DTYPES for d in dtypes):
        print(f"usage: reference_mlp.py --protocol JSON torch BATCH[,BATCH...] [DTYPE,...] "
              f"(DTYPE: {', '.join(DTYPES)})",
              file=sys.stderr)
        return 2
    try:
        batches = [int(b) for b in argv[1].split(",")]
    except ValueError:
        batches = []
    if not batches or min(batches) < 1:
        print(f"reference_mlp.py: batches must be positive integers, got {argv[1]!r}", file=sys.stderr)
        return 2
    results, notes = time_all(batches, dtypes, protocol)
    print(json.dumps({"results": results, "notes": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
