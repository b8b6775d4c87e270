#!/usr/bin/env python3
"""What the Python client costs against numpy on the same machine: for each
size, the median time of gsort's sort and argsort of random keys (through
the memfd, and inline) against numpy's np.sort and np.argsort(kind="stable"),
every answer checked against numpy's. Needs a running gsortd (-S SOCKET or
the default socket) and PYTHONPATH naming the python/ directory.

    PYTHONPATH=python bench/bench-python.py [-S SOCKET] [--dtype uint32]
        [--min-log2 10] [--max-log2 24] [--reps 5]
"""
import argparse
import statistics
import sys
import time

import numpy as np

import gsort


def timed(fn, reps):
    """Median ms of reps calls after one untimed warm-up call (the first
    request of a size may build a program or grow the staging memfd)."""
    fn()
    ts, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-S", "--socket")
    ap.add_argument("--dtype", default="uint32",
                    choices=["uint32", "int32", "float32", "uint64", "int64", "float64"])
    ap.add_argument("--min-log2", type=int, default=10)
    ap.add_argument("--max-log2", type=int, default=24)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    dt = np.dtype(a.dtype)
    shm = gsort.Client(socket=a.socket)
    inl = gsort.Client(socket=a.socket, memfd=False)
    rng = np.random.default_rng(1)
    print("# bench-python: %s keys via %s, median of %d, ms (numpy %s)"
          % (dt, gsort.default_socket() if a.socket is None else a.socket, a.reps,
             np.__version__))
    print("%-6s %10s %10s %10s %10s %10s %10s  %s" % (
        "n", "np.sort", "gs.sort", "gs.inline", "np.argsort", "gs.argsort", "speedup",
        "device/algorithm/plan"))
    for lg in range(a.min_log2, a.max_log2 + 1):
        n = 1 << lg
        if dt.kind == "f":
            x = rng.standard_normal(n).astype(dt)
        else:
            info = np.iinfo(dt)
            x = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        t_np, ref = timed(lambda: np.sort(x), a.reps)
        t_gs, got = timed(lambda: shm.sort(x), a.reps)
        last = shm.last
        t_in, got_in = timed(lambda: inl.sort(x), a.reps)
        t_npa, refa = timed(lambda: np.argsort(x, kind="stable"), a.reps)
        t_gsa, gota = timed(lambda: shm.argsort(x, stable=True), a.reps)
        if not (np.array_equal(got, ref) and np.array_equal(got_in, ref) and
                np.array_equal(gota, refa)):
            print("bench-python: 2^%d: WRONG ANSWER" % lg, file=sys.stderr)
            return 1
        if not last.get("zero_copy") or inl.last.get("zero_copy"):
            print("bench-python: 2^%d: the transports were not the ones asked for" % lg,
                  file=sys.stderr)
            return 1
        dev = last.get("device") or {}
        where = "host" if dev.get("index", -1) == -1 and not dev.get("name") else dev.get("name", "?")
        print("2^%-4d %10.3f %10.3f %10.3f %10.3f %10.3f %9.2fx  %s/%s/%s" % (
            lg, t_np, t_gs, t_in, t_npa, t_gsa, t_np / t_gs, where, last.get("algorithm"),
            last.get("plan")))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
