#!/usr/bin/env python3
"""Lexsort (issue 39) as a numpy user sees it: the indices that sort by
several keys, the last the primary, by gsort (c.lexsort: the default
Client, and local=False, the daemon) against np.lexsort and, where it
imports, cupy.lexsort from the same numpy arrays (upload, lexsort,
download); above --numpy-max keys np.lexsort is left out (single-threaded,
it takes tens of seconds) and each answer is checked by looking at it: a
permutation, the keys in order, ties in input order. Keys are random u32 (--keys of them; the primary drawn from
--distinct values so the secondary keys decide). Medians of --reps calls
after one warm-up; every answer checked against np.lexsort's. Needs a
running gsortd and PYTHONPATH naming python/.

    PYTHONPATH=python bench/bench-lexsort.py [-S SOCKET] [--sizes 1048576,16777216]
        [--keys 2] [--distinct 1000] [--reps 5] [--numpy-max N] [--device N]
"""
import argparse
import sys

import numpy as np

import gsort
from benchlib import timed


def in_order(ks, idx):
    """idx is a permutation that lists ks (the last the primary) in order,
    ties in input order."""
    n = ks[0].shape[0]
    if idx.shape != (n,) or not np.array_equal(np.sort(idx), np.arange(n)):
        return False
    ties = np.ones(n - 1, dtype=bool)
    for k in reversed(ks):
        s = k[idx]
        if np.any(ties & (s[1:] < s[:-1])):
            return False
        ties &= s[1:] == s[:-1]
    return not np.any(ties & (idx[1:] < idx[:-1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-S", "--socket")
    ap.add_argument("--sizes", default="1048576,16777216")
    ap.add_argument("--keys", type=int, default=2)
    ap.add_argument("--distinct", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--numpy-max", type=int, default=1 << 24)
    ap.add_argument("--device", type=int)
    a = ap.parse_args()
    rng = np.random.default_rng(39)
    c = gsort.Client(a.socket)
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        have_cupy = True
    except Exception:
        have_cupy = False
    print("# lexsort of %d u32 keys (the primary of %d values), from numpy arrays and "
          "back, medians of %d, ms" % (a.keys, a.distinct, a.reps))
    print("%-10s %12s %10s %10s %10s %10s %8s" %
          ("n", "np.lexsort", "gs.auto", "gs.daemon", "its sort", "cupy", "daemon/np"))
    bad = 0
    for s in a.sizes.split(","):
        n = int(s)
        ks = [rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(a.keys - 1)]
        ks.append(rng.integers(0, a.distinct, n).astype(np.uint32))
        t_np = want = None
        if n <= a.numpy_max:
            t_np, want = timed(lambda: np.lexsort(ks), a.reps)
        t_auto, got = timed(lambda: c.lexsort(ks), a.reps)
        t_d, gd = timed(lambda: c.lexsort(ks, local=False, device=a.device), a.reps)
        its = c.last.get("times_ms", {}).get("sort", float("nan"))
        for g in (got, gd):
            if not (np.array_equal(g, want) if want is not None else in_order(ks, g)):
                bad += 1
                print("WRONG: n=%d differs from np.lexsort" % n, file=sys.stderr)
        t_cp = None
        if have_cupy:
            t_cp, _ = timed(lambda: cupy.asnumpy(cupy.lexsort(cupy.asarray(np.stack(ks)))),
                            a.reps)
        f = lambda v: "%.2f" % v if v is not None else "-"
        print("%-10d %12s %10.2f %10.2f %10.2f %10s %8s" %
              (n, f(t_np), t_auto, t_d, its, f(t_cp),
               "%.2fx" % (t_d / t_np) if t_np else "-"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
