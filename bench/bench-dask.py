#!/usr/bin/env python3
"""gsort.dask against what a Dask user has otherwise, on one
distributed.LocalCluster in the same run: (1) ddf.sort_values("k",
sort_function=gsort.dask.sort_values) of ROWS rows of (int64 key, float64
value) against Dask's default ddf.sort_values("k") (pandas' sort in each
partition); (2) gsort.dask.sort of a 2^LOG2 uint32 dask array against
np.sort of the same array in this one process and against Dask's own way
to sort it, dd.from_dask_array(x).sort_values("k"). The inputs are made
and persisted on the workers before the clock starts; each sort is
persisted on the cluster and waited for (nothing gathered); every answer
is checked (each partition sorted, partitions in order, same length and
key sum). Median of --reps runs. Needs a gsortd on this node (-S SOCKET or
GSORTD_SOCKET: the workers inherit it) and PYTHONPATH naming python/.

    PYTHONPATH=python tools/with-gsortd build python3 bench/bench-dask.py \\
        [--workers 2] [--threads 1] [--rows 20000000] [--log2 26] [--reps 3]
"""
import argparse
import logging
import os
import statistics
import sys
import time

import numpy as np


def released(client, keys0):
    """Waits until the cluster holds no more keys than keys0 (the inputs):
    a sort's keys are the same from run to run (deterministic tokens), so
    a run must not start while the last one's results are still there to
    be reused."""
    for _ in range(200):
        if len(client.who_has()) <= keys0:
            return
        time.sleep(0.05)


def timed(fn, reps, client=None):
    """Median and all seconds of reps runs of fn (which returns what it
    made, kept until the next run so memory stays as in use; with client,
    released before the next run starts)."""
    ts, out = [], None
    keys0 = len(client.who_has()) if client is not None else 0
    for _ in range(reps):
        out = None
        if client is not None:
            released(client, keys0)
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts, out


def frame_summary(p):
    """(rows, key sum, sorted, first key, last key) of one partition."""
    import pandas as pd
    k = p["k"].to_numpy()
    s = bool(np.all(k[1:] >= k[:-1])) if k.size else True
    return pd.DataFrame({"n": [k.size], "sum": [int(k.sum(dtype=np.int64)) if k.size else 0],
                         "sorted": [s], "lo": [k[0] if k.size else 0],
                         "hi": [k[-1] if k.size else 0]})


def check_sorted(summaries, n, ksum):
    """The partitions' summaries: every one sorted, in order, n rows in
    all, keys summing to ksum (mod 2^64)."""
    s = summaries[summaries["n"] > 0]
    ok = (bool(s["sorted"].all()) and int(s["n"].sum()) == n and
          bool(np.all(s["lo"].to_numpy()[1:] >= s["hi"].to_numpy()[:-1])) and
          (int(s["sum"].astype(np.int64).sum()) - ksum) % (1 << 64) == 0)
    return ok


def as_is(df, **kw):
    """A sort_function that leaves the partition as it is: Dask's
    sort_values with it costs what Dask's own steps cost (quantiles,
    partition column, shuffle), the floor under any partition sort."""
    return df


def bench_frame(a, client, dd, dask, gd):
    import pandas as pd
    rows, parts = a.rows, a.partitions

    def make(i):
        rng = np.random.default_rng(i)
        m = rows // parts + (1 if i < rows % parts else 0)
        return pd.DataFrame({"k": rng.integers(-(1 << 62), 1 << 62, m, dtype=np.int64),
                             "v": rng.standard_normal(m)})
    ddf = dd.from_delayed([dask.delayed(make)(i) for i in range(parts)],
                          meta=make(0).iloc[:0])
    ddf = ddf.persist()
    dask.distributed.wait(ddf)
    ksum = int(ddf["k"].map_partitions(lambda s: pd.Series([int(s.sum())])).compute().sum())
    res = {}
    ways = (("dask default", lambda: ddf.sort_values("k")),
            ("sort_function", lambda: ddf.sort_values("k", sort_function=gd.sort_values)),
            ("sort_values_ddf", lambda: gd.sort_values_ddf(ddf, "k")))
    if a.hook_floor:
        ways += (("hook floor", lambda: ddf.sort_values("k", sort_function=as_is)),)
    for name, sort in ways:
        def run():
            r = sort().persist()
            dask.distributed.wait(r)
            return r
        med, ts, r = timed(run, a.reps, client)
        # the floor's partitions are in order but not sorted within
        ok = name == "hook floor" or check_sorted(r.map_partitions(frame_summary).compute(),
                                                  rows, ksum)
        del r
        res[name] = med
        print("frame  %-15s rows %d  partitions %d  median %.2f s  (runs %s)  %s" %
              (name, rows, parts, med, " ".join("%.2f" % t for t in ts),
               "not sorted (the floor)" if name == "hook floor" else
               "right" if ok else "WRONG"), flush=True)
        if not ok:
            sys.exit(1)
    for name, _ in ways[1:]:
        print("frame  dask default / %s = %.2fx" % (name, res["dask default"] / res[name]),
              flush=True)
    del ddf


