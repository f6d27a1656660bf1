"""Reference copy timings from PyTorch, printed as one JSON object: Tensor.copy_ between host
and device memory of the kinds the transfer study measures, timed as the study times its copies
(host clock from the call until the device is synchronized, reference_timing.host_clock_timing
with PROTOCOL, the study's `--describe` "measurement" object).

    python3 reference_transfer.py --protocol PROTOCOL torch BYTES[,BYTES...]
    e.g. python3 reference_transfer.py --protocol PROTOCOL torch 268435456

Configurations (memory, direction), named as the study names them:
  pinned h2d / d2h        torch.empty(pin_memory=True), written, copy_(non_blocking=True)
  pageable h2d / d2h      an ordinary CPU tensor that has been written
  pageable_zero_page h2d  a torch.empty CPU tensor never written: it reads as the kernel's zero
                          page, which copies faster than real data (the pitfall the study shows)
  device d2d              a device tensor copied into another
Without torch or a CUDA device there are no results, a note says why, and the exit status is 0.
"""
import json
import sys

from reference_timing import host_clock_timing, protocol_and_arguments

CONFIGURATIONS = (("pinned", "h2d"), ("pinned", "d2h"), ("pageable", "h2d"), ("pageable", "d2h"),
                  ("pageable_zero_page", "h2d"), ("device", "d2d"))


def written(torch, tensor):
    """Fills a uint8 tensor with random bytes, so every page is mapped and holds real data."""
    tensor.copy_(torch.randint(0, 256, tensor.shape, dtype=torch.uint8, device=tensor.device))
    return tensor


def copy_operation(torch, bytes_, memory, direction):
    """(operation, what) for one configuration; the tensors live as long as the operation."""
    device = torch.empty(bytes_, dtype=torch.uint8, device="cuda")
    if direction == "d2d":
        source = written(torch, torch.empty(bytes_, dtype=torch.uint8, device="cuda"))
        return (lambda: device.copy_(source)), "device.copy_(device)"
    pinned = memory == "pinned"
    host = torch.empty(bytes_, dtype=torch.uint8, pin_memory=pinned)
    if memory != "pageable_zero_page":
        written(torch, host)
    if direction == "h2d":
        return (lambda: device.copy_(host, non_blocking=pinned)), "cuda_tensor.copy_(cpu_tensor)"
    written(torch, device)
    return (lambda: host.copy_(device, non_blocking=pinned)), "cpu_tensor.copy_(cuda_tensor)"


def time_copy(torch, bytes_, memory, direction, protocol):
    operation, what = copy_operation(torch, bytes_, memory, direction)
    measured = host_clock_timing(operation, protocol, complete=torch.cuda.synchronize)
    return {"library": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "workload": "transfer", "op": what,
            "n": bytes_, "memory": memory, "direction": direction, "timer": "host clock + synchronize",
            **measured, "bytes_per_s": bytes_ / measured["time_s"]["median"]}


def run(sizes, protocol):
    try:
        import torch
    except ImportError as error:
        return [], [f"not run: no torch ({error})"]
    if not torch.cuda.is_available():
        return [], ["not run: torch has no usable CUDA device"]
    results, notes = [], []
    for bytes_ in sizes:
        for memory, direction in CONFIGURATIONS:
            try:
                results.append(time_copy(torch, bytes_, memory, direction, protocol))
            except (RuntimeError, MemoryError) as error:
                reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
                notes.append(f"{memory} {direction} at {bytes_} bytes: not run: {reason}")
    return results, notes


def main(argv):
    parsed = protocol_and_arguments(argv, "reference_transfer.py")
    if parsed is None:
        return 2
    protocol, argv = parsed
    if len(argv) != 2 or argv[0] != "torch":
        print("usage: reference_transfer.py --protocol JSON torch BYTES[,BYTES...]", file=sys.stderr)
        return 2
    try:
        sizes = [int(item) for item in argv[1].split(",")]
    except ValueError:
        print(f"reference_transfer.py: sizes must be integers, got {argv[1]!r}", file=sys.stderr)
        return 2
    results, notes = run(sizes, protocol)
    print(json.dumps({"results": results, "notes": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
