"""How the reference scripts time a call, shared by reference_matmul, reference_conv2d,
reference_mlp and reference_transfer: as the study binaries time their entries (Google Benchmark
manual time, REPETITIONS repetitions of at least MIN_TIME_S each), on CUDA events or on the host
clock, and the spread of the repetitions as the results record it."""
import statistics
import time

REPETITIONS = 5   # as the study's default --repetitions and --min-time
MIN_TIME_S = 0.05


def spread(samples):
    ordered = sorted(samples)
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1],
            "stddev": statistics.stdev(ordered) if len(ordered) > 1 else 0.0, "samples": samples}


def repeated_samples(timed_call):
    """Seconds per call, measured as the study measures its entries (Google Benchmark manual
    time): a repetition runs timed calls for at least MIN_TIME_S and reports their mean;
    REPETITIONS of them after a warm-up of the same length. Timing bursts of a few calls instead
    would catch the GPU before its power limit pulls the clock down, and compare a burst with a
    sustained rate."""
    def repetition():
        times = [timed_call()]
        while sum(times) < MIN_TIME_S:
            times.append(timed_call())
        return statistics.fmean(times)

    repetition()  # warm-up: kernels chosen and loaded, clocks settled under load
    return [repetition() for _ in range(REPETITIONS)]


def cuda_event_samples(torch, operation):
    """repeated_samples of operation() between two CUDA events, waited for: the GPU's time, as
    the study's GPU entries time it."""
    def timed_call():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        operation()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0
    return repeated_samples(timed_call)


def host_clock_samples(torch, operation):
    """repeated_samples of operation() on the host clock, from the call until the device is
    synchronized: what the caller waits, as the transfer study times its copies."""
    def timed_call():
        start = time.perf_counter()
        operation()
        torch.cuda.synchronize()
        return time.perf_counter() - start
    return repeated_samples(timed_call)
