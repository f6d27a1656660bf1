"""Reference FP32 matmul timings from numpy (CPU) and PyTorch (GPU), printed as one JSON object.

Run by the gpubench driver with whichever interpreter has numpy / torch:
    python3 reference_matmul.py numpy 4096
    python3 reference_matmul.py torch 4096,8192
"""
import json
import statistics
import sys
import time

TIMED_RUNS = 20
WARMUP_RUNS = 3


def spread(samples):
    ordered = sorted(samples)
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1],
            "stddev": statistics.stdev(ordered) if len(ordered) > 1 else 0.0, "samples": samples}


def numpy_blas(np):
    """The BLAS numpy was built against, as far as this numpy version tells."""
    try:
        config = np.show_config(mode="dicts")  # numpy >= 1.26
        return config.get("Build Dependencies", {}).get("blas")
    except TypeError:
        info = getattr(np.__config__, "blas_opt_info", None) or getattr(np.__config__, "blas_ilp64_opt_info", None)
        return info if isinstance(info, dict) else None


def numpy_threads():
    try:
        import threadpoolctl
    except ImportError:
        return None
    return [{key: pool.get(key) for key in ("internal_api", "version", "num_threads", "threading_layer")}
            for pool in threadpoolctl.threadpool_info() if pool.get("user_api") == "blas"]


def time_numpy(n):
    import numpy as np
    rng = np.random.default_rng(12345)
    a = (rng.random((n, n), dtype=np.float32) * 2 - 1)
    b = (rng.random((n, n), dtype=np.float32) * 2 - 1)
    for _ in range(WARMUP_RUNS):
        np.matmul(a, b)
    samples = []
    for _ in range(TIMED_RUNS):
        start = time.perf_counter()
        np.matmul(a, b)
        samples.append(time.perf_counter() - start)
    return {"library": "numpy", "version": np.__version__, "blas": numpy_blas(np),
            "blas_threads": numpy_threads(), "n": n, "dtype": "float32",
            "timer": "time.perf_counter", "time_s": spread(samples), "flop_per_s": 2.0 * n ** 3 / statistics.median(samples)}


def time_torch(n):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch has no usable CUDA device")
    # FP32 as the study measures it: no TF32 tensor-core shortcut.
    torch.backends.cuda.matmul.allow_tf32 = False
    generator = torch.Generator(device="cuda").manual_seed(12345)
    a = torch.rand((n, n), device="cuda", dtype=torch.float32, generator=generator) * 2 - 1
    b = torch.rand((n, n), device="cuda", dtype=torch.float32, generator=generator) * 2 - 1
    for _ in range(WARMUP_RUNS):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    samples = []
    for _ in range(TIMED_RUNS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1000.0)
    return {"library": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "n": n, "dtype": "float32",
            "timer": "CUDA events", "time_s": spread(samples), "flop_per_s": 2.0 * n ** 3 / statistics.median(samples)}


def main(argv):
    if len(argv) != 2 or argv[0] not in ("numpy", "torch"):
        print("usage: reference_matmul.py numpy|torch N[,N...]", file=sys.stderr)
        return 2
    timer = time_numpy if argv[0] == "numpy" else time_torch
    results = [timer(int(n)) for n in argv[1].split(",")]
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
