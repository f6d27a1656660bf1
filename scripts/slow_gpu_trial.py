"""Does `gpubench check` find a GPU made slow, and only it? Runs the check several times with one GPU
loaded by another process (a bfloat16 GEMM loop through PyTorch, started before each check and stopped
after it) and several times without, and reports, per repetition, the GPUs and figures the check named
below. Exit status 0 when every loaded check named exactly the loaded GPU, with figures it lost, and every
unloaded check named none; 1 otherwise; 2 when it could not run.

    python3 scripts/slow_gpu_trial.py --out DIR [--load-gpu 0] [--loaded 1] [--unloaded 1]
                                      [--build-dir build] [-- check options such as --gpus all]

Each check is `scripts/gpubench check --no-build --no-setup` into DIR/<loaded|unloaded>-<i>/; the summary
is DIR/trial.json. Needs the binaries built (run `scripts/gpubench check` once) and PyTorch with CUDA for
the load."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

from gpubench_driver.stages import check_verdicts, health

HERE = os.path.dirname(os.path.abspath(__file__))
# Square bfloat16 GEMMs back to back: the tensor cores and memory of the loaded GPU are shared with the
# check's entries for as long as it runs.
LOAD = """
import sys, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
c = torch.empty_like(a)
torch.matmul(a, b, out=c); torch.cuda.synchronize()
print("loading", flush=True)
while True:
    for _ in range(50):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
"""


def start_load(gpu):
    """The loading process on GPU `gpu` (an nvidia-smi index), once its first GEMM has run."""
    load = subprocess.Popen([sys.executable, "-c", LOAD], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)})
    if load.stdout.readline().strip() != "loading":
        load.kill()
        raise RuntimeError(f"the GEMM loop on GPU {gpu} did not start (PyTorch with CUDA missing?): "
                           f"exit {load.wait()}")
    return load


def stop_load(load):
    load.send_signal(signal.SIGTERM)
    try:
        load.wait(timeout=30)
    except subprocess.TimeoutExpired:
        load.kill()
        load.wait()


def named(check):
    """{GPU index: [the labels of its figures and checks below]} of the GPUs a check.json judged below."""
    found = {}
    for part in check.get("gpus", []):
        if part.get("verdict") == check_verdicts.BELOW:
            found[part.get("index")] = ([f["label"] for f in part.get("figures", []) if f.get("status") == health.BELOW]
                                        + [f"{c.get('check')} check" for c in part.get("checks", []) if not c.get("ok")])
    return found


def as_expected(below, load_gpu):
    """Whether a check named exactly the loaded GPU (none without a load), and figures it lost: not only
    the other-process check that its load trips."""
    if load_gpu is None:
        return not below
    return set(below) == {load_gpu} and any(not label.endswith(" check") for label in below[load_gpu])


def one_check(folder, args, check_args, load_gpu=None):
    load = start_load(load_gpu) if load_gpu is not None else None
    try:
        started = time.monotonic()
        status = subprocess.call([os.path.join(HERE, "gpubench"), "check", "--no-build", "--no-setup",
                                  "--build-dir", args.build_dir, "--out", folder, *check_args],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        seconds = time.monotonic() - started
    finally:
        if load is not None:
            stop_load(load)
    with open(os.path.join(folder, "check.json"), encoding="utf-8") as stream:
        check = json.load(stream)
    below = named(check)
    return {"folder": folder, "loaded_gpu": load_gpu, "exit_status": status, "seconds": round(seconds, 1),
            "verdict": check.get("verdict"), "named": below, "as_expected": as_expected(below, load_gpu)}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--load-gpu", type=int, default=0, help="the nvidia-smi index of the GPU to load")
    parser.add_argument("--loaded", type=int, default=1, help="checks with the load")
    parser.add_argument("--unloaded", type=int, default=1, help="checks without it")
    parser.add_argument("--build-dir", default=os.path.join(os.path.dirname(HERE), "build"))
    args, check_args = parser.parse_known_args(argv)
    check_args = [a for a in check_args if a != "--"]
    os.makedirs(args.out, exist_ok=True)
    plan = [("unloaded", None)] * args.unloaded + [("loaded", args.load_gpu)] * args.loaded
    trials, counts = [], {}
    try:
        for kind, gpu in plan:
            counts[kind] = counts.get(kind, 0) + 1
            trial = one_check(os.path.join(args.out, f"{kind}-{counts[kind]}"), args, check_args, gpu)
            trials.append(trial)
            names = "; ".join(f"GPU {index}: {', '.join(labels)}" for index, labels in trial["named"].items())
            print(f"{kind} {counts[kind]}: exit {trial['exit_status']}, {trial['verdict']}, {trial['seconds']} s, "
                  f"named: {names or 'none'} -> {'as expected' if trial['as_expected'] else 'NOT as expected'}",
                  flush=True)
    except (OSError, RuntimeError, ValueError) as error:
        print(f"slow_gpu_trial: {error}", file=sys.stderr)
        return 2
    with open(os.path.join(args.out, "trial.json"), "w", encoding="utf-8") as stream:
        json.dump({"load_gpu": args.load_gpu, "check_args": check_args, "trials": trials}, stream, indent=1)
    return 0 if all(trial["as_expected"] for trial in trials) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