def bench_array(a, client, da, dd, dask, gd):
    n = 1 << a.log2
    x = da.random.RandomState(1).randint(0, 1 << 32, size=n, chunks=n // a.partitions,
                                         dtype=np.uint32).persist()
    dask.distributed.wait(x)
    host = x.compute()
    ref = np.sort(host)

    def npsort():
        return np.sort(host)
    t_np, ts_np, _ = timed(npsort, a.reps)
    print("array  np.sort (one process)  2^%d u32  median %.2f s  (runs %s)" %
          (a.log2, t_np, " ".join("%.2f" % t for t in ts_np)), flush=True)

    def gsort_run():
        r = gd.sort(x).persist()
        dask.distributed.wait(r)
        return r
    t_gs, ts_gs, r = timed(gsort_run, a.reps, client)
    ok = np.array_equal(r.compute(), ref) and not any(np.isnan(c) for c in r.chunks[0])
    del r
    print("array  gsort.dask.sort        2^%d u32  median %.2f s  (runs %s)  %s" %
          (a.log2, t_gs, " ".join("%.2f" % t for t in ts_gs), "right" if ok else "WRONG"),
          flush=True)
    if not ok:
        sys.exit(1)
    print("array  np.sort / gsort.dask.sort = %.2fx" % (t_np / t_gs), flush=True)
    if a.no_dask_array:
        return
    s = dd.from_dask_array(x, columns="k").to_frame()

    def dask_run():
        r = s.sort_values("k").persist()
        dask.distributed.wait(r)
        return r
    t_dd, ts_dd, r = timed(dask_run, a.reps, client)
    ok = np.array_equal(r["k"].compute().to_numpy(), ref)
    del r
    print("array  dask dataframe sort    2^%d u32  median %.2f s  (runs %s)  %s" %
          (a.log2, t_dd, " ".join("%.2f" % t for t in ts_dd), "right" if ok else "WRONG"),
          flush=True)
    print("array  dask dataframe sort / gsort.dask.sort = %.2fx" % (t_dd / t_gs), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-S", "--socket", help="gsortd's socket (default: GSORTD_SOCKET)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per worker")
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--log2", type=int, default=26, help="array size, 2^LOG2 u32")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--memory-limit", default="auto", help="per worker, as Dask takes it")
    ap.add_argument("--skip-frame", action="store_true")
    ap.add_argument("--skip-array", action="store_true")
    ap.add_argument("--hook-floor", action="store_true",
                    help="also time sort_values with a sort_function that sorts nothing "
                         "(what Dask's own steps cost)")
    ap.add_argument("--no-dask-array", action="store_true",
                    help="skip Dask's own sort of the array (a dataframe sort_values)")
    a = ap.parse_args()
    if a.socket:
        os.environ["GSORTD_SOCKET"] = a.socket  # before the workers start
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import dask.distributed
    from distributed import Client, LocalCluster

    import gsort
    import gsort.dask as gd
    info = gsort.info()
    print("gsortd %s at %s; devices: %s" % (info.get("version"), info.get("socket"),
          ", ".join(d.get("name", "?") for d in info.get("devices", [])) or "none"))
    dask.config.set({"dataframe.shuffle.method": "tasks"})
    with LocalCluster(n_workers=a.workers, threads_per_worker=a.threads, processes=True,
                      memory_limit=a.memory_limit, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        print("LocalCluster: %d workers x %d threads; dask %s, numpy %s" %
              (a.workers, a.threads, dask.__version__, np.__version__), flush=True)
        if not a.skip_frame:
            bench_frame(a, client, dd, dask, gd)
        if not a.skip_array:
            bench_array(a, client, da, dd, dask, gd)
        fell = client.run(lambda: sorted(__import__("gsort.dask").dask._warned))
        if any(fell.values()):
            print("WARNING: workers fell back to numpy: %s" % fell)


if __name__ == "__main__":
    main()
