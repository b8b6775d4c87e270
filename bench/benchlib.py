"""What the Python benchmarks (bench-*.py, run from this folder) share: the
median of timed calls."""
import statistics
import time


def timed(fn, reps, warm=1):
    """(median ms of reps calls, the last result), after warm untimed calls
    (the first request of a size may build a program or grow the staging
    memfd; a default Client times both routes on its first calls of a
    size)."""
    for _ in range(warm):
        fn()
    ts, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), out
