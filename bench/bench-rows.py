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

With --kernels it times only the anchors' own sort on arrays already on
the GPU (torch.sort(x, dim=-1) and cupy.sort(x, axis=-1), CUDA events,
medians), the figure to put beside gsort-bench --row-len's kernel time;
no daemon is needed then.

    PYTHONPATH=python bench/bench-rows.py [-S SOCKET] [--dtype uint32]
        [--shapes 4096x1024,65536x1024,1024x65536] [--reps 5] [--kernels]
"""
import argparse
import statistics
import sys

import numpy as np

import gsort
from benchlib import timed




def make_rows(rng, dt, shape):
    """A random ROWSxCOLS array of dtype dt (shape as "ROWSxCOLS")."""
    rows, cols = (int(v) for v in shape.split("x"))
    if dt.kind == "f":
        return rng.standard_normal((rows, cols)).astype(dt)
    return rng.integers(0, np.iinfo(dt).max, (rows, cols), dtype=dt, endpoint=True)


def device_ms(fn, sync, event, reps):
    """Median ms of fn() between two CUDA events, after one warm-up."""
    fn()
    sync()
    ts = []
    for _ in range(reps):
        e0, e1 = event(), event()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) if hasattr(e0, "elapsed_time") else
                  __import__("cupy").cuda.get_elapsed_time(e0, e1))
    return statistics.median(ts)


def kernels(a):
    dt = np.dtype(a.dtype)
    rng = np.random.default_rng(38)
    print("# anchors' sort of rows already on the GPU: %s, medians of %d, ms"
          % (dt.name, a.reps))
    print("%-12s %10s %10s" % ("shape", "torch", "cupy"))
    for sh in a.shapes.split(","):
        x = make_rows(rng, dt, sh)
        t_th = t_cp = None
        try:
            import torch
            if torch.cuda.is_available() and dt.kind != "u":
                xt = torch.from_numpy(x).cuda()
                t_th = device_ms(lambda: torch.sort(xt, dim=-1), torch.cuda.synchronize,
                                 lambda: torch.cuda.Event(enable_timing=True), a.reps)
        except ImportError:
            pass
        try:
            import cupy as cp
            xc = cp.asarray(x)
            t_cp = device_ms(lambda: cp.sort(xc, axis=-1), cp.cuda.Device().synchronize,
                             cp.cuda.Event, a.reps)
        except ImportError:
            pass
        f = lambda t: "%10.3f" % t if t is not None else "%10s" % "-"
        print("%-12s %s %s" % (sh, f(t_th), f(t_cp)))
        sys.stdout.flush()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-S", "--socket")
    ap.add_argument("--dtype", default="uint32",
                    choices=["uint32", "int32", "float32", "uint64", "int64", "float64"])
    ap.add_argument("--shapes", default="4096x1024,65536x1024,1024x65536")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kernels", action="store_true",
                    help="time torch's and cupy's sort of device-resident rows only")
    a = ap.parse_args()
    if a.kernels:
        return kernels(a)
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
        x = make_rows(rng, dt, sh)
        t_np, want = timed(lambda: np.sort(x, axis=-1), a.reps)
        t_auto, got = timed(lambda: c.sort(x), a.reps)
        where = c.last.get("where", "?")
        bad += not np.array_equal(got, want)
        t_d, got = timed(lambda: c.sort(x, local=False), a.reps)
        d_sort = c.last.get("times_ms", {}).get("sort", 0.0)
        d_how = "%s %s on %s" % (c.last.get("plan", "?"), c.last.get("algorithm", "?"),
                                  c.last.get("device", "?"))
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
        print("%-12s %10.2f %10.2f %8s %10.2f %9.2f %s %s %8.2fx  (daemon: %s)" % (
            sh, t_np, t_auto, where, t_d, d_sort, f(t_cp), f(t_th), t_auto / best, d_how))
        sys.stdout.flush()
    if bad:
        print("WRONG: %d answers differ from numpy's" % bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
