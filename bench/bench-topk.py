#!/usr/bin/env python3
"""Top-k (issue 38) as a numpy user sees it: the k largest of an array, or
of each row of a 2-D array, with their indices, by gsort (c.topk: the
default Client, and local=False, the daemon) against numpy
(np.argpartition, then the k ordered: what a numpy user writes; and
np.partition alone, the keys unordered, the issue's anchor) and, where
they import, torch.topk and cupy from the same numpy array (upload, top-k,
download; cupy has no top-k: cupy.argpartition, which sorts fully, then
the k ordered). Medians of --reps calls after one warm-up; gsort's keys
checked against numpy's. Needs a running gsortd and PYTHONPATH naming
python/.

With --device N the daemon's answer from its device N (its radix select,
"select") is timed too. With --kernels it times torch.topk on arrays
already on the GPU (CUDA events, medians); no daemon is needed then.

    PYTHONPATH=python bench/bench-topk.py [-S SOCKET] [--dtype uint32]
        [--shapes 16777216,4096x32768] [-k 1000] [--reps 5] [--device N] [--kernels]
"""
import argparse
import statistics
import sys

import numpy as np

import gsort
from benchlib import timed




def make(rng, dt, shape):
    """A random array of dtype dt: shape "N" (1-D) or "ROWSxCOLS"."""
    dims = tuple(int(v) for v in shape.split("x"))
    if dt.kind == "f":
        return rng.standard_normal(dims).astype(dt)
    return rng.integers(0, np.iinfo(dt).max, dims, dtype=dt, endpoint=True)


def np_topk(x, k):
    """The k largest along the last axis, ordered, with indices (numpy)."""
    n = x.shape[-1]
    part = np.argpartition(x, n - k, axis=-1)[..., n - k:]
    vals = np.take_along_axis(x, part, axis=-1)
    order = np.argsort(vals, axis=-1, kind="stable")[..., ::-1]
    return np.take_along_axis(vals, order, axis=-1), np.take_along_axis(part, order, axis=-1)


def kernels(a):
    dt = np.dtype(a.dtype)
    rng = np.random.default_rng(38)
    import torch
    print("# torch.topk of arrays already on the GPU: %s, k=%d, medians of %d, ms"
          % (dt.name, a.k, a.reps))
    for sh in a.shapes.split(","):
        x = make(rng, dt if dt.kind != "u" else np.dtype("int%d" % (dt.itemsize * 8)), sh)
        xt = torch.from_numpy(x).cuda()
        torch.topk(xt, a.k, dim=-1)
        torch.cuda.synchronize()
        ts = []
        for _ in range(a.reps):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.topk(xt, a.k, dim=-1)
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
        print("%-14s torch.topk %.3f" % (sh, statistics.median(ts)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-S", "--socket")
    ap.add_argument("--dtype", default="uint32")
    ap.add_argument("--shapes", default="16777216,4096x32768")
    ap.add_argument("-k", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kernels", action="store_true")
    ap.add_argument("--device", type=int,
                    help="also time the request on this device of the daemon (its select)")
    a = ap.parse_args()
    if a.kernels:
        kernels(a)
        return 0
    dt = np.dtype(a.dtype)
    rng = np.random.default_rng(38)
    c = gsort.Client(a.socket)
    try:
        import torch
        have_torch = torch.cuda.is_available()
    except ImportError:
        have_torch = False
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        have_cupy = True
    except Exception:
        have_cupy = False
    print("# top-%d largest with indices, %s, from a numpy array and back, medians of %d, ms"
          % (a.k, dt.name, a.reps))
    print("%-14s %10s %10s %10s %10s %10s %10s %8s %10s" %
          ("shape", "np.part", "np.topk", "gs.auto", "gs.daemon", "its sort", "torch", "cupy",
           "daemon/np.part"))
    bad = 0
    for sh in a.shapes.split(","):
        x = make(rng, dt, sh)
        k = min(a.k, x.shape[-1])
        n = x.shape[-1]
        t_part, _ = timed(lambda: np.partition(x, n - k, axis=-1)[..., n - k:], a.reps)
        t_np, (want, _) = timed(lambda: np_topk(x, k), a.reps)
        t_auto, got = timed(lambda: c.topk(x, k), a.reps)
        where = c.last.get("where", "?")
        t_d, gd = timed(lambda: c.topk(x, k, local=False), a.reps)
        its = c.last.get("times_ms", {}).get("sort", float("nan"))
        d_how = "%s %s on %s" % (c.last.get("plan", "?"), c.last.get("algorithm", "?"),
                                  c.last.get("device", "?"))
        dev = ""
        outs = [got, gd]
        if a.device is not None:
            t_v, gv = timed(lambda: c.topk(x, k, local=False, device=a.device), a.reps)
            outs.append(gv)
            dev = "  device %d: %.2f ms, its sort %.2f (%s)" % (
                a.device, t_v, c.last.get("times_ms", {}).get("sort", float("nan")),
                c.last.get("algorithm", "?"))
        for g in outs:
            if not np.array_equal(g[0], want):
                bad += 1
                print("WRONG: %s keys differ from numpy's" % sh, file=sys.stderr)
        t_th = t_cp = None
        if have_torch and dt.kind != "u":
            def th():
                v, i = torch.topk(torch.from_numpy(x).cuda(), k, dim=-1)
                return v.cpu().numpy(), i.cpu().numpy()
            t_th, _ = timed(th, a.reps)
        if have_cupy:
            def cp():
                xc = cupy.asarray(x)
                part = cupy.argpartition(xc, n - k, axis=-1)[..., n - k:]
                vals = cupy.take_along_axis(xc, part, axis=-1)
                order = cupy.argsort(vals, axis=-1)[..., ::-1]
                return (cupy.asnumpy(cupy.take_along_axis(vals, order, axis=-1)),
                        cupy.asnumpy(cupy.take_along_axis(part, order, axis=-1)))
            t_cp, _ = timed(cp, a.reps)
        f = lambda v: "%10.2f" % v if v is not None else "%10s" % "-"
        print("%-14s %10.2f %10.2f %10.2f %10.2f %10.2f %s %s %8.2fx  (auto: %s; daemon: %s)%s" %
              (sh, t_part, t_np, t_auto, t_d, its, f(t_th), f(t_cp), t_d / t_part, where, d_how,
               dev))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
