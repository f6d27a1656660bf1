"""How a run stops: the processes the driver starts end with it, even when it is killed outright
(kill -9, an out-of-memory kill)."""
import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# What a child gets when the driver dies: SIGTERM, not SIGKILL, so that a launcher (mpirun, srun) stops
# its own ranks; a study binary handles no signal, so SIGTERM ends it at once.
PARENT_DEATH_SIGNAL = signal.SIGTERM


def _prctl():
    """libc's prctl, looked up before any fork (a child between fork and exec should do little); None
    off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def dies_with_driver():
    """A preexec_fn for subprocess that has the child sent PARENT_DEATH_SIGNAL when the driver dies, however
    it dies; None where Linux's parent-death signal is not to be had (then a killed driver's child runs on
    to its end, as before)."""
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
