#!/usr/bin/env python3
"""What the Python client costs against what a numpy user has otherwise, on
the same machine: for each size, the median time of gsort's sort and
argsort of random keys (through the staging memfd, inline, and in place on
a gsort.empty() array: zero copy) against numpy's np.sort and
np.argsort(kind="stable") and, where cupy imports, cupy from the same numpy
array (cupy.asnumpy(cupy.sort(cupy.asarray(a))): upload, CUB, download),
every answer checked against numpy's. gs.auto is a default Client, which
sorts small arrays in the process when it measures that faster (issue 36;
"where" says which route it settled on, and locally whether numpy's sort
or libgsort's host sort in the process, found through $GSORT_LIBRARY or
as libgsort.so.0; "auto(np)" is the same Client with numpy as its only
local sort, local_sort="numpy"; "auto/np" compares np.sort and gs.auto
timed again with their calls in turn, under the same load); the other gs columns always ask
the daemon (local=False). Needs a running gsortd (-S SOCKET or
the default socket) and PYTHONPATH naming the python/ directory.
--copy-bytes-per-thread sets how the client splits its copies over threads
(gsort._COPY_BYTES_PER_THREAD).

    PYTHONPATH=python bench/bench-python.py [-S SOCKET] [--dtype uint32]
        [--min-log2 10] [--max-log2 24] [--reps 5] [--algorithm radix] [--device 1]
        [--copy-bytes-per-thread BYTES] [--detail] [--warm 1]

--detail adds, under each size, where gs.sort's and gs.shared's time went (medians over their timed calls, ms): the client's copy in, the
round trip (request sent to reply read), the daemon's total and its
upload, sort and download, and the copy out.
"""
import argparse
import statistics
import sys
import time

import numpy as np

import gsort
from benchlib import timed, timed_pair




