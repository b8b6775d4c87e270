#!/usr/bin/env python3
"""Segments (issue 38: CUB's segmented sort) as a numpy user sees them: a
1-D array cut by offsets into S segments of random lengths (0 to twice
the mean), each sorted on its own, by gsort (sort_segments: the default
Client, which routes as it measures, and local=False, the daemon) against
what numpy offers: a loop of np.sort over the segments, and one sort of
the whole array by (segment, key) as np.lexsort((a, segment_ids)); for
uint32 keys also np.sort of the 64-bit words segment << 32 | key, and that
same sort by cupy from the same numpy array where cupy imports. "its
sort" is the daemon's own sort time of the last gs.daemon call; with
--device D also the segments sorted on device D named (its bitonic sort,
every segment in one launch, where the longest fits). Medians
of --reps calls after one warm-up; every answer checked against the loop's.
Needs a running gsortd and PYTHONPATH naming python/.

    PYTHONPATH=python:bench bench/bench-segments.py [-S SOCKET] [--dtype uint32]
        [--shapes 65536x64,4096x1024,256x16384] [--reps 5] [--device D]
"""
import argparse
import sys

import numpy as np

import gsort
from benchlib import timed


def make_segments(rng, dt, shape):
    """(keys, offsets as int64, segment ids) for "SxMEAN"."""
    S, mean = (int(v) for v in shape.split("x"))
    lens = rng.integers(0, 2 * mean + 1, S)
    off = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    n = int(off[-1])
    if dt.kind == "f":
        a = rng.standard_normal(n).astype(dt)
    else:
        a = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, n, dtype=dt, endpoint=True)
    return a, off, np.repeat(np.arange(S, dtype=np.uint64), lens)


def loop_sort(a, off):
    out = np.empty_like(a)
    for s in range(off.shape[0] - 1):
        lo, hi = off[s], off[s + 1]
        out[lo:hi] = np.sort(a[lo:hi])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-S", "--socket")
    ap.add_argument("--dtype", default="uint32",
                    choices=["uint32", "int32", "float32", "uint64", "int64", "float64"])
    ap.add_argument("--shapes", default="65536x64,4096x1024,256x16384")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--device", type=int, help="also time the segments on this device named")
    a = ap.parse_args()
    try:
        import cupy as cp
    except Exception:
        cp = None
    c = gsort.Client(a.socket)
    dt = np.dtype(a.dtype)
    rng = np.random.default_rng(38)
    print("# gsort segments: %s, SxMEAN = S segments of 0..2*MEAN keys, medians of %d ms; "
          "gs.auto = default Client (where: its route), gs.daemon = local=False"
          % (dt.name, a.reps))
    print("%-12s %9s %10s %10s %10s %10s %10s %8s %10s %9s %9s" % (
        "shape", "n", "np loop", "lexsort", "np (s,k)", "cupy (s,k)", "gs.auto", "where",
        "gs.daemon", "its sort", "auto/best"))
    bad = 0
    for sh in a.shapes.split(","):
        x, off, seg = make_segments(rng, dt, sh)
        t_loop, want = timed(lambda: loop_sort(x, off), a.reps)
        t_lex, got = timed(lambda: x[np.lexsort((x, seg))], a.reps)
        bad += not np.array_equal(got, want)
        t_comp = t_cp = None
        if dt == np.uint32:
            def comp():
                return (np.sort((seg << np.uint64(32)) | x.astype(np.uint64))).astype(np.uint32)
            t_comp, got = timed(comp, a.reps)
            bad += not np.array_equal(got, want)
            if cp is not None:
                def cpcomp():
                    w = (cp.asarray(seg) << cp.uint64(32)) | cp.asarray(x).astype(cp.uint64)
                    return cp.asnumpy(cp.sort(w).astype(cp.uint32))
                t_cp, got = timed(cpcomp, a.reps)
                bad += not np.array_equal(got, want)
        t_auto, got = timed(lambda: c.sort_segments(x, off), a.reps)
        where = c.last.get("where", "?")
        bad += not np.array_equal(got, want)
        t_d, got = timed(lambda: c.sort_segments(x, off, local=False), a.reps)
        d_sort = c.last.get("times_ms", {}).get("sort", 0.0)
        bad += not np.array_equal(got, want)
        dev = ""
        if a.device is not None:
            t_dev, got = timed(lambda: c.sort_segments(x, off, device=a.device), a.reps)
            bad += not np.array_equal(got, want)
            dev = "  device %d: %.2f ms (%s, its sort %.2f)" % (
                a.device, t_dev, c.last.get("algorithm", "?"),
                c.last.get("times_ms", {}).get("sort", 0.0))
        best = min(t for t in (t_loop, t_lex, t_comp, t_cp) if t is not None)
        f = lambda t: "%10.2f" % t if t is not None else "%10s" % "-"
        print("%-12s %9d %s %s %s %s %s %8s %s %9.2f %8.2fx%s" % (
            sh, x.shape[0], f(t_loop), f(t_lex), f(t_comp), f(t_cp), f(t_auto), where,
            f(t_d), d_sort, t_auto / best, dev))
        sys.stdout.flush()
    if bad:
        print("WRONG: %d answers differ from the loop's" % bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
