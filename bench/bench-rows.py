#!/usr/bin/env python3
"""Rows (issue 38) as a numpy user sees them: a 2-D array sorted along its
last axis, each row on its own, by gsort (one request; the default Client,
which sorts rows in the process when the call may, and local=False, the
daemon) against np.sort(a, axis=-1) and, where they import, cupy from the
same numpy array (cupy.asnumpy(cupy.sort(cupy.asarray(a), axis=-1))) and
torch (torch.sort(torch.from_numpy(a).cuda(), dim=-1) and back; signed
and float dtypes: torch sorts no unsigned ones on CUDA). "its sort" is the
daemon's own sort time of the last gs.daemon call. Medians
of --reps calls after one warm-up; every answer checked against numpy's.
Needs a running gsortd and PYTHONPATH naming python/.

    PYTHONPATH=python bench/bench-rows.py [-S SOCKET] [--dtype uint32]
        [--shapes 4096x1024,65536x1024,1024x65536] [--reps 5]
"""
import argparse
import statistics
import sys
import time

import numpy as np

import gsort


def timed(fn, reps):
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
    ap.add_argument("--shapes", default="4096x1024,65536x1024,1024x65536")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    try:
        import cupy as cp
    except Exception:
        cp = None
    try:
        import torch
        th = torch if torch.cuda.is_available() else None
    except Exception:
        th = None
    c = gsort.Client(a.socket)
    dt = np.dtype(a.dtype)
    rng = np.random.default_rng(38)
    print("# gsort rows: %s, medians of %d ms; gs.auto = default Client (where: its route), "
          "gs.daemon = local=False; cupy/torch from the same numpy array and back"
          % (dt.name, a.reps))
    print("%-12s %10s %10s %8s %10s %9s %10s %10s %9s" % ("shape", "np.sort", "gs.auto", "where",
                                                           "gs.daemon", "its sort", "cupy",
                                                           "torch", "auto/best"))
    bad = 0
    for sh in a.shapes.split(","):
        rows, cols = (int(x) for x in sh.split("x"))
        if dt.kind == "f":
            x = rng.standard_normal((rows, cols)).astype(dt)
        else:
            x = rng.integers(0, np.iinfo(dt).max, (rows, cols), dtype=dt, endpoint=True)
        t_np, want = timed(lambda: np.sort(x, axis=-1), a.reps)
        t_auto, got = timed(lambda: c.sort(x), a.reps)
        where = c.last.get("where", "?")
        bad += not np.array_equal(got, want)
        t_d, got = timed(lambda: c.sort(x, local=False), a.reps)
        d_sort = c.last.get("times_ms", {}).get("sort", 0.0)
        bad += not np.array_equal(got, want)
        t_cp = t_th = None
        if cp is not None:
            t_cp, got = timed(lambda: cp.asnumpy(cp.sort(cp.asarray(x), axis=-1)), a.reps)
            bad += not np.array_equal(got, want)
        # torch sorts no unsigned dtype but uint8 on CUDA
        if th is not None and dt.kind != "u":
            def tsort():
                return th.sort(th.from_numpy(x).cuda(), dim=-1)[0].cpu().numpy()
            t_th, got = timed(tsort, a.reps)
            bad += not np.array_equal(got, want)
        best = min(t for t in (t_np, t_cp, t_th) if t is not None)
        f = lambda t: "%10.2f" % t if t is not None else "%10s" % "-"
        print("%-12s %10.2f %10.2f %8s %10.2f %9.2f %s %s %8.2fx" % (
            sh, t_np, t_auto, where, t_d, d_sort, f(t_cp), f(t_th), t_auto / best))
        sys.stdout.flush()
    if bad:
        print("WRONG: %d answers differ from numpy's" % bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
