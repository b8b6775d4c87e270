#!/usr/bin/env python3
"""Reference timings for gsort-bench: cupy.sort (CUB radix sort) over the same
sizes, timed with CUDA events after a warm-up, median of --reps runs. Keys
only by default; --argsort times cupy.argsort instead (CUB sorting the keys
with an index payload), the nearest cupy call to a key-value sort; --torch
times torch.sort instead (CUB too: sorted values plus int64 indices; u32
keys as int32, which torch sorts alike), the key-value reference of issue 22.
Prints one row per size: ms and Gkeys/s (n / time), or CSV with --csv."""

import argparse
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dtype", default="u32",
                    help="u32 i32 f32 u64 i64 f64, and u16 i16 f16 u8 i8 (cupy) or "
                         "i16 f16 bf16 u8 i8 (--torch) (default u32)")
    ap.add_argument("--min-log2", type=int, default=10)
    ap.add_argument("--max-log2", type=int, default=27)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--argsort", action="store_true",
                    help="time cupy.argsort (keys + int64 indices)")
    ap.add_argument("--torch", action="store_true",
                    help="time torch.sort (values + int64 indices) instead of cupy")
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("--seed", type=int, default=12345)
    a = ap.parse_args()

    if a.torch:
        return bench_torch(a)
    try:
        import cupy as cp
    except ImportError as e:
        print("bench-cupy: cupy is not available: %s" % e, file=sys.stderr)
        return 1
    types = {"u32": cp.uint32, "i32": cp.int32, "f32": cp.float32,
             "u64": cp.uint64, "i64": cp.int64, "f64": cp.float64,
             "u16": cp.uint16, "i16": cp.int16, "f16": cp.float16,
             "u8": cp.uint8, "i8": cp.int8}
    if a.dtype not in types:
        print("bench-cupy: unknown dtype %s" % a.dtype, file=sys.stderr)
        return 2
    dt = types[a.dtype]
    op = "argsort" if a.argsort else "sort"
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else dev
    if a.csv:
        print("device,algo,dtype,n,ms,gkeys_per_s")
    else:
        print("%-24s %-13s %-4s %11s %10s %8s" % ("device", "algo", "type", "n", "ms", "Gkeys/s"))
    rs = cp.random.RandomState(a.seed)
    for lg in range(a.min_log2, a.max_log2 + 1):
        n = 1 << lg
        try:
            # random bits, like gsort-bench (floats then include NaNs and infinities)
            size = cp.dtype(dt).itemsize
            x = rs.randint(0, 256, size=n * size, dtype=cp.int32).astype(cp.uint8).view(dt)
            f = cp.argsort if a.argsort else cp.sort
            y = f(x)                          # warm-up (plans, allocations)
            cp.cuda.Device().synchronize()
            # correctness spot check of the warm-up result
            s = x[y] if a.argsort else y
            if n > 1 and dt not in (cp.float16, cp.float32, cp.float64) and bool((s[1:] < s[:-1]).any()):
                print("bench-cupy: cupy result not sorted at n=%d" % n, file=sys.stderr)
                return 1
            del y, s
            t = []
            for _ in range(a.reps):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                y = f(x)
                e1.record()
                e1.synchronize()
                t.append(cp.cuda.get_elapsed_time(e0, e1))
                del y
            ms = statistics.median(t)
        except cp.cuda.memory.OutOfMemoryError:
            print("bench-cupy: out of GPU memory at n=2^%d" % lg, file=sys.stderr)
            break
        g = n / (ms * 1e6) if ms > 0 else 0.0
        if a.csv:
            print("\"%s\",cupy.%s,%s,%d,%.4f,%.4f" % (dev, op, a.dtype, n, ms, g))
        else:
            print("%-24.24s %-13s %-4s %11d %10.4f %8.3f" % (dev, "cupy." + op, a.dtype, n, ms, g))
        sys.stdout.flush()
        del x
        cp.get_default_memory_pool().free_all_blocks()
    return 0


def bench_torch(a):
    """torch.sort over the same sizes, timed with CUDA events after a warm-up."""
    try:
        import torch
    except ImportError as e:
        print("bench-cupy: torch is not available: %s" % e, file=sys.stderr)
        return 1
    types = {"u32": torch.int32, "i32": torch.int32, "f32": torch.float32,
             "u64": torch.int64, "i64": torch.int64, "f64": torch.float64,
             "i16": torch.int16, "f16": torch.float16, "bf16": torch.bfloat16,
             "u8": torch.uint8, "i8": torch.int8}
    if a.dtype not in types:
        print("bench-cupy: unknown dtype %s" % a.dtype, file=sys.stderr)
        return 2
    dt = types[a.dtype]
    dev = torch.cuda.get_device_name(0)
    if a.csv:
        print("device,algo,dtype,n,ms,gkeys_per_s")
    else:
        print("%-24s %-13s %-4s %11s %10s %8s" % ("device", "algo", "type", "n", "ms", "Gkeys/s"))
    g = torch.Generator(device="cuda").manual_seed(a.seed)
    for lg in range(a.min_log2, a.max_log2 + 1):
        n = 1 << lg
        size = torch.tensor([], dtype=dt).element_size()
        x = torch.randint(0, 256, (n * size,), dtype=torch.uint8, device="cuda",
                          generator=g).view(dt)
        y = torch.sort(x)                     # warm-up
        torch.cuda.synchronize()
        if n > 1 and not dt.is_floating_point and bool((y.values[1:] < y.values[:-1]).any()):
            print("bench-cupy: torch result not sorted at n=%d" % n, file=sys.stderr)
            return 1
        del y
        t = []
        for _ in range(a.reps):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            y = torch.sort(x)
            e1.record()
            e1.synchronize()
            t.append(e0.elapsed_time(e1))
            del y
        ms = statistics.median(t)
        gk = n / (ms * 1e6) if ms > 0 else 0.0
        if a.csv:
            print("\"%s\",torch.sort,%s,%d,%.4f,%.4f" % (dev, a.dtype, n, ms, gk))
        else:
            print("%-24.24s %-13s %-4s %11d %10.4f %8.3f" % (dev, "torch.sort", a.dtype, n, ms, gk))
        sys.stdout.flush()
        del x
    return 0


if __name__ == "__main__":
    sys.exit(main())
