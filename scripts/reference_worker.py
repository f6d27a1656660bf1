"""Runs reference scripts one after another in one interpreter, so that PyTorch is imported and CUDA started
once per run rather than once per script (seconds each: most of the references' time in the default suite).

The driver (gpubench_driver/stages/reference.py) writes one JSON request per line on stdin,
{"script": path, "args": [...]}, and reads one JSON reply per line on stdout,
{"returncode": int, "stdout": text, "stderr": text}: what the script would have exited with and printed had
it run as `python3 script args...`. The worker ends at the end of its input (the driver closed it or died).
After each script it returns PyTorch's cached GPU memory, so that an idle worker holds no more than its
CUDA context while the studies measure."""
import contextlib
import gc
import io
import json
import runpy
import sys
import traceback


def run_script(script, args):
    """(exit status, stdout, stderr) of the script run as __main__ with sys.argv = [script, *args]."""
    out, err = io.StringIO(), io.StringIO()
    saved_argv = sys.argv
    sys.argv = [script, *args]
    status = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as stop:
                code = stop.code
                status = code if isinstance(code, int) else (0 if code is None else 1)
                if code is not None and not isinstance(code, int):
                    print(code, file=sys.stderr)
            except Exception:  # the script's own failure: reported as its exit status and traceback
                traceback.print_exc()
                status = 1
    finally:
        sys.argv = saved_argv
        release_gpu_memory()
    return status, out.getvalue(), err.getvalue()


def release_gpu_memory():
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def main():
    for line in sys.stdin:
        try:
            request = json.loads(line)
            script, args = request["script"], [str(arg) for arg in request["args"]]
        except (ValueError, KeyError, TypeError) as error:
            reply = {"returncode": 2, "stdout": "", "stderr": f"reference_worker: bad request: {error}"}
        else:
            status, out, err = run_script(script, args)
            reply = {"returncode": status, "stdout": out, "stderr": err}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
