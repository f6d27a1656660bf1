"""Reference matmul timings from numpy (CPU) and PyTorch (GPU), printed as one JSON object.

Run by the gpubench driver with whichever interpreter has numpy / torch, PROTOCOL the study's
`--describe` "measurement" object (reference_timing: numpy on the host clock, torch on the device):
    python3 reference_matmul.py --protocol PROTOCOL numpy 4096
    python3 reference_matmul.py --protocol PROTOCOL torch 4096,8192 [DTYPE,...]
DTYPE (default float32): float32 (no TF32), tf32 (FP32 tensors, TF32 allowed), float16, bfloat16,
float8_e4m3fn (torch._scaled_mm with per-tensor scales). A dtype this torch or GPU cannot run
becomes a line in "notes" instead of a result.
"""
import json
import sys

from reference_timing import cuda_event_timing, host_clock_timing, protocol_and_arguments

FP8_E4M3_MAX = 448.0  # largest finite float8_e4m3fn


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


def time_numpy(n, protocol):
    import numpy as np
    rng = np.random.default_rng(12345)
    a = (rng.random((n, n), dtype=np.float32) * 2 - 1)
    b = (rng.random((n, n), dtype=np.float32) * 2 - 1)
    measured = host_clock_timing(lambda: np.matmul(a, b), protocol, kind="cpu")
    return {"library": "numpy", "version": np.__version__, "blas": numpy_blas(np),
            "blas_threads": numpy_threads(), "n": n, "dtype": "float32", "timer": "time.perf_counter", **measured,
            "flop_per_s": 2.0 * n ** 3 / measured["time_s"]["median"]}


def blas_library(torch):
    """The library torch.matmul dispatches to ("cublas", its default, or "cublaslt" with
    TORCH_BLAS_PREFER_CUBLASLT=1), or None where this torch does not say."""
    preferred = getattr(torch.backends.cuda, "preferred_blas_library", None)
    if preferred is None:
        return None
    backend = preferred()
    return str(getattr(backend, "name", backend)).lower()


def matmul_operation(torch, a, b, dtype):
    """torch.matmul on tensors of the dtype (tf32: FP32 tensors with TF32 allowed)."""
    tensor_dtype = {"float32": torch.float32, "tf32": torch.float32, "float16": torch.float16,
                    "bfloat16": torch.bfloat16}[dtype]
    a, b = a.to(tensor_dtype), b.to(tensor_dtype)
    return (lambda: torch.matmul(a, b)), {"op": "torch.matmul", "blas_library": blas_library(torch)}


def scaled_mm_operation(torch, a, b, dtype):
    """torch._scaled_mm on E4M3 inputs scaled per tensor (amax / 448 maps each onto the E4M3
    range); it wants the second operand column-major. BF16 output, as the study's cuBLASLt FP8
    entries write (FP32 where this torch refuses BF16)."""
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        raise NotImplementedError(f"torch {torch.__version__} has no torch._scaled_mm or float8_e4m3fn")
    scale_a = (a.abs().max() / FP8_E4M3_MAX).float()
    scale_b = (b.abs().max() / FP8_E4M3_MAX).float()
    a8 = (a / scale_a).to(torch.float8_e4m3fn)
    b8 = (b / scale_b).to(torch.float8_e4m3fn).t().contiguous().t()
    refusal = None
    for out_dtype in (torch.bfloat16, torch.float32):
        def operation(out_dtype=out_dtype):
            return torch._scaled_mm(a8, b8, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)
        try:
            operation()
            torch.cuda.synchronize()
        except RuntimeError as error:
            refusal = error
            continue
        return operation, {"op": "torch._scaled_mm", "out_dtype": str(out_dtype).replace("torch.", ""),
                           "scaling": f"per tensor, amax / {FP8_E4M3_MAX:g}"}
    raise refusal


OPERATIONS = {"float32": matmul_operation, "tf32": matmul_operation, "float16": matmul_operation,
              "bfloat16": matmul_operation, "float8_e4m3fn": scaled_mm_operation}


def time_torch(n, dtype, protocol):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch has no usable CUDA device")
    # FP32 as the study measures it: no TF32 tensor-core shortcut unless TF32 is what is timed.
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    generator = torch.Generator(device="cuda").manual_seed(12345)
    a = torch.rand((n, n), device="cuda", dtype=torch.float32, generator=generator) * 2 - 1
    b = torch.rand((n, n), device="cuda", dtype=torch.float32, generator=generator) * 2 - 1
    operation, details = OPERATIONS[dtype](torch, a, b, dtype)
    measured = cuda_event_timing(torch, operation, protocol)
    return {"library": "torch", "version": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "n": n, "dtype": dtype, **details, "timer": "CUDA events", **measured,
            "flop_per_s": 2.0 * n ** 3 / measured["time_s"]["median"]}


def time_torch_dtypes(sizes, dtypes, protocol):
    """Results and notes: a dtype or size this torch/GPU cannot run (no FP8 before compute
    capability 8.9, an old torch, too little memory) is noted and the rest still run."""
    results, notes = [], []
    for dtype in dtypes:
        for n in sizes:
            try:
                results.append(time_torch(n, dtype, protocol))
            except (RuntimeError, NotImplementedError, TypeError, AttributeError) as error:
                reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
                notes.append(f"{dtype} at n={n}: not run: {reason}")
    return results, notes


def main(argv):
    parsed = protocol_and_arguments(argv, "reference_matmul.py")
    if parsed is None:
        return 2
    protocol, argv = parsed
    library = argv[0] if argv else None
    dtypes = argv[2].split(",") if len(argv) == 3 else ["float32"]
    if (library not in ("numpy", "torch") or len(argv) not in (2, 3) or (library == "numpy" and len(argv) == 3)
            or any(dtype not in OPERATIONS for dtype in dtypes)):
        print(f"usage: reference_matmul.py --protocol JSON numpy N[,N...] | torch N[,N...] [DTYPE,...] "
              f"(DTYPE: {', '.join(OPERATIONS)})", file=sys.stderr)
        return 2
    sizes = [int(n) for n in argv[1].split(",")]
    if library == "numpy":
        print(json.dumps({"results": [time_numpy(n, protocol) for n in sizes]}))
    else:
        results, notes = time_torch_dtypes(sizes, dtypes, protocol)
        print(json.dumps({"results": results, "notes": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
