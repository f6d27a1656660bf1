"""Which kernels torch runs for the precision study's reference GEMMs at 4096, and which cuBLAS it loads."""
import importlib.metadata as md
import os
import torch
from torch.profiler import profile, ProfilerActivity

for package in ("nvidia-cublas", "nvidia-cublas-cu13", "torch"):
    try:
        print(package, md.version(package))
    except md.PackageNotFoundError:
        pass
a = torch.rand((4096, 4096), device="cuda") * 2 - 1
b = torch.rand((4096, 4096), device="cuda") * 2 - 1
torch.matmul(a, b)
print("loaded:", sorted({line.split()[-1] for line in open(f"/proc/{os.getpid()}/maps") if "cublas" in line}))


def show(label, op, calls=50):
    """Each CUDA activity of `calls` back-to-back calls: name, count, mean device time (us); and the
    span from the first activity's start to the last one's end per call."""
    for _ in range(20):
        op()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            op()
        torch.cuda.synchronize()
    events = [e for e in p.events() if e.device_type.name == "CUDA"]
    kinds = {}
    for e in events:
        kinds.setdefault(e.name[:60], []).append(e.device_time)
    span = (max(e.time_range.end for e in events) - min(e.time_range.start for e in events)) / calls
    print(label, {name: (len(t), round(sum(t) / len(t), 2)) for name, t in kinds.items()}, "span per call", round(span, 2))


torch.backends.cuda.matmul.allow_tf32 = False
show("float32", lambda: torch.matmul(a, b))
torch.backends.cuda.matmul.allow_tf32 = True
show("tf32", lambda: torch.matmul(a, b))
torch.backends.cuda.matmul.allow_tf32 = False
for dtype in (torch.float16, torch.bfloat16):
    x, y = a.to(dtype), b.to(dtype)
    show(str(dtype), lambda: torch.matmul(x, y))
sa = (a.abs().max() / 448).float()
sb = (b.abs().max() / 448).float()
a8 = (a / sa).to(torch.float8_e4m3fn)
b8 = (b / sb).to(torch.float8_e4m3fn).t().contiguous().t()
show("fp8", lambda: torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16))