def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-S", "--socket")
    ap.add_argument("--dtype", default="uint32",
                    choices=["uint32", "int32", "float32", "uint64", "int64", "float64",
                             "uint8", "int8", "uint16", "int16", "float16"])
    ap.add_argument("--min-log2", type=int, default=10)
    ap.add_argument("--max-log2", type=int, default=24)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--algorithm", help="force the daemon's algorithm (default: its plan)")
    ap.add_argument("--device", type=int, help="force the daemon's device")
    ap.add_argument("--argsort-max-log2", type=int, default=30,
                    help="skip the argsorts above this size (numpy's stable argsort "
                    "takes seconds there)")
    ap.add_argument("--copy-bytes-per-thread", type=int,
                    help="the client's copies take one thread per this many bytes")
    ap.add_argument("--warm", type=int, default=1,
                    help="untimed calls before each gs column's timed ones (gs.auto: at "
                    "least 3, for its router)")
    ap.add_argument("--detail", action="store_true",
                    help="print where each memfd route's time went")
    a = ap.parse_args()
    if a.copy_bytes_per_thread:
        gsort._COPY_BYTES_PER_THREAD = a.copy_bytes_per_thread
    kw = {}
    if a.algorithm:
        kw["algorithm"] = a.algorithm
    if a.device is not None:
        kw["device"] = a.device
    try:
        import cupy as cp
    except Exception:
        cp = None
    dt = np.dtype(a.dtype)
    shm = gsort.Client(socket=a.socket, local=False)
    inl = gsort.Client(socket=a.socket, memfd=False, local=False)
    auto = gsort.Client(socket=a.socket, local=True)
    # the same with numpy as its only local sort (the client before libgsort's)
    auto_np = gsort.Client(socket=a.socket, local=True, local_sort="numpy")
    rng = np.random.default_rng(1)
    print("# bench-python: %s keys via %s, median of %d, ms (numpy %s; copies: a thread per "
          "%d bytes, %d CPUs)"
          % (dt, gsort.default_socket() if a.socket is None else a.socket, a.reps,
             np.__version__, gsort._COPY_BYTES_PER_THREAD, gsort._cpus()))
    print("%-6s %10s %10s %10s %10s %10s %10s %10s %10s %10s %8s %11s %10s  %s" % (
        "n", "np.sort", "cupy", "gs.sort", "gs.shared", "gs.inline", "np.argsort",
        "gs.argsort", "vs cupy", "gs.auto", "auto/np", "where", "auto(np)", "device/algorithm/plan"))
    print("# gs.auto's local sort: numpy's or libgsort's (%s)"
          % ("found: " + str(gsort._native.library_path()) if gsort._native.available()
             else "not used: " + gsort._native.why_not()))
    for lg in range(a.min_log2, a.max_log2 + 1):
        n = 1 << lg
        if dt.kind == "f":
            x = rng.standard_normal(n).astype(dt)
        else:
            info = np.iinfo(dt)
            x = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        t_np, ref = timed(lambda: np.sort(x), a.reps)
        t_cp = float("nan")
        if cp is not None:
            def cupy_sort():
                r = cp.asnumpy(cp.sort(cp.asarray(x)))
                cp.cuda.Stream.null.synchronize()
                return r
            t_cp, got_cp = timed(cupy_sort, a.reps)
            if not np.array_equal(got_cp, ref):
                print("bench-python: 2^%d: cupy gave another answer" % lg, file=sys.stderr)
                return 1
        lasts = {"gs.sort": [], "gs.shared": []}

        def noted(c, name, fn):
            def call():
                r = fn()
                lasts[name].append(c.last)
                return r
            return call
        t_gs, got = timed(noted(shm, "gs.sort", lambda: shm.sort(x, **kw)), a.reps,
                          warm=a.warm)
        last = shm.last
        # In place on an array in shared memory, refilled (untimed) each time.
        xs = gsort.empty(n, dt)
        ts = []
        for r in range(a.reps + a.warm):
            xs[...] = x
            t0 = time.perf_counter()
            shm.sort(xs, inplace=True, **kw)
            if r >= a.warm:
                ts.append((time.perf_counter() - t0) * 1e3)
                lasts["gs.shared"].append(shm.last)
        t_sh = statistics.median(ts)
        shared_ok = np.array_equal(xs, ref) and shm.last.get("zero_copy")
        del xs
        t_in, got_in = timed(lambda: inl.sort(x, **kw), a.reps, warm=a.warm)
        # enough warm calls for the Router to time both routes (numpy only
        # up to its try limit: the daemon three times, the local sort twice)
        # and, locally, for its Pick to time numpy's and libgsort's sorts
        # twice each
        t_au, got_au = timed(lambda: auto.sort(x, **kw), a.reps, warm=max(10, a.warm))
        # auto/np from np.sort's and gs.auto's calls in turn (the same load)
        t_npp, t_aup = timed_pair(lambda: np.sort(x), lambda: auto.sort(x, **kw), a.reps)
        t_an, got_an = timed(lambda: auto_np.sort(x, **kw), a.reps, warm=max(10, a.warm))
        where = auto.last.get("where")
        if where == "local":
            where = "local:" + auto.last.get("algorithm", "?")
        t_npa = t_gsa = float("nan")
        refa = gota = None
        if lg <= a.argsort_max_log2:
            t_npa, refa = timed(lambda: np.argsort(x, kind="stable"), a.reps)
            t_gsa, gota = timed(lambda: shm.argsort(x, stable=True, **kw), a.reps)
        if not (np.array_equal(got, ref) and np.array_equal(got_in, ref) and

                np.array_equal(got_au, ref) and np.array_equal(got_an, ref) and
                (refa is None or np.array_equal(gota, refa)) and shared_ok):
            print("bench-python: 2^%d: WRONG ANSWER" % lg, file=sys.stderr)
            return 1
        if not last.get("zero_copy") or inl.last.get("zero_copy"):
            print("bench-python: 2^%d: the transports were not the ones asked for" % lg,
                  file=sys.stderr)
            return 1
        dev = last.get("device") or {}
        on = "host" if dev.get("index", -1) == -1 and not dev.get("name") else dev.get("name", "?")
        print("2^%-4d %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %9.2fx %10.3f "
              "%7.2fx %11s %10.3f  %s/%s/%s" % (
                  lg, t_np, t_cp, t_gs, t_sh, t_in, t_npa, t_gsa, t_gs / t_cp, t_au, t_aup / t_npp,
                  where, t_an, on, last.get("algorithm"), last.get("plan")))
        if a.detail:
            for name, ls in lasts.items():
                ls = ls[-a.reps:]       # the timed calls only
                def med(get):
                    v = [get(h) for h in ls]
                    v = [x for x in v if x is not None]
                    return statistics.median(v) if v else float("nan")
                ct = lambda k: (lambda h: (h.get("client_times_ms") or {}).get(k))
                dt_ = lambda k: (lambda h: (h.get("times_ms") or {}).get(k))
                print("  %-9s copy_in %.3f  round_trip %.3f (daemon %.3f: upload %.3f sort "
                      "%.3f download %.3f)  copy_out %.3f  call %.3f" % (
                          name, med(ct("copy_in")), med(ct("round_trip")), med(dt_("total")),
                          med(dt_("upload")), med(dt_("sort")), med(dt_("download")),
                          med(ct("copy_out")), med(lambda h: h.get("client_ms"))))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
