#!/usr/bin/python3
"""The host sort against numpy on the same machine, in the same run: for
each dtype and size, the median time of numpy's np.sort on random keys
(one thread, in this process) and of the host candidates through gsort-bench
(its own process, the same kind of keys, every result checked there; ips4o
through bench/gsort-ips4o, keys without NaNs), with
the ratio and millions of keys per second per core. With --membw, the
machine's memory bandwidth on all its cores first (bench/gsort-membw), and
beside each row the bytes the sort moved per second counted as the host
radix moves them: five trips of each key (and value) through memory (the
top digit counted, then scattered: a read and a write; each bucket read
and written). /usr/bin/python3 on purpose: that one has numpy here.

    bench/bench-host.py [--bench build/bench/gsort-bench] [--dtypes u32,f64]
        [--min-log2 20] [--max-log2 24] [--reps 5] [--params threads=2]
        [--algos host,vqsort,ips4o] [--membw build/bench/gsort-membw] [--rounds 1]
        [--ips4o build/bench/gsort-ips4o]
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import time

import numpy as np

NP = {"u32": np.uint32, "i32": np.int32, "f32": np.float32,
      "u64": np.uint64, "i64": np.int64, "f64": np.float64}


def numpy_ms(dtype, n, reps, rng):
    """Median ms of np.sort on a fresh copy of random keys."""
    if dtype.startswith("f"):
        a = rng.standard_normal(n).astype(NP[dtype])
    else:
        a = rng.integers(0, 2**63, size=n, dtype=np.uint64).astype(NP[dtype])
    ts = []
    for _ in range(reps):
        b = a.copy()
        t = time.perf_counter()
        b.sort()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def host_ms(bench, algo, dtype, lo, hi, reps, params):
    """{n: (median wall ms, params)} from gsort-bench --algo ALGO, or from
    bench/gsort-ips4o when ALGO is "ips4o" (bench is then that program)."""
    cmd = [bench] + (["--algo", algo] if algo != "ips4o" else []) + [
        "--dtype", dtype, "--min-log2", str(lo), "--max-log2", str(hi), "--reps", str(reps),
        "--csv"]
    if params and algo != "ips4o":
        cmd += ["--params", params]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        # e.g. vqsort in a build without Highway: said, and the others still timed
        print("# %s skipped: %s" % (algo, (run.stderr.strip().splitlines() or ["exit %d" %
                                                                           run.returncode])[-1]))
        return None
    out = run.stdout
    res = {}
    for row in csv.DictReader(io.StringIO(out)):
        if row["note"] != "ok":
            sys.exit("gsort-bench: %s n=%s: %s" % (dtype, row["n"], row["note"]))
        res[int(row["n"])] = (float(row["wall_ms"]), row["params"])
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join("build", "bench", "gsort-bench"))
    ap.add_argument("--dtypes", default="u32,f64")
    ap.add_argument("--min-log2", type=int, default=20)
    ap.add_argument("--max-log2", type=int, default=24)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--params", default="", help="host sort parameters (default: its defaults)")
    ap.add_argument("--algos", default="host",
                    help="host candidates to time, e.g. host,vqsort (default host)")
    ap.add_argument("--ips4o", default=os.path.join("build", "bench", "gsort-ips4o"),
                    help="bench/gsort-ips4o, for --algos ...,ips4o")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the whole comparison, then give the median ratios")
    ap.add_argument("--membw", default="",
                    help="gsort-membw to measure the memory bandwidth with (default: none)")
    o = ap.parse_args()
    cores = os.cpu_count() or 1
    rng = np.random.default_rng(1)
    print("numpy %s, %d cores; gsort-bench --algo %s%s" %
          (np.__version__, cores, o.algos, " --params " + o.params if o.params else ""))
    if o.membw:
        out = subprocess.run([o.membw, "--threads", "1,%d" % cores, "--reps", "3"],
                             check=True, capture_output=True, text=True).stdout
        print("memory bandwidth (gsort-membw):")
        print("".join("  " + line + "\n" for line in out.splitlines()), end="")
    print("%-5s %5s %11s %-7s %11s %7s %16s %16s %12s  %s" % (
        "dtype", "n", "numpy ms", "algo", "ms", "ratio", "numpy Mkeys/s/c", "ours Mkeys/s/c",
        "GB/s 5 trips", "params"))
    ratios = {}
    for _ in range(o.rounds):
        for dt in o.dtypes.split(","):
            ours = {a: host_ms(o.ips4o if a == "ips4o" else o.bench, a, dt, o.min_log2,
                               o.max_log2, o.reps, o.params)
                    for a in o.algos.split(",")}
            ours = {a: r for a, r in ours.items() if r is not None}
            for lg in range(o.min_log2, o.max_log2 + 1):
                n = 1 << lg
                npms = numpy_ms(dt, n, o.reps, rng)
                for a, res in ours.items():
                    hms, hp = res[n]
                    threads = int(dict(kv.split("=") for kv in hp.split(",")).get("threads", 1))
                    used = min(threads, cores)
                    width = np.dtype(NP[dt]).itemsize
                    print("%-5s  2^%-2d %11.2f %-7s %11.2f %6.3fx %16.1f %16.1f %12.1f  %s" % (
                        dt, lg, npms, a, hms, hms / npms, n / npms / 1e3,
                        n / hms / 1e3 / used, 5 * n * width / hms / 1e6, hp), flush=True)
                    ratios.setdefault((dt, lg, a), []).append(npms / hms)
    if o.rounds > 1:
        print("median over %d rounds of numpy ms / ours ms (each round: numpy and each "
              "candidate in turn):" % o.rounds)
        for (dt, lg, a), r in ratios.items():
            print("  %-5s 2^%-2d %-7s %.2fx faster than numpy (rounds: %s)" % (
                dt, lg, a, statistics.median(r), " ".join("%.2f" % x for x in r)))


if __name__ == "__main__":
    main()
