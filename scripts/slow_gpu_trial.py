"""Does `gpubench check` find a GPU made slow, or a link made slow, and only it? Runs the check several times
with a load started before each check and stopped after it, and several times without, and reports, per
repetition, the GPUs, pairs and figures the check named below. The load is either one GPU's (another process
running a bfloat16 GEMM loop through PyTorch on it) or one link's (a process copying 256 MiB from GPU A to GPU
B over and over). Exit status 0 when every loaded check named what was loaded (the GPU and figures it lost;
the pair A to B, with nothing named beyond pairs that share A's or B's links and the other-process check of
the GPUs the load runs on) and every unloaded check named nothing; 1 otherwise; 2 when it could not run.

    python3 scripts/slow_gpu_trial.py --out DIR [--load-gpu 0 | --load-link 0,1] [--loaded 1] [--unloaded 1]
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
NODE = "node"  # named()'s key for the check's part between GPUs
PEER_KEY = "p2p/gpu"
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

# Peer copies from GPU A to GPU B back to back (PyTorch enables peer access between the two): the link's
# bandwidth is shared with the check's copy of that pair.
LINK_LOAD = """
import sys, torch
a, b = int(sys.argv[1]), int(sys.argv[2])
x = torch.empty(64 << 20, dtype=torch.float32, device=f"cuda:{a}")
y = torch.empty(64 << 20, dtype=torch.float32, device=f"cuda:{b}")
y.copy_(x); torch.cuda.synchronize(a); torch.cuda.synchronize(b)
print("loading", flush=True)
while True:
    for _ in range(20):
        y.copy_(x, non_blocking=True)
    torch.cuda.synchronize(b)
