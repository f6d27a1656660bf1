"""How a run stops: the processes the driver starts end with it, even when it is killed outright
(kill -9, an out-of-memory kill), and a stop signal that comes during the run's final write waits for
that write to finish, so that results.json, the summary and the plots agree."""
import ctypes
import os
import signal
import subprocess
import sys
import threading

# The signals that stop a run as Ctrl-C does (cli.main raises SIGTERM and SIGHUP as Ctrl-C).
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# What a child gets when the driver dies: SIGTERM, not SIGKILL, so that a launcher (mpirun, srun) stops
# its own ranks; a study binary handles no signal, so SIGTERM ends it at once.
PARENT_DEATH_SIGNAL = signal.SIGTERM


def _prctl():
    """libc's prctl, looked up before any fork (a child between fork and exec should do little); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def dies_with_driver():
    """A preexec_fn for subprocess that has the child sent PARENT_DEATH_SIGNAL when the driver dies, however it
    dies; None where Linux's parent-death signal is not to be had."""
    prctl = _PRCTL
    if prctl is None:
        return None
    driver = os.getpid()

    def in_child():
        # Linux sends it when the *thread* that forked the child ends, not the process: the driver starts
        # no threads and forks from its main thread, which lives as long as the driver.
        prctl(_PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL))
        if os.getppid() != driver:  # the driver died between the fork and the prctl: no signal would come
            os._exit(128 + int(PARENT_DEATH_SIGNAL))  # as if it had come (before exec: nothing to clean up)

    return in_child


def popen(command, **kwargs):
    """subprocess.Popen of a child that dies with the driver (dies_with_driver). A stop signal that comes
    while it forks is noted and acted on once the child exists: with a preexec_fn the interpreter runs its
    fork hooks (logging's lock release), and a KeyboardInterrupt raised in one is printed as "Exception
    ignored" and lost, so the run would go on. The child is then sent the same signal. Only the main thread
    runs signal handlers, so only there is anything to hold."""
    if threading.current_thread() is not threading.main_thread():
        return subprocess.Popen(command, preexec_fn=dies_with_driver(), **kwargs)
    noted = []
    previous = {getattr(signal, name): signal.signal(getattr(signal, name), lambda signum, _: noted.append(signum))
                for name in STOP_SIGNALS}
    try:
        process = subprocess.Popen(command, preexec_fn=dies_with_driver(), **kwargs)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    if noted:
        process.send_signal(noted[0])
        signal.raise_signal(noted[0])  # the driver's own handler, as if it had come now
    return process


def run(command, timeout=None, capture_output=False, **kwargs):
    """subprocess.run through popen(): the child killed on a timeout (TimeoutExpired) or a stop."""
    if capture_output:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with popen(command, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException:
            process.kill()
            process.wait()
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


class StoppedAfterFinalWrite(KeyboardInterrupt):
    """A stop signal came during the run's final write, which finished first: the driver stops with the exit
    status of the run's recorded status."""

    def __init__(self, signal_name, exit_status):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.exit_status = exit_status


class DeferredStop:
    """A block that STOP_SIGNALS do not cut short: the first is noted (`received`) and said in one line, the
    handlers restored at its end; outside the main thread, which alone sets handlers, it defers nothing."""

    def __init__(self, what):
        self.what = what  # what the block writes, for the line that says the stop waits for it
        self.received = None
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for name in STOP_SIGNALS:
                signum = getattr(signal, name)
                self._previous[signum] = signal.signal(signum, self._note)
        return self

    def __exit__(self, *exception):
        for signum, handler in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        return False

    def _note(self, signum, frame):
        if self.received is not None:
            return
        self.received = signal.Signals(signum).name
        line = f"{self.received}: stopping once {self.what} written\n"
        try:
            # Straight to the file descriptor: print() from a handler that interrupted a print() of the
            # block's raises RuntimeError (a reentrant call of the buffered stream).
            os.write(sys.stdout.fileno(), line.encode())
        except (OSError, ValueError, AttributeError):
            pass  # the terminal is gone (SIGHUP), or stdout is no file: the files matter, not this line
