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
key sum). Median of --reps runs. (3) by two columns: MULTI_ROWS rows of
(int64 "a" of about MULTI_DISTINCT values, int64 "b", float64 "v"),
gsort.dask.sort_values_ddf(ddf, ["a", "b"]) against what Dask 2022.12 has
for it: its sort_values refuses a list of columns on more than one
partition, so Dask's shuffle by "a" with pandas' sort by ["a", "b"] in each
partition (ddf.sort_values("a", sort_function_kwargs={"by": ["a", "b"]}),
what later Dask releases do for a list), and Dask's sort_values of one
combined int64 key a * 2^32 + b (a column added first). Needs a gsortd on
this node (-S SOCKET or GSORTD_SOCKET: the workers inherit it) and
PYTHONPATH naming python/.

    PYTHONPATH=python tools/with-gsortd build python3 bench/bench-dask.py \\
        [--workers 2] [--threads 1] [--rows 20000000] [--log2 26] [--reps 3] \\
        [--multi-rows 20000000] [--skip-frame --skip-array --skip-multi]
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


def multi_summary(p):
    """(rows, sums of a and b, sorted by (a, b), first and last (a, b)) of
    one partition."""
    import pandas as pd
    x, y = p["a"].to_numpy(), p["b"].to_numpy()
    n = x.size
    ok = bool(np.all((x[1:] > x[:-1]) | ((x[1:] == x[:-1]) & (y[1:] >= y[:-1])))) if n else True
    ends = [x[0], y[0], x[-1], y[-1]] if n else [0, 0, 0, 0]
    return pd.DataFrame({"n": [n], "sa": [int(x.sum())], "sb": [int(y.sum())], "sorted": [ok],
                         "a0": [ends[0]], "b0": [ends[1]], "a1": [ends[2]], "b1": [ends[3]]})


def check_multi(s, n, sa, sb):
    """The partitions' summaries: each sorted by (a, b), in that order
    from one to the next, n rows, the sums of a and b unchanged."""
    s = s[s["n"] > 0]
    lo = list(zip(s["a0"], s["b0"]))[1:]
    hi = list(zip(s["a1"], s["b1"]))[:-1]
    return (bool(s["sorted"].all()) and int(s["n"].sum()) == n and
            int(s["sa"].sum()) == sa and int(s["sb"].sum()) == sb and
            all(h <= l for h, l in zip(hi, lo)))


def combined(df):
    """df with column "ab" = a * 2^32 + b + 2^31 (a below 2^31, b an int32):
    one int64 whose order is (a, b)'s."""
    return df.assign(ab=df["a"] * (1 << 32) + (df["b"] + (1 << 31)))


def bench_multi(a, client, dd, dask, gd):
    import pandas as pd
    rows, parts = a.multi_rows, a.partitions

    def make(i):
        rng = np.random.default_rng(100 + i)
        m = rows // parts + (1 if i < rows % parts else 0)
        return pd.DataFrame({"a": rng.integers(0, a.multi_distinct, m, dtype=np.int64),
                             "b": rng.integers(-(1 << 31), 1 << 31, m, dtype=np.int64),
                             "v": rng.standard_normal(m)})
    ddf = dd.from_delayed([dask.delayed(make)(i) for i in range(parts)],
                          meta=make(0).iloc[:0]).persist()
    dask.distributed.wait(ddf)
    sums = ddf[["a", "b"]].map_partitions(lambda p: p.sum().to_frame().T).compute().sum()
    sa, sb = int(sums["a"]), int(sums["b"])
    try:
        ddf.sort_values(["a", "b"])
        refused = "accepted"
    except NotImplementedError as e:
        refused = "refused: NotImplementedError: %s" % str(e).splitlines()[0]
    print("multi  Dask %s ddf.sort_values([\"a\", \"b\"]) on %d partitions: %s" %
          (dask.__version__, parts, refused), flush=True)
    ways = (("dask by a, pandas by a,b",
             lambda: ddf.sort_values("a", sort_function_kwargs={"by": ["a", "b"]})),
            ("dask combined key", lambda: ddf.map_partitions(combined).sort_values("ab")),
            ("sort_values_ddf", lambda: gd.sort_values_ddf(ddf, ["a", "b"])))
    # the ways take turns within each repeat, so that a change in the
    # machine's load falls on all of them alike
    ts = {name: [] for name, _ in ways}
    keys0 = len(client.who_has())
    for _ in range(a.reps):
        for name, sort in ways:
            released(client, keys0)
            t0 = time.perf_counter()
            r = sort().persist()
            dask.distributed.wait(r)
            ts[name].append(time.perf_counter() - t0)
            if not check_multi(r.map_partitions(multi_summary).compute(), rows, sa, sb):
                print("multi  %s: WRONG" % name, flush=True)
                sys.exit(1)
            del r
    res = {}
    for name, _ in ways:
        res[name] = statistics.median(ts[name])
        print("multi  %-24s rows %d  partitions %d  median %.2f s  (runs %s)  right" %
              (name, rows, parts, res[name], " ".join("%.2f" % t for t in ts[name])),
              flush=True)
    for name, _ in ways[:2]:
        print("multi  %s / sort_values_ddf = %.2fx" % (name, res[name] / res["sort_values_ddf"]),
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
    ap.add_argument("--skip-multi", action="store_true", help="skip the sort by two columns")
    ap.add_argument("--multi-rows", type=int, default=20_000_000,
                    help="rows of the sort by two columns")
    ap.add_argument("--multi-distinct", type=int, default=1_000_000,
                    help="distinct values of its first column (at most 2^31)")
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
        if not a.skip_multi:
            bench_multi(a, client, dd, dask, gd)
        fell = client.run(lambda: sorted(__import__("gsort.dask").dask._warned))
        if any(fell.values()):
            print("WARNING: workers fell back to numpy: %s" % fell)


if __name__ == "__main__":
    main()