"""


def start_load(load):
    """The loading process of `load` (("gpu", index) or ("link", a, b), nvidia-smi indices), once its first
    GEMM or copy has run."""
    if load[0] == "gpu":
        command, environment = [sys.executable, "-c", LOAD], {**os.environ, "CUDA_VISIBLE_DEVICES": str(load[1])}
    else:
        command, environment = [sys.executable, "-c", LINK_LOAD, str(load[1]), str(load[2])], dict(os.environ)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=environment)
    if process.stdout.readline().strip() != "loading":
        process.kill()
        raise RuntimeError(f"the load {describe(load)} did not start (PyTorch with CUDA missing?): "
                           f"exit {process.wait()}")
    return process


def describe(load):
    return "none" if load is None else f"GPU {load[1]}" if load[0] == "gpu" else f"link {load[1]} to {load[2]}"


def stop_load(load):
    load.send_signal(signal.SIGTERM)
    try:
        load.wait(timeout=30)
    except subprocess.TimeoutExpired:
        load.kill()
        load.wait()


def named(check):
    """{GPU index, or NODE for the figures between GPUs: [the labels of its figures and checks below]} of the
    parts a check.json judged below."""
    found = {}
    parts = [(part.get("index"), part) for part in check.get("gpus", [])]
    parts += [(NODE, check["node"])] if check.get("node") else []
    for index, part in parts:
        if part.get("verdict") == check_verdicts.BELOW:
            found[index] = ([f["label"] for f in part.get("figures", []) if f.get("status") == health.BELOW]
                            + [f"{c.get('check')} check" for c in part.get("checks", []) if not c.get("ok")])
    return found


def pairs_below(check):
    """The ordered GPU pairs (a, b) whose peer-copy figures the node part judged below (figures keyed
    p2p/gpu<a>-gpu<b>, as the p2p study's check gives them)."""
    found = set()
    for figure in (check.get("node") or {}).get("figures", []):
        key = figure.get("key") or ""
        if figure.get("status") == health.BELOW and key.startswith(PEER_KEY):
            first, _, second = key[len(PEER_KEY):].partition("-gpu")
            if first.isdigit() and second.isdigit():
                found.add((int(first), int(second)))
    return found


def as_expected(below, load, pairs=frozenset()):
    """Whether a check named what was loaded and nothing else: none without a load; the loaded GPU with
    figures it lost, not only the other-process check its load trips; for a loaded link, the pair (a, b)
    among the pairs below, every pair below sharing a's or b's links, and GPUs named only for the
    other-process check on a or b."""
    if load is None:
        return not below
    if load[0] == "gpu":
        return set(below) == {load[1]} and any(not label.endswith(" check") for label in below[load[1]])
    a, b = load[1], load[2]
    gpus_fine = all(index in (a, b) and all(label.endswith(" check") for label in labels)
                    for index, labels in below.items() if index != NODE)
    return (a, b) in pairs and all({a, b} & set(pair) for pair in pairs) and gpus_fine


def one_check(folder, args, check_args, load=None):
    process = start_load(load) if load is not None else None
    try:
        started = time.monotonic()
        status = subprocess.call([os.path.join(HERE, "gpubench"), "check", "--no-build", "--no-setup",
                                  "--build-dir", args.build_dir, "--out", folder, *check_args],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        seconds = time.monotonic() - started
    finally:
        if process is not None:
            stop_load(process)
    with open(os.path.join(folder, "check.json"), encoding="utf-8") as stream:
        check = json.load(stream)
    below, pairs = named(check), pairs_below(check)
    return {"folder": folder, "load": describe(load), "exit_status": status, "seconds": round(seconds, 1),
            "verdict": check.get("verdict"), "named": below, "pairs_below": sorted(pairs),
            "as_expected": as_expected(below, load, pairs)}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--load-gpu", type=int, default=0, help="the nvidia-smi index of the GPU to load")
    target.add_argument("--load-link", metavar="A,B", help="load the link from GPU A to GPU B (nvidia-smi indices)")
    parser.add_argument("--loaded", type=int, default=1, help="checks with the load")
    parser.add_argument("--unloaded", type=int, default=1, help="checks without it")
    parser.add_argument("--build-dir", default=os.path.join(os.path.dirname(HERE), "build"))
    args, check_args = parser.parse_known_args(argv)
    check_args = [a for a in check_args if a != "--"]
    if args.load_link:
        ends = args.load_link.split(",")
        if len(ends) != 2 or not all(end.isdigit() for end in ends) or ends[0] == ends[1]:
            parser.error(f"--load-link: two different GPU indices A,B, not {args.load_link!r}")
        load = ("link", int(ends[0]), int(ends[1]))
    else:
        load = ("gpu", args.load_gpu)
    os.makedirs(args.out, exist_ok=True)
    plan = [("unloaded", None)] * args.unloaded + [("loaded", load)] * args.loaded
    trials, counts = [], {}

    def write_summary():  # after every check: an interrupted trial keeps the checks it finished
        with open(os.path.join(args.out, "trial.json"), "w", encoding="utf-8") as stream:
            json.dump({"load": describe(load), "check_args": check_args, "trials": trials}, stream, indent=1)
    try:
        for kind, chosen in plan:
            counts[kind] = counts.get(kind, 0) + 1
            trial = one_check(os.path.join(args.out, f"{kind}-{counts[kind]}"), args, check_args, chosen)
            trials.append(trial)
            names = "; ".join(f"{'between GPUs' if index == NODE else f'GPU {index}'}: {', '.join(labels)}"
                              for index, labels in trial["named"].items())
            print(f"{kind} {counts[kind]}: exit {trial['exit_status']}, {trial['verdict']}, {trial['seconds']} s, "
                  f"named: {names or 'none'} -> {'as expected' if trial['as_expected'] else 'NOT as expected'}",
                  flush=True)
            write_summary()
    except KeyboardInterrupt:
        print(f"slow_gpu_trial: interrupted after {len(trials)} of {len(plan)} checks "
              f"({os.path.join(args.out, 'trial.json')} holds those)", file=sys.stderr)
        return 130
    except (OSError, RuntimeError, ValueError) as error:
        print(f"slow_gpu_trial: {error}", file=sys.stderr)
        return 2
    write_summary()
    return 0 if all(trial["as_expected"] for trial in trials) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
