"""What the Python benchmarks (bench-*.py, run from this folder) share: the
median of timed calls, alone or two sorts' calls taken in turn."""
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


def timed_pair(f, g, reps, warm=1):
    """(median ms of f, of g): their calls in turn, f first, after warm
    untimed calls of each; a ratio of the two then compares calls made
    under the same machine load (a small sort's time drifts by half
    between runs of one call after the other on a 2-core machine)."""
    for _ in range(warm):
        f()
        g()
    tf, tg = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t1 = time.perf_counter()
        g()
        t2 = time.perf_counter()
        tf.append((t1 - t0) * 1e3)
        tg.append((t2 - t1) * 1e3)
    return statistics.median(tf), statistics.median(tg)
