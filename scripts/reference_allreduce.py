"""Reference all-reduce timings from PyTorch, printed as one JSON object: torch.distributed.all_reduce
(NCCL backend, FP32 sum, in place) over every GPU of this node, one spawned process per GPU, timed on
rank 0's device as the collectives study times its entries (CUDA events after warm-up,
reference_timing.cuda_event_timing with PROTOCOL, the study's `--describe` "measurement" object).

    python3 reference_allreduce.py --protocol PROTOCOL torch LOG2_BYTES[,LOG2_BYTES...]
    e.g. python3 reference_allreduce.py --protocol PROTOCOL torch 33      (8 GiB)

The protocol decides how many calls it makes from what it measures, which only rank 0 sees: before
each of its calls rank 0 tells the other ranks, over a gloo group on the host, to make one too (a
zero ends the size), so that every rank calls all_reduce the same number of times. The message is
the study's size (2^LOG2_BYTES bytes of FP32 on every rank), so the study's bus bandwidth and this one
stand in the inverse ratio of the times. Without torch, CUDA or NCCL there are no results, a note says
why, and the exit status is 0.
"""
import datetime
import json
import os
import socket
import sys

from reference_timing import cuda_event_timing, protocol_and_arguments

END, CALL, ABORT = 0, 1, 2  # rank 0's commands: the size is done, one more call, rank 0 failed (stop)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def command(torch, dist, group, value=None):
    """Rank 0 sends `value`; the others receive what it sent."""
    message = torch.tensor([0 if value is None else value], dtype=torch.int64)
    dist.broadcast(message, 0, group=group)
    return int(message.item())


class RankZeroFailed(RuntimeError):
    pass


def nccl_version(torch):
    version = torch.cuda.nccl.version()  # a tuple in recent torch, an integer in older ones
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def time_size(torch, dist, group, log2_bytes, protocol):
    """Rank 0: the all-reduce's timing at 2^log2_bytes bytes; the others: None, after following it."""
    rank, world = dist.get_rank(), dist.get_world_size()
    # Random, as the study's inputs; in place the values grow by the world size a call, which no
    # timing depends on (nccl-tests times it so too).
    tensor = torch.empty((1 << log2_bytes) // 4, device="cuda").uniform_(-1, 1)
    if rank != 0:
        while (order := command(torch, dist, group)) == CALL:
            dist.all_reduce(tensor)
        if order == ABORT:
            raise RankZeroFailed("rank 0 failed: see its note")
        return None

    def operation():
        command(torch, dist, group, CALL)
        dist.all_reduce(tensor)
    try:
        measured = cuda_event_timing(torch, operation, protocol)
    except BaseException:
        command(torch, dist, group, ABORT)  # the others stop waiting for calls
        raise
    command(torch, dist, group, END)
    return {"library": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "nccl": nccl_version(torch), "device": torch.cuda.get_device_name(0),
            "workload": "all_reduce", "op": "torch.distributed.all_reduce(SUM, in place)", "n": log2_bytes,
            "message_bytes": 1 << log2_bytes, "ranks": world, "timer": "CUDA events on rank 0", **measured}


def worker(rank, world, port, sizes, protocol, queue):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    # A rank that fails leaves the others waiting for its next command: they give up after this.
    group = dist.new_group(backend="gloo", timeout=datetime.timedelta(minutes=10))
    results, notes = [], []
    for log2_bytes in sizes:
        try:
            found = time_size(torch, dist, group, log2_bytes, protocol)
            if found:
                found["bus_bytes_per_s"] = (found["message_bytes"] / found["time_s"]["median"]) * 2 * (world - 1) / world
                results.append(found)
        except RankZeroFailed:
            break  # rank 0 says why
        except (RuntimeError, MemoryError) as error:
            # The ranks can no longer keep in step: end the run here, with the reason.
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            notes.append(f"rank {rank} at 2^{log2_bytes} bytes: not run: {reason}")
            break
    dist.destroy_process_group()
    if rank == 0 or notes:
        queue.put((results, notes))


def run(sizes, protocol):
    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError as error:
        return [], [f"not run: no torch ({error})"]
    if not torch.cuda.is_available():
        return [], ["not run: torch has no usable CUDA device"]
    if not dist.is_available() or not dist.is_nccl_available():
        return [], ["not run: this torch has no NCCL backend"]
    world = torch.cuda.device_count()
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    mp.start_processes(worker, args=(world, free_port(), sizes, protocol, queue), nprocs=world, join=True,
                       start_method="spawn")
    results, notes = [], []
    while not queue.empty():
        found, found_notes = queue.get()
        results += found
        notes += found_notes
    return results, notes


def main(argv):
    parsed = protocol_and_arguments(argv, "reference_allreduce.py")
    if parsed is None:
        return 2
    protocol, argv = parsed
    if len(argv) != 2 or argv[0] != "torch":
        print("usage: reference_allreduce.py --protocol JSON torch LOG2_BYTES[,LOG2_BYTES...]", file=sys.stderr)
        return 2
    try:
        sizes = [int(item) for item in argv[1].split(",")]
    except ValueError:
        print(f"reference_allreduce.py: sizes must be integers, got {argv[1]!r}", file=sys.stderr)
        return 2
    results, notes = run(sizes, protocol)
    print(json.dumps({"results": results, "notes": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
