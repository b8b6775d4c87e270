"""TAP checks of the Python client (python/gsort/) against numpy, with
real gsortd daemons on temporary sockets: A serves on the host only
(every dtype, both transports, errors), B with its OpenCL devices (one
algorithm, one program: a few sorts on PoCL), C with small limits (a
1 MiB max_request_bytes, a 1 s idle timeout). Run by tests/python/python.test,
which picks a Python with numpy and sets GSORTD, GSORT_PCACHE and
PYTHONPATH; prints TAP, exits 1 when a check failed."""

import gc
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

import gsort
# pytap.py is in tests/support/, beside this file's folder.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from pytap import Daemons, check, env_set, finish, ok


def raises(exc, fn, *args, **kw):
    """The exception fn raises (must be exc), or None."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    return None


# ---- daemons ----

tmp = tempfile.mkdtemp(prefix="gsort-py.")
_daemons = Daemons(tmp)
daemons = _daemons.procs
start_daemon = _daemons.start


def wait_log(log, text, seconds):
    for _ in range(int(seconds * 10)):
        if text in open(log).read():
            return True
        time.sleep(0.1)
    return False


# ---- references ----

DTYPES = [np.uint32, np.int32, np.float32, np.uint64, np.int64, np.float64]
rng = np.random.default_rng(20250707)


def order_key(a):
    """Each key as an unsigned integer in the daemon's total order (floats:
    -0.0 before +0.0, every NaN equal and last), for references where numpy
    and the documented order differ."""
    a = np.asarray(a)
    bits = 8 * a.itemsize
    u = np.dtype("u%d" % a.itemsize).type
    top = u(1) << u(bits - 1)
    if a.dtype.kind == "u":
        return a.astype(u)
    if a.dtype.kind == "i":
        return a.view(u) ^ top
    a = np.where(np.isnan(a), np.array(np.nan, a.dtype), a)  # one NaN pattern
    b = a.view(u)
    return np.where(b & top, ~b, b | top).astype(u)


def ref_argsort(a, descending=False):
    """Stable argsort in the daemon's order, either direction."""
    k = order_key(a)
    if descending:
        k = ~k
    return np.argsort(k, kind="stable")


def same(x, y):
    """Equal values (NaN == NaN, -0.0 == +0.0), same dtype and length."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if x.dtype.kind == "f":
        return bool(np.array_equal(x, y, equal_nan=True))
    return bool(np.array_equal(x, y))


def bits_equal(x, y):
    return x.dtype == y.dtype and x.tobytes() == y.tobytes()


def random_keys(dt, n, special=False, signed_zeros=True):
    """n keys of dtype dt with many duplicates: half from a small range,
    half from the full range; floats with inf, -inf and NaNs (and -0.0
    next to +0.0 when signed_zeros)."""
    dt = np.dtype(dt)
    if dt.kind in "ui":
        info = np.iinfo(dt)
        full = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        small = rng.integers(0 if dt.kind == "u" else -50, 50, size=n).astype(dt)
    else:
        full = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(dt)
        small = rng.integers(-20, 20, size=n).astype(dt)
    a = np.where(rng.random(n) < 0.5, small, full).astype(dt)
    if dt.kind == "f" and n:
        specials = [np.inf, -np.inf, np.nan, 0.0] + ([-0.0] if signed_zeros else [])
        pick = rng.random(n) < (0.2 if special else 0.05)
        a[pick] = rng.choice(np.array(specials, dtype=dt), size=int(pick.sum()))
        if not signed_zeros:
            a[a == 0] = 0.0
    return a


def vary_nans(x):
    """Give a float array's NaNs several bit patterns (payloads, both
    signs), in place; other dtypes are left as they are."""
    if x.dtype.kind == "f":
        u = x.view("u%d" % x.itemsize)
        nans = np.flatnonzero(np.isnan(x))
        u[nans[::2]] ^= u.dtype.type(1)
        u[nans[1::3]] |= u.dtype.type(1) << u.dtype.type(8 * x.itemsize - 1)


def nan_bits(a):
    u = a.view("u%d" % a.itemsize)
    return np.sort(u[np.isnan(a)])


def main():
    a_sock, a_log, _ = start_daemon("a", "-o", "devices=none")
    if not ok(a_sock is not None, "daemon A (devices=none) serves", open(a_log).read()):
        return
    b_sock, b_log, _ = start_daemon("b")
    ok(b_sock is not None, "daemon B (OpenCL devices) serves",
       None if b_sock else open(b_log).read())
    c_sock, c_log, _ = start_daemon("c", "-o", "devices=none", "-o", "max_request_bytes=1M",
                                    "-o", "idle_timeout=1", "--log-level", "info")
    ok(c_sock is not None, "daemon C (max_request_bytes=1M, idle_timeout=1) serves",
       None if c_sock else open(c_log).read())

    cm = gsort.Client(a_sock)                 # shared memory
    ci = gsort.Client(a_sock, memfd=False)    # inline bytes
    check("the default client uses a memfd, memfd=False does not",
          lambda: (cm.use_memfd and not ci.use_memfd, cm.memfd_error))

    # ---- ping, info, stats ----
    def t_ping():
        ms = cm.ping()
        return (isinstance(ms, float) and ms > 0 and cm.last["op"] == "ping" and
                isinstance(cm.last["version"], str) and cm.last["protocol"] == 1, (ms, cm.last))
    check("ping: a positive round trip in ms; last has version and protocol 1", t_ping)

    def t_info():
        i = cm.info()
        return (i["socket"] == a_sock and
                {"host", "radix", "mergepath", "shellsort"} <= set(i["algorithms"]) and
                all(d["enabled"] is False for d in i["devices"]) and
                # auto: a quarter of max_memory (auto: at most this machine's memory)
                i["limits"]["max_request_bytes"] == cm.stats()["memory"]["max_memory"] // 4 and
                0 < i["limits"]["max_request_bytes"] <
                os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2, i)
    check("info: socket, algorithms, devices disabled (devices=none), default limits", t_info)

    # ---- every dtype, both transports ----
    for dt in DTYPES:
        name = np.dtype(dt).name
        a = random_keys(dt, 5000)
        a_ns = random_keys(dt, 3000, signed_zeros=False)
        for c, how in ((cm, "memfd"), (ci, "inline")):
            def t_sort():
                keep = a.copy()
                s = c.sort(a)
                ref = np.sort(a)
                return (same(s, ref) and bits_equal(a, keep) and
                        c.last["zero_copy"] == (c is cm) and c.last["dtype"] == a.dtype.str[1] +
                        str(8 * a.itemsize) and c.last["algorithm"] == "host", (s[:10], ref[:10]))
            check("%s %s: sort equals np.sort, input untouched, last says %s, host" %
                  (name, how, how), t_sort)

            def t_desc():
                s = c.sort(a, descending=True)
                return same(s, np.sort(a)[::-1]), s[:10]
            check("%s %s: descending equals np.sort(a)[::-1]" % (name, how), t_desc)

            def t_arg():
                i = c.argsort(a)
                perm = np.array_equal(np.sort(i), np.arange(a.size))
                return (i.dtype == np.int64 and perm and same(a[i], np.sort(a)), i[:10])
            check("%s %s: argsort is an int64 permutation with a[i] == np.sort(a)" % (name, how),
                  t_arg)

            def t_stable():
                i = c.argsort(a_ns, stable=True)
                r = np.argsort(a_ns, kind="stable")
                return np.array_equal(i, r), (i[:10], r[:10])
            check("%s %s: stable argsort equals np.argsort(kind='stable')" % (name, how), t_stable)

            def t_stable_desc():
                i = c.argsort(a, stable=True, descending=True)
                r = ref_argsort(a, descending=True)
                return np.array_equal(i, r), (i[:10], r[:10])
            check("%s %s: stable descending argsort keeps equal keys in input order" %
                  (name, how), t_stable_desc)

    def t_transports():
        a = random_keys(np.float64, 20000, special=True)
        v = np.arange(a.size, dtype=np.uint64)
        r1 = (cm.sort(a), cm.argsort(a, stable=True), cm.sort_by_key(a, v, stable=True))
        z1 = cm.last["zero_copy"]
        r2 = (ci.sort(a), ci.argsort(a, stable=True), ci.sort_by_key(a, v, stable=True))
        z2 = ci.last["zero_copy"]
        return (z1 and not z2 and bits_equal(r1[0], r2[0]) and bits_equal(r1[1], r2[1]) and
                bits_equal(r1[2][0], r2[2][0]) and bits_equal(r1[2][1], r2[2][1]))
    check("memfd and inline give bit-identical sort, argsort and sort_by_key results",
          t_transports)

    # ---- float order: -0.0, NaN, inf ----
    for dt in (np.float32, np.float64):
        name = np.dtype(dt).name
        x = random_keys(dt, 4000, special=True)
        # NaNs with other payloads and the sign bit set must keep their bits.
        u = x.view(np.uint32 if dt == np.float32 else np.uint64)
        nans = np.flatnonzero(np.isnan(x))
        u[nans[::3]] |= u.dtype.type(1) << u.dtype.type(8 * x.itemsize - 1)
        u[nans[1::3]] ^= u.dtype.type(1)
        for c, how in ((cm, "memfd"), (ci, "inline")):
            def t_float():
                s = c.sort(x)
                k = order_key(s)
                nn = int(np.isnan(x).sum())
                z = s[s == 0]
                return (bool(np.all(k[:-1] <= k[1:])) and np.isneginf(s[0]) and
                        bool(np.all(np.isnan(s[s.size - nn:]))) and
                        np.array_equal(nan_bits(s), nan_bits(x)) and
                        bool(np.all(np.diff(np.signbit(z).astype(int)) <= 0)) and
                        same(s, np.sort(x)), (s[:5], s[-5:]))
            check("%s %s: -inf first, -0.0 before +0.0, NaNs last with their bits kept" %
                  (name, how), t_float)

            def t_float_desc():
                s = c.sort(x, descending=True)
                nn = int(np.isnan(x).sum())
                z = s[s == 0]
                return (bool(np.all(np.isnan(s[:nn]))) and np.isposinf(s[nn]) and
                        np.isneginf(s[-1]) and
                        bool(np.all(np.diff(np.signbit(z).astype(int)) >= 0)) and
                        same(s[nn:], np.sort(x)[::-1][nn:]), (s[:nn + 2], s[-3:]))
            check("%s %s: descending is the exact reverse: NaNs first, +0.0 before -0.0" %
                  (name, how), t_float_desc)

            def t_float_stable():
                i = c.argsort(x, stable=True)
                return np.array_equal(i, ref_argsort(x)), i[:10]
            check("%s %s: stable argsort with -0.0, +0.0 and NaNs in the total order" %
                  (name, how), t_float_stable)

    # ---- in place, layouts, sizes ----
    for c, how in ((cm, "memfd"), (ci, "inline")):
        def t_inplace():
            a = random_keys(np.int64, 7001)
            ref = np.sort(a)
            r = c.sort(a, inplace=True)
            return r is a and same(a, ref)
        check("%s: inplace=True sorts the array itself and returns it" % how, t_inplace)

        def t_inplace_kv():
            k = random_keys(np.float32, 3001)
            k0 = k.copy()
            v = np.arange(k.size, dtype=np.int64)
            rk, rv = c.sort_by_key(k, v, inplace=True, stable=True)
            r = ref_argsort(k0)
            return rk is k and rv is v and bits_equal(k, k0[r]) and np.array_equal(v, r)
        check("%s: sort_by_key inplace=True sorts keys and values where they are" % how,
              t_inplace_kv)

        def t_noncontig():
            base = random_keys(np.uint32, 9000)
            keep = base.copy()
            views = [base[::3], base[::-1], np.asfortranarray(base.reshape(90, 100))[7, :]]
            good = all(same(c.sort(v), np.sort(v)) for v in views)
            good = good and all(np.array_equal(c.argsort(v, stable=True),
                                               np.argsort(v, kind="stable")) for v in views)
            return good and bits_equal(base, keep)
        check("%s: strided, reversed and column views sort like numpy, untouched" % how,
              t_noncontig)

        def t_small():
            res = []
            for dt in DTYPES:
                e = np.array([], dtype=dt)
                o = np.array([7], dtype=dt)
                s0, s1 = c.sort(e), c.sort(o)
                i0, i1 = c.argsort(e), c.argsort(o)
                k0, v0 = c.sort_by_key(e, np.array([], np.uint32))
                res.append(s0.dtype == dt and s0.size == 0 and same(s1, o) and
                           i0.dtype == np.int64 and i0.size == 0 and list(i1) == [0] and
                           k0.size == 0 and v0.dtype == np.uint32)
            return all(res), res
        check("%s: n = 0 and n = 1, every dtype: empty and one-element results" % how, t_small)

        def t_by_key():
            good = []
            for kdt, vdt, n in ((np.float64, np.uint32, 5000), (np.float32, np.uint64, 1001),
                                (np.int32, np.float32, 777), (np.uint64, np.int64, 4000),
                                (np.int64, np.complex64, 999)):
                k = random_keys(kdt, n)
                v = (rng.standard_normal(n) * 1000).astype(vdt)
                kk, vv = k.copy(), v.copy()
                for desc in (False, True):
                    sk, sv = c.sort_by_key(k, v, stable=True, descending=desc)
                    r = ref_argsort(k, descending=desc)
                    good.append(bits_equal(sk, k[r]) and bits_equal(sv, v[r]) and
                                bits_equal(k, kk) and bits_equal(v, vv))
            return all(good), good
        check("%s: sort_by_key, 4- and 8-byte values of any dtype (odd n, 4-byte keys with "
              "8-byte values), both orders, stable" % how, t_by_key)

        def t_by_key_raw():
            # Values numpy's buffer protocol cannot export (datetime64,
            # timedelta64: "cannot include dtype 'M' in a buffer") and
            # structured/void ones must travel as raw bytes too, both ways.
            good = []
            n = 2001
            raw = rng.integers(-2**62, 2**62, size=n, dtype=np.int64)
            raw[3] = np.iinfo(np.int64).min     # NaT among the datetimes
            st8 = np.dtype([("a", "<i4"), ("b", "<f4")])
            st4 = np.dtype([("x", "<u2"), ("y", "<i2")])
            vals = [raw.view("M8[ns]"), (raw >> 20).view("m8[s]"),
                    raw.view("M8[D]"), raw.view(st8), raw.view("V8"),
                    raw.astype(np.int32).view(st4), raw.astype(np.int32).view("V4")]
            for v in vals:
                k = random_keys(np.float64 if v.itemsize == 8 else np.int32, n)
                vv = v.copy()
                for desc in (False, True):
                    sk, sv = c.sort_by_key(k, v, stable=True, descending=desc)
                    r = ref_argsort(k, descending=desc)
                    good.append((str(v.dtype), desc, sv.dtype == v.dtype and
                                 bits_equal(sk, k[r]) and sv.tobytes() == v[r].tobytes() and
                                 vv.tobytes() == v.tobytes()))
                # in place, and a strided (non-contiguous) values view
                ki, vi = k.copy(), v.copy()
                rk, rv = c.sort_by_key(ki, vi, inplace=True)
                r = ref_argsort(k)
                good.append((str(v.dtype), "inplace", rk is ki and rv is vi and
                             same(ki, k[r]) and
                             sorted(vi.tobytes()[j:j + v.itemsize]
                                    for j in range(0, n * v.itemsize, v.itemsize)) ==
                             sorted(v.tobytes()[j:j + v.itemsize]
                                    for j in range(0, n * v.itemsize, v.itemsize))))
                sk, sv = c.sort_by_key(k[::2], v[::2], stable=True)
                r = ref_argsort(k[::2])
                good.append((str(v.dtype), "strided",
                             sv.tobytes() == v[::2][r].tobytes()))
            return all(g[2] for g in good), [g for g in good if not g[2]]
        check("%s: sort_by_key with datetime64, timedelta64, structured and void values "
              "(4 and 8 bytes): moved as raw bytes, both orders, in place, strided" % how,
              t_by_key_raw)

        def t_parts():
            # gsort.dask's merges: pieces sorted as their concatenation,
            # never concatenated; empty and strided pieces among them.
            good = []
            for kdt in (np.uint32, np.float64, np.int64):
                k = random_keys(kdt, 9000)
                cut = [0, 0, 1, 2500, 2500, 6001, 9000]
                pieces = [k[a:b] for a, b in zip(cut, cut[1:])] + [k[::-7][:300]]
                whole = np.concatenate(pieces)
                idx = [np.arange(p.shape[0], dtype=np.int64) + 10000 * i
                       for i, p in enumerate(pieces)]
                before = [p.copy() for p in pieces]
                sk, none = c._sort_parts(pieces)
                r = ref_argsort(whole)
                good.append((np.dtype(kdt).name, "keys", none is None and sk.dtype == kdt and
                             bits_equal(sk, whole[r])))
                nk, sv = c._sort_parts(pieces, idx, keys_out=False, stable=True)
                good.append((np.dtype(kdt).name, "index", nk is None and sv.dtype == np.int64 and
                             np.array_equal(sv, np.concatenate(idx)[r])))
                sk, sv = c._sort_parts(pieces, [i.view(np.float64) for i in idx], stable=True)
                good.append((np.dtype(kdt).name, "both", bits_equal(sk, whole[r]) and
                             sv.dtype == np.float64 and
                             np.array_equal(sv.view(np.int64), np.concatenate(idx)[r])))
                good.append((np.dtype(kdt).name, "inputs kept",
                             all(bits_equal(p, q) for p, q in zip(pieces, before))))
            one = c._sort_parts([np.array([3, 1, 2], np.uint32)])[0]
            good.append(("u32", "one piece", np.array_equal(one, [1, 2, 3])))
            good.append(("-", "no pieces", raises(ValueError, c._sort_parts, [])))
            good.append(("-", "4-byte values", raises(
                TypeError, c._sort_parts, [k[:5]], [np.zeros(5, np.int32)])))
            good.append(("-", "mixed dtypes", raises(
                TypeError, c._sort_parts, [k[:5], k[:5].astype(np.float32)])))
            good.append(("-", "lengths differ", raises(
                ValueError, c._sort_parts, [k[:5]], [np.zeros(4, np.int64)])))
            return all(g[2] for g in good), [g for g in good if not g[2]]
        check("%s: _sort_parts sorts pieces as their concatenation (keys, indices, both; "
              "empty, strided and single pieces), pieces unchanged" % how, t_parts)

    def t_index_dtypes():
        a = random_keys(np.int32, 3000)
        r = np.argsort(a, kind="stable")
        outs = [cm.argsort(a, stable=True, index_dtype=t) for t in
                (np.int64, np.uint64, np.int32, np.uint32)]
        outs += [ci.argsort(a, stable=True, index_dtype=t) for t in (np.int32, np.uint64)]
        return (all(np.array_equal(o, r) for o in outs) and
                [o.dtype for o in outs] == [np.int64, np.uint64, np.int32, np.uint32,
                                            np.int32, np.uint64] and
                cm.last["values"] == "idx32", [o.dtype for o in outs])
    check("argsort index_dtype int64/uint64/int32/uint32: the same indices, idx32 on the wire",
          t_index_dtypes)

    def t_growth():
        good = True
        for n in (10, 300000, 10, 70000):
            a = random_keys(np.float64, n)
            good = good and same(cm.sort(a), np.sort(a))
        gc.collect()  # nothing unreachable may close a descriptor during the count
        fd0 = len(os.listdir("/proc/self/fd"))
        for _ in range(20):
            cm.sort(random_keys(np.uint64, 1000))
        return good and len(os.listdir("/proc/self/fd")) == fd0 and cm.last["zero_copy"]
    check("the staging memfd grows and is reused: sizes 10, 300000, 10, 70000 sort right, "
          "20 more sorts open no descriptor", t_growth)

    # ---- arrays in shared memory: gsort.empty / gsort.asarray ----
    def blocks():
        return cm.stats()["blocks"]

    def t_shared_inplace():
        x = gsort.empty(100003, np.float32)
        b0 = blocks()
        good, zc = True, True
        for r in range(4):      # rewritten between sorts
            x[...] = random_keys(np.float32, x.shape[0], special=True)
            ref = np.sort(x)
            y = cm.sort(x, inplace=True)
            good = good and y is x and same(x, ref)
            zc = zc and cm.last["zero_copy"]
        b1 = blocks()
        return (good and zc and b1["mapped"] - b0["mapped"] == 2 and
                b1["reused"] - b0["reused"] == 2, (b0, b1))
    check("gsort.empty: sort(inplace=True) four times, rewritten between: zero copy, right "
          "every time; the daemon maps it for the first sort only and keeps it from the "
          "second", t_shared_inplace)

    def t_shared_views():
        x = gsort.asarray(random_keys(np.int64, 50000))
        ks, vs = gsort.empty(20000, np.uint32), gsort.empty(20000, np.uint64)
        part = x[1000:31000]
        ref = np.sort(part)
        cm.sort(part, inplace=True)
        z1 = cm.last["zero_copy"]
        ok1 = same(part, ref) and same(x[:1000], x[:1000]) and x.base is not None
        ks[...] = random_keys(np.uint32, ks.shape[0])
        vs[...] = np.arange(ks.shape[0], dtype=np.uint64) * 3
        k0, v0 = ks.copy(), vs.copy()
        cm.sort_by_key(ks, vs, inplace=True, stable=True)
        order = np.argsort(k0, kind="stable")
        ok2 = same(ks, k0[order]) and same(vs, v0[order])
        c = cm.sort(x)          # not inplace: a copy, the shared input untouched
        ok3 = same(c, np.sort(x)) and not same(c, x) or same(np.sort(x), x)
        return ok1 and z1 and ok2 and ok3
    check("a slice of a shared array sorts in place (keys_offset); keys and values in two "
          "shared blocks sort by key right (staged); sort() of a shared array is a copy",
          t_shared_views)

    def t_shared_freed():
        gc.collect()
        before = len(gsort._blocks)
        fd0 = len(os.listdir("/proc/self/fd"))
        x = gsort.empty(4096, np.uint64)
        v = x[10:20]
        mid = len(gsort._blocks) == before + 1 and len(os.listdir("/proc/self/fd")) > fd0
        del x
        gc.collect()
        alive = len(gsort._blocks) == before + 1        # the view keeps it
        del v
        gc.collect()
        return (mid and alive and len(gsort._blocks) == before and
                len(os.listdir("/proc/self/fd")) == fd0, (mid, alive, len(gsort._blocks)))
    check("a shared array's memfd is closed when its last view goes", t_shared_freed)

    def t_parallel_copy():
        a = random_keys(np.uint32, (48 << 20) // 4)     # 12 parts of _COPY_BYTES_PER_THREAD
        s = cm.sort(a)
        z = cm.last["zero_copy"]
        k, v = random_keys(np.float64, 5 << 20), np.arange(5 << 20, dtype=np.int64)
        sk, sv = cm.sort_by_key(k, v)
        o = np.argsort(k, kind="stable")
        r = (same(s, np.sort(a)), z, same(sk, k[o]), np.array_equal(np.sort(sv), v),
             same(k[sv], sk))
        return all(r), r
    check("48 MiB of u32 and 40+40 MiB keys and values: copied through the stage by several "
          "threads, sorted right", t_parallel_copy)

    def t_copy_after_fork():
        # the parent's copy threads are not the child's: a child whose
        # pool still listed them would wait for ever on its first large copy
        a = random_keys(np.uint32, (16 << 20) // 4)
        cm.sort(a)          # the parent's pool is up
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(60)
                with gsort.Client(a_sock, local=False) as c:
                    code = 0 if same(c.sort(a), np.sort(a)) else 3
            finally:
                os._exit(code)
        _, st = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(st) == 0, os.waitstatus_to_exitcode(st)
    check("a forked child's first large copy runs on threads of its own (16 MiB sorted right)",
          t_copy_after_fork)

    def t_keep_stage():
        with gsort.Client(a_sock, keep_stage_bytes=1 << 20) as c:
            small = random_keys(np.uint32, 1000)
            c.sort(small)
            kept = c._stage.size > 0
            big = random_keys(np.uint32, 1 << 19)     # 2 MiB: over the limit
            good = same(c.sort(big), np.sort(big))
            return good and kept and c._stage.size == 0
    check("keep_stage_bytes: a stage within the limit is kept, a larger one is released "
          "after its call", t_keep_stage)

    def t_no_memfd():
        real = gsort.os.memfd_create

        def refuse(*a):
            raise OSError(38, "Function not implemented")
        gsort.os.memfd_create = refuse
        try:
            with gsort.Client(a_sock) as c:
                a = random_keys(np.int64, 5000)
                s, i = c.sort(a), c.argsort(a, stable=True)
                return (same(s, np.sort(a)) and np.array_equal(i, np.argsort(a, kind="stable"))
                        and not c.use_memfd and not c.last["zero_copy"] and
                        "not implemented" in c.memfd_error, c.memfd_error)
        finally:
            gsort.os.memfd_create = real
    check("memfd_create failing (ENOSYS): the client falls back to inline bytes, says why",
          t_no_memfd)

    def t_list():
        return (list(cm.sort([3, 1, 2])) == [1, 2, 3] and
                list(cm.argsort([0.5, -1.0, 0.25])) == [1, 2, 0])
    check("array-likes: a Python list sorts like np.asarray of it", t_list)

    # ---- bad input, refused before anything is sent ----
    def t_dtypes():
        msgs = []
        for bad in (np.arange(5, dtype=">u2"), np.array([1, "a"], dtype=object),
                    np.arange(5, dtype=">i4"), np.ones(3, dtype=np.complex128),
                    np.ones(3, dtype=bool), np.ones(3, dtype=np.longdouble),
                    np.zeros(3, dtype="V2")):
            e = raises(TypeError, cm.sort, bad)
            msgs.append(str(e))
            if e is None or "uint32" not in str(e) or "float64" not in str(e) or \
                    "int8" not in str(e) or "bfloat16" not in str(e):
                return False, msgs
        e = raises(TypeError, cm.argsort, np.arange(5, dtype=">f2"))
        return (e is not None and "byte order" in msgs[0] and "byte order" in msgs[2], msgs)
    check("big-endian uint16 and int32, object, complex, bool, long double, 2-byte void "
          "keys: TypeError naming the supported dtypes (8- and 16-bit ones, bfloat16)",
          t_dtypes)

    def t_shapes():
        e2 = raises(ValueError, cm.sort, np.zeros((3, 4), np.float32), axis=0)
        e0 = raises(ValueError, cm.argsort, np.float64(3.0))
        return (e2 is not None and "last axis" in str(e2) and "(3, 4)" in str(e2) and
                e0 is not None and "1-D" in str(e0), (str(e2), str(e0)))
    check("a 2-D array along axis 0, a 0-D array: ValueError saying why", t_shapes)

    # Rows (issue 38): a 2-D or 3-D array sorted along its last axis, each
    # row on its own in one request, as np.sort(a, axis=-1); argsort's
    # indices count within the row; through the daemon (local=False) on
    # both transports and in the process (local=True).
    def t_rows():
        bad = []
        for c, how in ((cm, "memfd"), (ci, "inline")):
            for dt in DTYPES:
                for shape in ((300, 57), (4, 5, 33), (1, 1000), (50, 1)):
                    a = random_keys(dt, int(np.prod(shape)), special=True).reshape(shape)
                    for desc in (False, True):
                        for loc in (False, True):
                            want = np.stack([a.reshape(-1, shape[-1])[r][
                                ref_argsort(a.reshape(-1, shape[-1])[r], desc)]
                                for r in range(a.size // shape[-1])]).reshape(shape)
                            wi = np.stack([ref_argsort(a.reshape(-1, shape[-1])[r], desc)
                                           for r in range(a.size // shape[-1])]).reshape(shape)
                            s = c.sort(a, descending=desc, local=loc)
                            i = c.argsort(a, descending=desc, stable=True, local=loc)
                            if not (s.shape == shape and bits_equal(s, want) and
                                    i.shape == shape and np.array_equal(i, wi)):
                                bad.append((how, np.dtype(dt).name, shape, desc, loc))
        return not bad, bad[:5]
    check("2-D and 3-D arrays along the last axis: every row sorted on its own, argsort "
          "within the row, every dtype, both orders, NaN patterns in input order, memfd, "
          "inline and in the process", t_rows)

    def t_rows_request():
        a = random_keys(np.uint32, 64 * 500).reshape(64, 500)
        s = cm.sort(a, local=False)
        last = dict(cm.last)
        t = cm.sort(a, inplace=False, axis=1, local=False)
        b = a.copy()
        r = cm.sort(b, inplace=True, local=False)
        return (np.array_equal(s, np.sort(a, axis=-1)) and np.array_equal(t, s) and
                r is not None and np.array_equal(b, s) and last.get("n") == a.size and
                last.get("where") == "daemon", last)
    check("one request for all rows (n = rows x length), axis=1 as axis=-1 on 2-D, "
          "inplace=True sorts the rows where they lie", t_rows_request)
    def float_rows_bad(prep):
        # f32 and f64 rows that prep(a) sets up, both orders, in the process
        # and through the daemon, against the reference order bit for bit
        bad = []
        for dt in (np.float32, np.float64):
            a = prep(rng.standard_normal((40, 50)).astype(dt))
            for desc in (False, True):
                want = np.stack([r[ref_argsort(r, desc)] for r in a])
                for loc in (True, False):
                    if not bits_equal(cm.sort(a, descending=desc, local=loc), want):
                        bad.append((np.dtype(dt).name, desc, loc))
        return not bad, bad
    def zeros(a):
        a[::3, ::7] = -0.0
        a[1::3, ::5] = 0.0
        a[2, :] = -0.0
        return a
    check("float rows without NaNs: -0.0 before +0.0 in every row, both orders, in the "
          "process and through the daemon", lambda: float_rows_bad(zeros))
    def plain(a):
        # no NaN and no zero: the process sorts them with numpy's sort alone
        a[a == 0] = 1.5
        a[5, :] = 2.25          # a row of ties
        return a
    check("float rows with no NaN and no zero (numpy's sort alone in the process): exact, "
          "ties included, both orders, in the process and through the daemon",
          lambda: float_rows_bad(plain))
    check("rows of no keys and no rows keep their shape",
          lambda: (cm.sort(np.zeros((3, 0), np.float32)).shape == (3, 0) and
                   cm.argsort(np.zeros((3, 0), np.int32), local=False).shape == (3, 0) and
                   cm.sort(np.zeros((0, 4), np.uint64), local=False).shape == (0, 4), None))

    # Segments (issue 38): a 1-D array of segments of any lengths given by
    # offsets, each sorted on its own; argsort_segments' indices count
    # within the segment; through the daemon on both transports and in the
    # process; bad offsets a ValueError before anything is sent.
    def t_segments():
        bad = []
        lens = [0, 3, 1, 0, 57, 200, 1, 0, 33, 2]
        off = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
        n = int(off[-1])
        for c, how in ((cm, "memfd"), (ci, "inline")):
            for dt in DTYPES:
                a = random_keys(dt, n, special=True)
                for desc in (False, True):
                    wi = np.concatenate([ref_argsort(a[off[g]:off[g + 1]], desc)
                                         for g in range(len(lens))]).astype(np.int64)
                    want = np.concatenate([a[off[g]:off[g + 1]][
                        ref_argsort(a[off[g]:off[g + 1]], desc)] for g in range(len(lens))])
                    for loc in (False, True):
                        before = a.copy()
                        s = c.sort_segments(a, off, descending=desc, local=loc)
                        where = c.last.get("where")
                        i = c.argsort_segments(a, list(off), descending=desc, stable=True,
                                               local=loc)
                        if not (bits_equal(s, want) and np.array_equal(i, wi) and
                                bits_equal(a, before) and
                                where == ("local" if loc else "daemon")):
                            bad.append((how, np.dtype(dt).name, desc, loc, where))
        return not bad, bad[:5]
    check("sort_segments and argsort_segments: each segment (empty, one-key and long ones) "
          "sorted on its own, indices within it, every dtype, both orders, memfd, inline and "
          "in the process", t_segments)

    def t_segments_bad():
        a = np.arange(10, dtype=np.uint32)[::-1].copy()
        e1 = raises(ValueError, cm.sort_segments, a, [1, 10], local=False)
        e2 = raises(ValueError, cm.sort_segments, a, [0, 6, 4, 10], local=False)
        e3 = raises(ValueError, cm.argsort_segments, a, [0, 9], local=False)
        e4 = raises(ValueError, cm.sort_segments, a, [0], local=False)
        e5 = raises(TypeError, cm.sort_segments, a, [0.0, 10.0], local=False)
        r = cm.sort_segments(a, [0, 4, 10], local=False)
        one = cm.argsort_segments(np.zeros(0, np.float32), [0, 0, 0], local=False)
        return (e1 is not None and "start at 0" in str(e1) and
                e2 is not None and "decrease" in str(e2) and
                e3 is not None and "length 10" in str(e3) and e4 is not None and
                e5 is not None and list(r) == [6, 7, 8, 9, 0, 1, 2, 3, 4, 5] and
                list(a) == list(range(10))[::-1] and one.shape == (0,),
                (str(e1), str(e2), str(e3), list(r)))
    check("segments: offsets not from 0, decreasing or not ending at n are a ValueError; "
          "two segments of 4 and 6 sorted apart by the daemon; no keys", t_segments_bad)

    # Above LOCAL_ALWAYS_UPTO keys a segments call free to go either way is
    # routed by the Router, per dtype, order and number of segments (log2):
    # the daemon first, numpy here within the first DAEMON_SAMPLES + SAMPLES
    # calls, every answer right; a new count of segments is a new shape,
    # asked of the daemon first again.
    def t_segments_routed():
        c = gsort.Client(a_sock, local=True)    # whatever GSORT_NO_LOCAL says here
        rng = np.random.default_rng(38)
        a = rng.integers(0, 1 << 32, 1 << 14, dtype=np.uint32)
        first = np.linspace(0, a.shape[0], 513).astype(np.int64)
        want = np.concatenate([np.sort(a[first[g]:first[g + 1]]) for g in range(512)])
        wheres, ok = [], True
        for _ in range(gsort._local.DAEMON_SAMPLES + gsort._local.SAMPLES):
            ok = ok and np.array_equal(c.sort_segments(a, first), want)
            wheres.append(c.last["where"])
        few = [0, 5000, a.shape[0]]
        r = c.sort_segments(a, few)
        ok = ok and np.array_equal(r, np.concatenate([np.sort(a[:5000]), np.sort(a[5000:])]))
        wheres.append(c.last["where"])
        c.close()
        return (ok and wheres[0] == "daemon" and "local" in wheres[:-1] and
                wheres[-1] == "daemon", (wheres, c.local))

    check("segments above 2048 keys routed as measured: the daemon first, then numpy here, "
          "every answer right; another count of segments asked of the daemon first",
          t_segments_routed)

    def t_badargs():
        a = np.arange(10, dtype=np.uint32)
        return all([
            raises(ValueError, cm.sort, a[::2], inplace=True) is not None,
            raises(ValueError, cm.sort, np.frombuffer(b"\0" * 16, np.uint32),
                   inplace=True) is not None,
            raises(ValueError, cm.sort, [3, 1], inplace=True) is not None,
            raises(ValueError, cm.sort_by_key, a, np.arange(9, dtype=np.uint32)) is not None,
            raises(TypeError, cm.sort_by_key, a, np.arange(10, dtype=np.int16)) is not None,
            raises(TypeError, cm.sort_by_key, a, np.array([None] * 10)) is not None,
            raises(TypeError, cm.argsort, a, index_dtype=np.float64) is not None,
            raises(TypeError, cm.sort, a, algorithm="radix", params={"radix_bits": 4.5})
            is not None,
            raises(ValueError, cm.sort, a, params={"radix_bits": 4}) is not None,
        ])
    check("inplace on a strided, read-only or list input, mismatched or unsupported values, "
          "a float index_dtype or parameter, params without algorithm: ValueError/TypeError",
          t_badargs)

    def t_overlap():
        # two views of one buffer sorted in place (issue 34): refused before
        # anything is sent, both left as they were; apart, or copied out,
        # the same data sorts
        buf = np.array([5, 3, 9, 1, 7, 2, 8, 4], dtype=np.uint32)
        keep = buf.copy()
        e = raises(ValueError, cm.sort_by_key, buf[0:4], buf[2:6], inplace=True)
        e2 = raises(ValueError, cm.sort_by_key, buf, buf, inplace=True)
        rk, rv = cm.sort_by_key(buf[0:4], buf[2:6])        # copies: fine
        ok = (e is not None and "overlap" in str(e) and e2 is not None and
              np.array_equal(buf, keep) and list(rk) == [1, 3, 5, 9] and
              list(rv) == [2, 1, 9, 7])
        k, v = buf[0:4], buf[4:8]                          # adjacent, not overlapping
        cm.sort_by_key(k, v, inplace=True)
        return ok and list(buf) == [1, 3, 5, 9, 4, 2, 7, 8], (str(e), list(buf))
    check("sort_by_key(inplace=True) with overlapping keys and values: ValueError, nothing "
          "touched; copies and adjacent arrays still sort", t_overlap)

    # ---- daemon errors keep the connection ----
    def t_daemon_errors():
        total0 = cm.stats()["clients"]["total"]
        a = random_keys(np.uint32, 1000)
        e1 = raises(gsort.Error, cm.sort, a, algorithm="bogus")
        s1 = cm.sort(a)
        e2 = raises(gsort.Error, cm.sort, a, algorithm="shellsort", stable=True)
        e3 = raises(gsort.Error, ci.sort, a, device=7)
        e4 = raises(gsort.Error, cm.sort, a, algorithm="host", params={"nonsense_knob": 3})
        s2 = ci.argsort(a, stable=True)
        total1 = cm.stats()["clients"]["total"]
        return (e1 is not None and e1.code == "GS_ENOTFOUND" and "bogus" in e1.message and
                str(e1).startswith("gsortd: ") and not e1.closed and
                e2 is not None and e2.code == "GS_EUNSUPPORTED" and
                e3 is not None and e3.code in ("GS_ENOTFOUND", "GS_ENODEV") and
                e4 is not None and e4.code == "GS_EUNSUPPORTED" and
                same(s1, np.sort(a)) and np.array_equal(s2, np.argsort(a, kind="stable")) and
                total1 == total0, [str(e) for e in (e1, e2, e3, e4)] + [total0, total1])
    check("unknown algorithm (GS_ENOTFOUND, daemon message), stable shellsort, device 7, "
          "unknown parameter: gsort.Error; the same connections sort next", t_daemon_errors)

    def t_device_type():
        a = random_keys(np.uint32, 100)
        v = np.arange(a.size, dtype=np.uint32)
        sorts0 = cm.stats()["requests"]["by_op"]["sort"]
        errs = []
        for c in (cm, ci):
            for bad in (True, False, np.bool_(True), 1.0, "0"):
                for call, args in ((c.sort, (a,)), (c.argsort, (a,)),
                                   (c.sort_by_key, (a, v))):
                    e = raises(TypeError, call, *args, device=bad)
                    errs.append(e)
        sorts1 = cm.stats()["requests"]["by_op"]["sort"]
        # numpy integers are still device indices (daemon A has none: its error)
        e7 = raises(gsort.Error, ci.sort, a, device=np.int64(7))
        return (all(e is not None and "device" in str(e) and "integer" in str(e)
                    for e in errs) and "bool" in str(errs[0]) and sorts1 == sorts0 and
                e7 is not None and e7.daemon and e7.code in ("GS_ENOTFOUND", "GS_ENODEV"),
                ([str(e) for e in errs[:4]], sorts0, sorts1, str(e7)))
    check("device=True/False/np.bool_/1.0/'0': TypeError naming device, nothing sent; "
          "a numpy integer device goes to the daemon", t_device_type)

    def t_split():
        a = random_keys(np.uint32, 5000)
        v = np.arange(a.size, dtype=np.uint64)
        s1 = cm.sort(a, split=True)
        asked = dict(cm.last)
        k2, v2 = ci.sort_by_key(a, v, split=False)
        never = dict(ci.last)
        i3 = cm.argsort(a, stable=True, split=np.bool_(True))
        asked3 = dict(cm.last)
        s4 = cm.sort(a)
        plain = dict(cm.last)
        errs = [raises(TypeError, cm.sort, a, split=bad) for bad in ("yes", 1, 0.0)]
        ref = np.argsort(a, kind="stable")
        # asked: split, or declined with a reason; otherwise nothing said
        said = [bool(h.get("split_declined")) or h.get("plan") == "split"
                for h in (asked, never, asked3, plain)]
        return (same(s1, np.sort(a)) and same(k2, a[ref]) and same(v2, v[ref]) and
                np.array_equal(i3, ref) and same(s4, np.sort(a)) and
                said == [True, False, True, False] and
                all(e is not None and "split" in str(e) for e in errs),
                (said, asked.get("split_declined"), [str(e) for e in errs]))
    check("split=True: the daemon splits or says why not (c.last), split=False and None: "
          "nothing said; right answers either way; a non-bool split is a TypeError",
          t_split)

    def t_nodaemon():
        missing = os.path.join(tmp, "nobody.sock")
        e1 = raises(gsort.NoDaemonError, gsort.Client, missing)
        stale = os.path.join(tmp, "stale.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(stale)
        s.close()  # a socket file nobody listens on
        e2 = raises(gsort.NoDaemonError, gsort.Client, stale)
        return (e1 is not None and e2 is not None and isinstance(e1, gsort.Error) and
                e1.code == "GS_ENODAEMON" and missing in str(e1) and "gsortd" in str(e1) and
                stale in str(e2), (str(e1), str(e2)))
    check("no daemon (missing socket, stale socket file): NoDaemonError naming the path and "
          "gsortd", t_nodaemon)

    def t_stats():
        s0 = cm.stats()
        for _ in range(3):
            cm.sort(random_keys(np.int32, 100))
        cm.argsort(random_keys(np.int32, 100))
        s1 = cm.stats()
        host = [r for r in s1["routes"] if r["algorithm"] == "host"]
        return (s1["requests"]["by_op"]["sort"] - s0["requests"]["by_op"]["sort"] == 4 and
                s1["requests"]["by_op"]["stats"] - s0["requests"]["by_op"]["stats"] == 1 and
                s1["bytes"]["in"] > s0["bytes"]["in"] and len(host) == 1 and
                host[0]["device"] == -1 and s1["requests"]["errors"] >= 4 and
                s1["clients"]["current"] >= 2, (s0["requests"], s1["requests"]))
    check("stats: 4 sorts and 1 stats counted, bytes in grow, the host route, the errors",
          t_stats)

    def t_default_socket():
        saved = {k: os.environ.get(k) for k in ("GSORTD_SOCKET", "XDG_RUNTIME_DIR")}
        try:
            xdg = os.path.join(tmp, "xdg")
            os.makedirs(xdg, exist_ok=True)
            os.environ["GSORTD_SOCKET"] = "/x/y.sock"
            r1 = gsort.default_socket()
            del os.environ["GSORTD_SOCKET"]
            os.environ["XDG_RUNTIME_DIR"] = xdg
            r2 = gsort.default_socket()
            os.symlink(a_sock, os.path.join(xdg, "gsortd.sock"))
            r3 = gsort.default_socket()
            # Root's own gsortd listens on the system socket, so root's
            # clients look there whatever XDG_RUNTIME_DIR says.
            root = os.geteuid() == 0
            p3 = daemons[0].pid if root else gsort.Client().info()["pid"]
            os.environ["XDG_RUNTIME_DIR"] = "relative/dir"
            r4 = gsort.default_socket()
            want3 = "/run/gsortd/gsortd.sock" if root else os.path.join(xdg, "gsortd.sock")
            return (r1 == "/x/y.sock" and r2 == "/run/gsortd/gsortd.sock" and
                    r3 == want3 and p3 == daemons[0].pid and
                    r4 == "/run/gsortd/gsortd.sock", (r1, r2, r3, r4))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    check("default socket: $GSORTD_SOCKET, else $XDG_RUNTIME_DIR/gsortd.sock when it exists "
          "(not for root), else /run/gsortd/gsortd.sock", t_default_socket)

    def t_module():
        os.environ["GSORTD_SOCKET"] = a_sock
        a = random_keys(np.float32, 2000)
        s = gsort.sort(a, descending=True)
        i = gsort.argsort(a, stable=True)
        k, v = gsort.sort_by_key(a, np.arange(a.size, dtype=np.uint32), stable=True)
        c = gsort.default_client()
        return (same(s, np.sort(a)[::-1]) and np.array_equal(i, ref_argsort(a)) and
                bits_equal(v.astype(np.int64), i) and gsort.ping() > 0 and
                gsort.info()["pid"] == daemons[0].pid and "requests" in gsort.stats() and
                c.path == a_sock and gsort.default_client() is c)
    check("module functions gsort.sort/argsort/sort_by_key/ping/info/stats use one default "
          "client at $GSORTD_SOCKET", t_module)

    def t_threads():
        results = {}
        # All four hold their clients at once, so no id() can be reused.
        together = threading.Barrier(4, timeout=60)

        def work(t):
            a = np.random.default_rng(t).integers(-9, 9, 20000 + t)
            results[t] = (np.array_equal(gsort.argsort(a, stable=True),
                                         np.argsort(a, kind="stable")),
                          id(gsort.default_client()))
            together.wait()
        ths = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        return (len(results) == 4 and all(r[0] for r in results.values()) and
                len({r[1] for r in results.values()}) == 4, results)
    check("4 threads sorting through the module functions: right results, a client each",
          t_threads)

    def t_closed():
        c = gsort.Client(a_sock)
        with c:
            c.ping()
        return raises(ValueError, c.sort, np.arange(3, dtype=np.uint32)) is not None
    check("a closed Client (after with) refuses calls with ValueError", t_closed)

    # ---- limits and timeouts (daemon C) ----
    if c_sock:
        def t_limit_memfd():
            with gsort.Client(c_sock) as c:
                big = random_keys(np.uint64, 200000)       # 1.6 MB > 1 MiB
                e = raises(gsort.Error, c.sort, big)
                a = random_keys(np.uint64, 1000)
                s = c.sort(a)
                total = c.stats()["clients"]["total"]
            return (e is not None and e.code == "GS_ETOOBIG" and "max_request_bytes" in
                    e.message and not e.closed and same(s, np.sort(a)) and total == 1,
                    (str(e), total))
        check("memfd request above max_request_bytes: GS_ETOOBIG, the connection serves on",
              t_limit_memfd)

        def t_limit_inline():
            with gsort.Client(c_sock, memfd=False) as c:
                e1 = raises(gsort.Error, c.argsort, random_keys(np.uint64, 100000))  # reply 1.2 MB
                ok1 = same(c.sort(np.arange(5, dtype=np.uint64)[::-1]),
                           np.arange(5, dtype=np.uint64))
                e2 = raises(gsort.Error, c.sort, random_keys(np.uint64, 200000))  # 1.6 MB sent
                a = random_keys(np.int32, 1000)
                s = c.sort(a)
            return (e1 is not None and e1.code == "GS_ETOOBIG" and not e1.closed and ok1 and
                    e2 is not None and e2.code == "GS_ETOOBIG" and e2.closed and
                    "max_request_bytes" in e2.message and same(s, np.sort(a)),
                    (str(e1), str(e2)))
        check("inline: a reply above the limit is GS_ETOOBIG (connection kept); a payload "
              "above it GS_ETOOBIG with the connection closed, and the Client reconnects",
              t_limit_inline)

        def t_idle():
            # The only open connection to C: the idle close in the log is its.
            with gsort.Client(c_sock) as c:
                before = c.stats()["clients"]
                closed = wait_log(c_log, "idle (idle_timeout)", 15)
                a = random_keys(np.float64, 1000)
                s = c.sort(a)
                after = c.stats()["clients"]
            return (closed and same(s, np.sort(a)) and
                    after["total"] == before["total"] + 1 and after["current"] == 1,
                    (before, after, open(c_log).read()[-2000:]))
        check("after the daemon closed an idle connection, the next sort reconnects and works",
              t_idle)

    def t_timeout():
        # A listener that never answers: the call gives up after the timeout.
        path = os.path.join(tmp, "mute.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        try:
            c = gsort.Client(path, timeout=0.3)
            e = raises(gsort.Error, c.ping)
            return (e is not None and e.code == "GS_EIO" and "timed out" in str(e) and
                    e.closed, str(e))
        finally:
            srv.close()
    check("timeout=0.3 against a listener that never replies: Error GS_EIO 'timed out'",
          t_timeout)

    # ---- an OpenCL device (daemon B): one program, several sorts ----
    if b_sock:
        cb = gsort.Client(b_sock)
        cbi = gsort.Client(b_sock, memfd=False)

        def t_devinfo():
            i = cb.info()
            en = [d for d in i["devices"] if d["enabled"]]
            return len(en) >= 1, i["devices"]
        check("daemon B serves at least one OpenCL device", t_devinfo)

        # The same request shape as test_daemon's device sorts (u32 keys,
        # u32 values, ascending, default parameters): one program, shared
        # through tests/pcache.
        for c, how in ((cb, "memfd"), (cbi, "inline")):
            def t_dev():
                n = 60000 + (1001 if c is cbi else 0)
                k = random_keys(np.uint32, n)
                v = np.arange(n, dtype=np.uint32)
                t0 = time.time()
                sk, sv = c.sort_by_key(k, v, algorithm="radix")
                dev = c.last["device"]
                return (same(sk, np.sort(k)) and bits_equal(k[sv], sk) and
                        np.array_equal(np.sort(sv), v) and isinstance(dev, dict) and
                        dev["index"] >= 0 and c.last["algorithm"] == "radix" and
                        c.last["plan"] == "override" and "fallback" not in c.last and
                        c.last["zero_copy"] == (c is cb),
                        "%.1f s, %s" % (time.time() - t0, c.last))
            check("%s: radix on the OpenCL device sorts keys and values like numpy "
                  "(device, algorithm and plan in last)" % how, t_dev)

        def t_dev_topk():
            # a named device algorithm sorts the rows whole: stably, so
            # ties at the k-th key are still the earliest; an unstable one
            # is refused, not answered with other ties
            a = rng.integers(0, 4, 4 * 6000).astype(np.uint32).reshape(4, 6000)
            t0 = time.time()
            v, i = cb.topk(a, 300, algorithm="radix")
            dev = cb.last["device"]
            e = raises(gsort.Error, cb.topk, a, 300, algorithm="shellsort")
            return (topk_agrees(a, 300, True, True, v, i) and isinstance(dev, dict) and
                    cb.last["algorithm"] == "radix" and e is not None and
                    e.code == "GS_EUNSUPPORTED",
                    "%.1f s, %s, %s" % (time.time() - t0, cb.last, e))
        check("topk with radix on the OpenCL device: rows of 4 distinct keys, ties to the "
              "earliest; shellsort (unstable) refused", t_dev_topk)

    topk_checks(a_sock, cm, ci)
    narrow_checks(a_sock)
    lexsort_checks(a_sock, cm, ci)
    local_checks(a_sock)
    native_checks(a_sock)
    bits_checks(a_sock, cm, ci)


# ---- lexsort (issue 39) ----

def ref_lexsort(keys, desc):
    """np.lexsort of each key's rank (np.unique's: -0.0 and +0.0 one
    value, NaNs one value after +inf), negated where descending: an
    independent reference for any mix of dtypes and directions."""
    ranks = []
    for k, d in zip(keys, desc):
        r = np.unique(k, return_inverse=True)[1].astype(np.int64)
        ranks.append(-r if d else r)
    return np.lexsort(ranks)


def lex_key(rng, dt, n):
    """n keys of dt drawn from a few values, so that ties decide: the
    extremes, zeros of both signs, infinities and NaNs of floats."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind == "f":
        pool = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3.0, -np.nan],
                        dtype=dt)
    else:
        info = np.iinfo(dt)
        pool = np.array([info.min, info.max, 0, 1, info.max // 2], dtype=dt)
    return rng.choice(pool, n)


def lexsort_checks(sock, cm, ci):
    """Client.lexsort against ref_lexsort (and np.lexsort itself where every
    key ascends): up to three keys of every dtype it takes, mixed, each
    ascending or descending, through the daemon on both transports and on
    the local path; keys wider than 64 bits together (chained sorts); the
    argument errors."""
    cl = gsort.Client(sock, local=True)
    cl.router = _AlwaysLocal()
    rng = np.random.default_rng(39)
    dts = ("bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "uint32",
           "float32", "int64", "uint64", "float64")
    for c, local, label in ((cm, False, "daemon memfd"), (ci, False, "daemon inline"),
                            (cl, None, "local")):
        def t_mix():
            bad = []
            for i in range(60):
                m = 1 + i % 3
                ks = [lex_key(rng, dts[rng.integers(len(dts))], 2000) for _ in range(m)]
                d = [bool(rng.integers(2)) for _ in range(m)]
                got = c.lexsort(ks, descending=d, local=local)
                if not np.array_equal(got, ref_lexsort(ks, d)):
                    bad.append(([k.dtype.name for k in ks], d))
                if not any(d) and not np.array_equal(got, np.lexsort(ks)):
                    bad.append(("np.lexsort", [k.dtype.name for k in ks]))
                # the daemon's own lexsort: one request, its keys packed there
                if local is False and "pack" not in c.last.get("times_ms", {}):
                    bad.append(("not packed by the daemon", c.last))
            return not bad, bad[:3]
        check("lexsort, %s: 60 mixes of 1 to 3 keys of every dtype, each ascending or "
              "descending, ties, +-0, NaNs: the reference's order" % label, t_mix)

    def t_wide():
        ks = [lex_key(rng, "uint64", 5000), lex_key(rng, "float32", 5000),
              lex_key(rng, "int64", 5000), lex_key(rng, "int16", 5000)]
        got = cm.lexsort(ks, local=False)
        got2 = cm.lexsort(ks, descending=[True, False, True, False], local=False,
                          index_dtype=np.uint32)
        return (np.array_equal(got, np.lexsort(ks)) and got2.dtype == np.uint32 and
                np.array_equal(got2, ref_lexsort(ks, [True, False, True, False])))
    check("lexsort of 4 keys, 176 bits (four sorts chained: no two neighbours fit 64 "
          "bits together), both directions mixed; "
          "uint32 indices", t_wide)

    def t_two_u32():
        a = rng.integers(0, 2**32, 300000, dtype=np.uint32)
        b = rng.integers(0, 50, 300000).astype(np.uint32)
        got = cm.lexsort((a, b), local=False)
        rows = np.stack((a, b))
        return (np.array_equal(got, np.lexsort((a, b))) and
                np.array_equal(cm.lexsort(rows, local=False), got) and
                cm.last["algorithm"] != "numpy" and cm.last["times_ms"].get("pack", 0) > 0)
    check("lexsort of two u32 keys (one request: the daemon packs one 64-bit word a row "
          "and argsorts them), also from a 2-D array of keys", t_two_u32)

    def t_errors():
        e1 = raises(ValueError, cm.lexsort, (np.zeros(3), np.zeros(4)))
        e2 = raises(TypeError, cm.lexsort, (np.zeros(3, dtype=np.complex64),))
        e3 = raises(ValueError, cm.lexsort, (np.zeros(3), np.zeros(3)), descending=[True])
        e4 = raises(TypeError, cm.lexsort, [])
        empty = cm.lexsort((np.zeros(0, np.uint32), np.zeros(0, np.float64)))
        return (all(e is not None for e in (e1, e2, e3, e4)) and empty.shape == (0,),
                (e1, e2, e3, e4, empty))
    check("lexsort refuses keys of different lengths, complex keys, a descending list of "
          "the wrong length and no keys; no keys' rows give no indices", t_errors)


# ---- top-k (issue 38) ----

def ref_topk(a, k, largest):
    """(values, indices) of each row's first k in the daemon's order, ties
    to the earliest: a stable argsort of the order-preserving words
    (ref_argsort), computed row by row here, independent of the client."""
    rows = a.reshape(-1, a.shape[-1])
    idx = np.stack([ref_argsort(r, largest)[:k] for r in rows]) if rows.shape[0] else \
        np.empty((0, k), np.int64)
    vals = np.take_along_axis(rows, idx, -1)
    shape = a.shape[:-1] + (k,)
    return vals.reshape(shape), idx.reshape(shape)


def topk_keys(dt, n, kind):
    """Keys for the top-k checks: "mixed" (many duplicates; floats with
    +-inf, both zeros and NaNs of several bit patterns), "ties" (nine in
    ten the smallest, the largest or 3, the rest mixed), "up" / "down" (sorted runs with
    duplicates: the local path's sample sees structure)."""
    a = random_keys(dt, n, special=True)
    if kind == "ties":
        # nine in ten the smallest, 3 or the largest but NaN: ties at the
        # k-th key in both directions
        t = np.sort(a[~np.isnan(a)]) if a.dtype.kind == "f" else np.sort(a)
        pick = rng.random(n) < 0.9
        a[pick] = rng.choice(np.array([t[0], 3, t[-1]], a.dtype), size=int(pick.sum()))
    elif kind == "up":
        a = np.sort(a)
    elif kind == "down":
        a = np.sort(a)[::-1].copy()
    if a.dtype.kind == "f":
        u = a.view("u%d" % a.itemsize)
        nans = np.flatnonzero(np.isnan(a))
        one = u.dtype.type(1)
        u[nans[::3]] |= one << u.dtype.type(8 * a.itemsize - 1)      # negative NaNs
        u[nans[1::3]] ^= one                                          # other payloads
        u[nans[2::5]] ^= u.dtype.type(0x10)
    return a


def topk_agrees(a, k, largest, ordered, v, i, idt=np.int64):
    """v, i (a topk's answer) against ref_topk: the same shape and dtypes,
    the values bit for bit; sorted: in order, else as a set of (value bits,
    index) pairs."""
    rv, ri = ref_topk(a, k, largest)
    if v.shape != rv.shape or i.shape != ri.shape or v.dtype != a.dtype or i.dtype != idt:
        return False
    u = np.dtype("u%d" % a.itemsize)
    r = int(np.prod(a.shape[:-1]))
    vb, rb = v.view(u).reshape(r, k), rv.view(u).reshape(r, k)
    ii, rii = i.reshape(r, k).astype(np.int64), ri.reshape(r, k)
    if not ordered:
        o = np.argsort(ii, axis=-1)
        ro = np.argsort(rii, axis=-1)
        vb, ii = np.take_along_axis(vb, o, -1), np.take_along_axis(ii, o, -1)
        rb, rii = np.take_along_axis(rb, ro, -1), np.take_along_axis(rii, ro, -1)
    return bool(np.array_equal(vb, rb) and np.array_equal(ii, rii))


class _AlwaysLocal:
    """A Router stand-in that sends every call to the local path."""

    def choose(self, shape, n):
        return True

    def record(self, shape, n, local, ms):
        pass


def topk_checks(sock, cm, ci):
    """Client.topk against ref_topk: every dtype, both directions, sorted
    and not, k in {0, 1, 7, the row's length}, 1-D and 2-D, through the
    daemon on both transports (local=False) and on the local path."""
    cl = gsort.Client(sock, local=True)
    cl.router = _AlwaysLocal()
    routes = ((cm, False, "daemon memfd"), (ci, False, "daemon inline"),
              (cl, None, "local"))
    shapes = ((100000,), (5, 1000), (2000, 16), (1000,))
    for dt in DTYPES:
        name = np.dtype(dt).name
        for shape in shapes:
            kinds = ("mixed", "ties", "up", "down") if len(shape) == 1 else ("mixed", "ties")
            for kind in kinds:
                a = topk_keys(dt, int(np.prod(shape)), kind).reshape(shape)
                keep = a.copy()
                length = shape[-1]

                def t_topk():
                    bad = []
                    for c, loc, how in routes:
                        for largest in (True, False):
                            for ordered in (True, False):
                                for k in (0, 1, 7, length):
                                    v, i = c.topk(a, k, largest=largest, sorted=ordered,
                                                  local=loc)
                                    where = c.last.get("where")
                                    if not (topk_agrees(a, k, largest, ordered, v, i) and
                                            where == how.split()[0] and
                                            (loc is None or c.last["zero_copy"] ==
                                             (c is cm))):
                                        bad.append((how, largest, ordered, k, where))
                    return not bad and bits_equal(a, keep), bad[:6]
                check("topk %s %s %s: values bit for bit and indices as a stable sort's "
                      "first k (ties to the earliest, NaNs first largest), k 0/1/7/all, both "
                      "directions, sorted and not, daemon memfd, inline and local; input "
                      "untouched" % (name, shape, kind), t_topk)

    def t_nan_order():
        # largest: NaNs (of any bits) come first, in input order; then +inf,
        # +0.0 before -0.0; smallest: -inf, -0.0 before +0.0, NaNs last
        a = np.array([1.0, np.nan, -0.0, np.inf, 0.0, -np.inf, np.nan, -0.0, 0.0],
                     np.float64)
        a.view(np.uint64)[6] |= np.uint64(1 << 63)
        want_l = [1, 6, 3, 0, 4, 8, 2, 7, 5]
        want_s = [5, 2, 7, 4, 8, 0, 3, 1, 6]
        out = []
        for c, loc, how in routes:
            vl, il = c.topk(a, 9, local=loc)
            vs, is_ = c.topk(a, 4, largest=False, local=loc)
            out.append(list(il) == want_l and list(is_) == want_s[:4] and
                       bits_equal(vl, a[want_l]) and bits_equal(vs, a[want_s[:4]]))
        return all(out), out
    check("topk float order spelled out: largest NaNs first (a negative NaN's bits kept), "
          "+inf, +0.0 before -0.0; smallest -inf, -0.0 before +0.0", t_nan_order)

    def t_shapes():
        a = topk_keys(np.int32, 3 * 4 * 50, "mixed").reshape(3, 4, 50)
        res = []
        for c, loc, how in routes:
            v, i = c.topk(a, 5, local=loc)
            res.append(v.shape == (3, 4, 5) and topk_agrees(a, 5, True, True, v, i))
            v, i = c.topk(a, 3, axis=2, largest=False, index_dtype=np.uint32, local=loc)
            res.append(topk_agrees(a, 3, False, True, v, i, np.uint32))
        e0 = np.zeros((0, 6), np.float32)
        v, i = cm.topk(e0, 4, local=False)
        res.append(v.shape == (0, 4) and i.shape == (0, 4) and v.dtype == np.float32)
        v, i = cm.topk(np.zeros(0, np.uint64), 0)
        res.append(v.shape == (0,) and i.shape == (0,))
        v, i = gsort.topk(np.array([3, 1, 2], np.uint32), 2)
        res.append(list(v) == [3, 2] and list(i) == [0, 2])
        v, i = cm.topk([0.5, -1.0, 0.25], 1, largest=False)
        res.append(list(v) == [-1.0] and list(i) == [1])
        return all(res), res
    check("topk of a 3-D array (axis=-1 and axis=2), a uint32 index_dtype, no rows, no keys, "
          "the module-level gsort.topk and a list", t_shapes)

    def t_host():
        # a named algorithm sorts the rows whole and takes the first k
        a = topk_keys(np.float32, 4 * 3000, "mixed").reshape(4, 3000)
        bad = []
        for c in (cm, ci):
            for largest in (True, False):
                v, i = c.topk(a, 100, largest=largest, algorithm="host")
                if not (topk_agrees(a, 100, largest, True, v, i) and
                        c.last["algorithm"] == "host" and c.last["where"] == "daemon"):
                    bad.append((c.use_memfd, largest, c.last.get("algorithm")))
        return not bad, bad
    check("topk with algorithm='host' (rows sorted whole): the same answer", t_host)

    def t_topk_bad():
        a = np.arange(20, dtype=np.uint32).reshape(4, 5)
        sorts0 = cm.stats()["requests"]["by_op"]["sort"]
        errs = [
            raises(ValueError, cm.topk, a, 6),
            raises(ValueError, cm.topk, a, 6, local=False),
            raises(ValueError, ci.topk, a.ravel(), 21, local=False),
            raises(ValueError, cm.topk, a, -1),
            raises(TypeError, cm.topk, a, 2.0),
            raises(TypeError, cm.topk, a, True),
            raises(TypeError, cm.topk, a, "2"),
            raises(ValueError, cm.topk, a, 2, axis=0),
            raises(ValueError, cm.topk, np.float64(3.0), 1),
            raises(TypeError, cm.topk, a.astype(np.complex64), 2),
            raises(TypeError, cm.topk, a, 2, index_dtype=np.float32),
            raises(TypeError, cm.topk, a, 2, device=True),
        ]
        sorts1 = cm.stats()["requests"]["by_op"]["sort"]
        return (all(e is not None for e in errs) and "k = 6" in str(errs[0]) and
                "0 .. 5" in str(errs[0]) and sorts1 == sorts0,
                ([str(e) for e in errs], sorts0, sorts1))
    check("topk: k above the row's length or negative is a ValueError, a non-integer k a "
          "TypeError, axis 0, a 0-D array, complex keys, a float index_dtype, device=True "
          "refused; nothing sent", t_topk_bad)

    def t_topk_daemon_refuses():
        # what the client would have refused, said to the daemon itself
        c = gsort.Client(sock, memfd=False)
        try:
            c.topk(np.arange(10, dtype=np.uint32), 3, local=False)      # connected, fine
            rid = c._take_id()
            c._send({"v": 1, "op": "sort", "id": rid, "dtype": "u32", "n": 4,
                     "topk": 5, "payload_bytes": 16}, [memoryview(b"\0" * 16)])
            h, pb = c._recv_header()
            v, i = c.topk(np.arange(10, dtype=np.uint32), 3, local=False)
            return (h.get("ok") is False and h["error"]["code"] == "GS_EINVAL" and
                    "topk" in h["error"]["message"] and list(v) == [9, 8, 7] and
                    list(i) == [9, 8, 7], h)
        finally:
            c.close()
    check("the daemon refuses topk 5 of 4 keys (GS_EINVAL) and serves the connection next",
          t_topk_daemon_refuses)
    cl.close()


# ---- 8- and 16-bit keys (issue 39) ----

class bfloat(np.void):
    """Stands in for ml_dtypes.bfloat16 where that is not installed: numpy
    names np.dtype((bfloat, 2)) "bfloat16", 2 bytes, as ml_dtypes' is."""


def bf16_dtype():
    try:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return np.dtype((bfloat, 2))


# (label, the array's dtype, key_type, wire name, float layout (exponent
# bits, mantissa bits) or None)
NARROW = [("uint8", np.dtype(np.uint8), None, "u8", None),
          ("int8", np.dtype(np.int8), None, "i8", None),
          ("uint16", np.dtype(np.uint16), None, "u16", None),
          ("int16", np.dtype(np.int16), None, "i16", None),
          ("float16", np.dtype(np.float16), None, "f16", (5, 10)),
          ("bf16 of uint16", np.dtype(np.uint16), "bf16", "bf16", (8, 7)),
          ("bf16 of int16", np.dtype(np.int16), "bf16", "bf16", (8, 7)),
          ("bfloat16 dtype", bf16_dtype(), None, "bf16", (8, 7))]

# bit patterns: both zeros, both infinities, NaNs of several payloads and
# signs, the smallest and largest subnormals, the smallest normal, one
F16_SPECIAL = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00, 0xFFFF, 0x7FFF,
               0xFC01, 0x7D55, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x3C00]
BF16_SPECIAL = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC0, 0xFFFF, 0x7FFF,
                0xFF81, 0x7FAA, 0x0001, 0x8001, 0x007F, 0x807F, 0x0080, 0x3F80]


def narrow_keys(kind, n, special=0.15):
    """n keys for one of NARROW, in its array dtype: many duplicates;
    floats as their bits, with F16_SPECIAL / BF16_SPECIAL mixed in."""
    label, dt, key_type, wire, fl = kind
    if fl is None:
        return random_keys(dt, n)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-9 if fl[0] == 5 else -45, 6, n)
    x = np.where(rng.random(n) < 0.4, rng.integers(-20, 20, n).astype(np.float64), x)
    if fl[0] == 5:
        with np.errstate(over="ignore"):
            w = x.astype(np.float16).view(np.uint16)
    else:       # bfloat16: a float32's upper half (rounded toward zero)
        w = (x.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    pick = rng.random(n) < special
    w[pick] = rng.choice(np.array(F16_SPECIAL if fl[0] == 5 else BF16_SPECIAL, np.uint16),
                         size=int(pick.sum()))
    return w.view(dt)


def float_bits_key(w, ebits, mbits):
    """Each float's order in gsortd's total order, from its bits alone
    (sign, exponent, mantissa): -inf < ... < -0.0 < +0.0 < ... < +inf < every
    NaN (one key)."""
    w = w.astype(np.int64)
    body = ebits + mbits
    mag = w & ((1 << body) - 1)
    neg = ((w >> body) & 1) == 1
    nan = ((mag >> mbits) == (1 << ebits) - 1) & ((mag & ((1 << mbits) - 1)) != 0)
    k = np.where(neg, (1 << body) - 1 - mag, (1 << body) + mag)
    return np.where(nan, 1 << (body + 1), k)


def narrow_key(kind, a):
    """int64 keys whose numeric order is gsortd's order of a's keys."""
    fl = kind[4]
    if fl is None:
        return a.astype(np.int64)
    return float_bits_key(a.view(np.uint16), *fl)


def narrow_ref(kind, a, desc):
    """The stable order, descending its exact reverse (ties in input order)."""
    k = narrow_key(kind, a)
    return np.argsort(-k if desc else k, kind="stable")


def narrow_checks(sock):
    """8- and 16-bit keys (issue 39): u8, i8, u16, i16, f16 and bf16 (a
    uint16 or int16 array with key_type="bf16", and an array of a dtype
    named bfloat16) sorted, argsorted and sorted by key with u32 and u64
    values against narrow_ref, bits compared: through the daemon
    (Client(local=False), memfd and inline: the reply names the wire
    dtype) and in the process (Client(local=True)); rows, top-k and
    segments by the daemon (local=False, a named route) and in the
    process (local=True, which cl's router always takes); key_type's
    errors."""
    cd = gsort.Client(sock, local=False)
    cdi = gsort.Client(sock, local=False, memfd=False)
    cl = gsort.Client(sock, local=True)
    cl.router = _AlwaysLocal()
    routes = ((cd, "daemon", "daemon memfd"), (cdi, "daemon", "daemon inline"),
              (cl, "local", "local"))
    for kind in NARROW:
        label, dt, kt, wire, fl = kind
        data = {n: narrow_keys(kind, n) for n in (1001, 100003)}
        for c, where, how in routes:
            def t_flat():
                bad = []
                for n, a in data.items():
                    keep = a.copy()
                    key = narrow_key(kind, a)
                    v32 = np.arange(n, dtype=np.uint32)
                    v64 = np.arange(n, dtype=np.uint64) + np.uint64(1 << 40)
                    for desc in (False, True):
                        r = narrow_ref(kind, a, desc)
                        for st in (False, True):
                            kw = dict(descending=desc, stable=st, key_type=kt)
                            what = (n, "desc" if desc else "asc", "stable" if st else "")

                            def said(call):
                                if c.last.get("where") != where or \
                                        (where == "daemon" and c.last.get("dtype") != wire):
                                    bad.append(what + (call, "where/dtype",
                                                       c.last.get("where"),
                                                       c.last.get("dtype")))
                            s = c.sort(a, **kw)
                            said("sort")
                            if not bits_equal(s, a[r]):
                                bad.append(what + ("sort",))
                            i = c.argsort(a, **kw)
                            said("argsort")
                            if not (np.array_equal(i, r) if st else
                                    np.array_equal(np.sort(i), np.arange(n)) and
                                    np.array_equal(key[i], key[r])):
                                bad.append(what + ("argsort",))
                            for v, base in ((v32, 0), (v64, 1 << 40)):
                                sk, sv = c.sort_by_key(a, v, **kw)
                                said("sort_by_key")
                                p = (sv - sv.dtype.type(base)).astype(np.int64)
                                good = (sv.dtype == v.dtype and
                                        np.array_equal(np.sort(p), np.arange(n)) and
                                        bits_equal(sk, a[p]) and
                                        np.array_equal(key[p], key[r]))
                                if st:
                                    good = good and np.array_equal(p, r)
                                if not good:
                                    bad.append(what + ("sort_by_key", v.dtype.name))
                    if not bits_equal(a, keep):
                        bad.append((n, "input changed"))
                return not bad, bad[:8]
            check("%s keys, %s: sort (bits, NaN patterns in input order), argsort, "
                  "sort_by_key with u32 and u64 values, n 1001 and 100003, both orders, "
                  "stable and not, against a reference from the bits%s" %
                  (label, how, "; the reply says %s" % wire if where == "daemon" else ""),
                  t_flat)

    def t_specials():
        # every special pattern, each twice, in one array: its exact order
        bad = []
        for kind in NARROW:
            label, dt, kt, wire, fl = kind
            if fl is None:
                info = np.iinfo(dt)
                a = np.array([3, info.max, 0, info.min, 1, info.max, info.min, 0], dt)
            else:
                sp = F16_SPECIAL if fl[0] == 5 else BF16_SPECIAL
                a = np.array(sp + sp[::-1], np.uint16).view(dt)
            for c, where, how in routes:
                for desc in (False, True):
                    r = narrow_ref(kind, a, desc)
                    s = c.sort(a, descending=desc, key_type=kt)
                    i = c.argsort(a, descending=desc, stable=True, key_type=kt)
                    if not (bits_equal(s, a[r]) and np.array_equal(i, r) and
                            c.last["where"] == where):
                        bad.append((label, how, desc, s.view("u%d" % dt.itemsize)[:12]))
        return not bad, bad[:6]
    check("8- and 16-bit keys, the special values spelled out (both zeros, both infinities, "
          "NaNs of several payloads and signs, subnormals; integer extremes), each twice: "
          "sort and stable argsort, both orders, every route", t_specials)

    def t_float_order():
        # float16: -inf first, -0.0 before +0.0, NaNs last (first, descending)
        # with their bits in input order; bf16 words the same, by their bits
        bad = []
        f = np.array([1.0, np.nan, -0.0, np.inf, 0.0, -np.inf, np.nan, -0.0, 0.0], np.float16)
        f.view(np.uint16)[6] = 0xFE01                  # a negative NaN, another payload
        want = [5, 2, 7, 4, 8, 0, 3, 1, 6]
        wantd = [1, 6, 3, 0, 4, 8, 2, 7, 5]
        b = np.array([0x3F80, 0x7FC0, 0x8000, 0x7F80, 0x0000, 0xFF80, 0xFF81, 0x8000,
                      0x0000], np.uint16)
        for c, where, how in routes:
            for x, kt in ((f, None), (b, "bf16")):
                s, sd = c.sort(x, key_type=kt), c.sort(x, descending=True, key_type=kt)
                if not (bits_equal(s, x[want]) and bits_equal(sd, x[wantd])):
                    bad.append((how, x.dtype.name, s.view(np.uint16), sd.view(np.uint16)))
        return not bad, bad
    check("float16 and bf16 order spelled out: -inf, -0.0 before +0.0, +inf, NaNs last in "
          "input order (a negative NaN's bits kept); descending the exact reverse, NaNs first",
          t_float_order)

    def t_local_small():
        # a Client free to choose sorts small arrays here
        c = gsort.Client(sock, local=True)
        try:
            bad = []
            for kind in NARROW:
                label, dt, kt, wire, fl = kind
                a = narrow_keys(kind, 200)
                for desc in (False, True):
                    r = narrow_ref(kind, a, desc)
                    s = c.sort(a, descending=desc, key_type=kt)
                    w1 = c.last["where"]
                    i = c.argsort(a, descending=desc, stable=True, key_type=kt)
                    w2 = c.last["where"]
                    sk, sv = c.sort_by_key(a, np.arange(200, dtype=np.uint32),
                                           descending=desc, stable=True, key_type=kt)
                    w3 = c.last["where"]
                    if not (w1 == w2 == w3 == "local" and bits_equal(s, a[r]) and
                            np.array_equal(i, r) and bits_equal(sk, a[r]) and
                            np.array_equal(sv, r)):
                        bad.append((label, desc, w1, w2, w3))
            return not bad, bad
        finally:
            c.close()
    check("Client(local=True), 200 keys of every 8- and 16-bit kind: sort, argsort and "
          "sort_by_key ran here, right", t_local_small)

    def t_router():
        # the Router's shapes are keyed by wire dtype: u16 and bf16 words
        # apart; every call right whichever route it took
        c = gsort.Client(sock, local=True)
        try:
            bad = []
            x = narrow_keys(NARROW[5], 5000)
            for _ in range(12):
                for kt in (None, "bf16"):
                    kind = NARROW[5] if kt else NARROW[2]
                    s = c.sort(x, key_type=kt)
                    if not bits_equal(s, x[narrow_ref(kind, x, False)]):
                        bad.append((kt, c.last["where"]))
            shapes = {sh[0] for sh in c.router.table()}
            return not bad and {"u16", "bf16"} <= shapes, (bad, shapes)
        finally:
            c.close()
    check("Router with 16-bit keys: u16 and bf16 (the same uint16 array) timed as two shapes; "
          "12 sorts of each right on whichever route", t_router)

    def t_shared():
        # an array of gsort.empty sorted where it lies: keys_offset a
        # multiple of the key width only (2 and 1 bytes here)
        bad = []
        for dt, off in ((np.uint16, 3), (np.int8, 5), (np.float16, 1)):
            kind = [k for k in NARROW if k[1] == np.dtype(dt) and k[2] is None][0]
            x = gsort.empty(20011, dt)
            x[...] = narrow_keys(kind, x.shape[0])
            part = x[off:]
            want = part[narrow_ref(kind, part, True)].copy()
            cd.sort(part, descending=True, inplace=True)
            if not (bits_equal(part, want) and cd.last["zero_copy"] and
                    cd.last["dtype"] == kind[3]):
                bad.append(np.dtype(dt).name)
        return not bad, bad
    check("gsort.empty arrays of u16, i8 and f16 sorted in place by the daemon from an odd "
          "key offset (zero copy)", t_shared)

    def t_rows():
        bad = []
        for kind in NARROW:
            label, dt, kt, wire, fl = kind
            for shape in ((37, 129), (3, 4, 50), (1, 1000)):
                a = narrow_keys(kind, int(np.prod(shape))).reshape(shape)
                rows = a.reshape(-1, shape[-1])
                for desc in (False, True):
                    wi = np.stack([narrow_ref(kind, r, desc) for r in rows]).reshape(shape)
                    want = np.take_along_axis(a, wi, -1)
                    for c, where in ((cd, "daemon"), (cdi, "daemon"), (cl, "local")):
                        s = c.sort(a, descending=desc, key_type=kt)
                        w1 = c.last["where"]
                        i = c.argsort(a, descending=desc, stable=True, key_type=kt)
                        w2 = c.last["where"]
                        if not (s.shape == shape and bits_equal(s, want) and
                                np.array_equal(i, wi) and w1 == w2 == where):
                            bad.append((label, shape, desc, where, w1, w2))
                b = a.copy()
                r = cd.sort(b, inplace=True, key_type=kt, local=False)
                if not (r is b and bits_equal(b, np.take_along_axis(
                        a, np.stack([narrow_ref(kind, q, False) for q in rows]).reshape(shape),
                        -1))):
                    bad.append((label, shape, "inplace"))
        return not bad, bad[:6]
    check("2-D and 3-D arrays of 8- and 16-bit keys along the last axis: by the daemon "
          "(memfd, inline) and in the process, every row right, argsort within the row, "
          "both orders, in place", t_rows)

    def t_topk():
        bad = []
        for kind in NARROW:
            label, dt, kt, wire, fl = kind
            for shape in ((100003,), (50, 300)):
                a = narrow_keys(kind, int(np.prod(shape))).reshape(shape)
                rows = a.reshape(-1, shape[-1])
                for largest in (True, False):
                    ref = np.stack([narrow_ref(kind, r, largest) for r in rows])
                    for k in (0, 1, 7, 200, shape[-1]):
                        for ordered in (True, False):
                            c, where = ((cd, "daemon"), (cdi, "daemon"),
                                        (cl, "local"))[(k + ordered) % 3]
                            v, i = c.topk(a, k, largest=largest, sorted=ordered, key_type=kt)
                            ri = ref[:, :k]
                            ii = i.reshape(ri.shape)
                            if not ordered:
                                ii = np.sort(ii, axis=-1)
                                ri = np.sort(ri, axis=-1)
                            good = (v.dtype == a.dtype and v.shape == shape[:-1] + (k,) and
                                    np.array_equal(ii, ri) and
                                    bits_equal(v, np.take_along_axis(a, i, -1)) and
                                    (k == 0 and shape[0] == 0 or c.last["where"] == where))
                            if not good:
                                bad.append((label, shape, largest, k, ordered, where,
                                            c.last["where"]))
        return not bad, bad[:6]
    check("topk of 8- and 16-bit keys (1-D of 100003, 50 rows of 300), k 0/1/7/200/all, "
          "largest and smallest, sorted and not: a stable order's first k (NaNs first "
          "largest), by the daemon (memfd, inline) and in the process", t_topk)

    def t_segments():
        bad = []
        # at most LOCAL_ALWAYS_UPTO keys in all: cl sorts them here whatever
        # its Router has measured
        lens = [0, 3, 1, 0, 57, 1000, 1, 0, 33, 2]
        off = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
        n = int(off[-1])
        for kind in NARROW:
            label, dt, kt, wire, fl = kind
            a = narrow_keys(kind, n)
            for desc in (False, True):
                wi = np.concatenate([narrow_ref(kind, a[off[g]:off[g + 1]], desc)
                                     for g in range(len(lens))]).astype(np.int64)
                want = np.concatenate([a[off[g]:off[g + 1]][wi[off[g]:off[g + 1]]]
                                       for g in range(len(lens))])
                for c, where in ((cd, "daemon"), (cdi, "daemon"), (cl, "local")):
                    s = c.sort_segments(a, off, descending=desc, key_type=kt)
                    w1 = c.last["where"]
                    i = c.argsort_segments(a, off, descending=desc, stable=True, key_type=kt)
                    w2 = c.last["where"]
                    if not (bits_equal(s, want) and np.array_equal(i, wi) and
                            w1 == w2 == where):
                        bad.append((label, desc, where, w1, w2))
        return not bad, bad[:6]
    check("sort_segments and argsort_segments of 8- and 16-bit keys: each segment right, "
          "by the daemon (memfd, inline) and in the process", t_segments)

    def t_forced():
        # rows, top-k and segments of narrow keys with a named route: the
        # daemon's, on the client that would sort them here
        sorts0 = cd.stats()["requests"]["by_op"]["sort"]
        a2 = np.arange(24, dtype=np.uint16)[::-1].reshape(4, 6).copy()
        b = np.arange(10, dtype=np.int8)[::-1].copy()
        got = [
            (cl.sort(a2, algorithm="host"), cl.last["where"]),
            (cl.argsort(a2, algorithm="host"), cl.last["where"]),
            (cl.topk(b, 3, algorithm="host")[0], cl.last["where"]),
            (cl.topk(a2, 3, params={"threads": 2}, algorithm="host", key_type="bf16")[1],
             cl.last["where"]),
            (cl.sort_segments(b, [0, 4, 10], algorithm="host"), cl.last["where"]),
            (cl.argsort_segments(b, [0, 4, 10], params={"threads": 1}, algorithm="host"),
             cl.last["where"]),
        ]
        want = [np.sort(a2, axis=-1), np.argsort(a2, axis=-1, kind="stable"),
                np.array([9, 8, 7], np.int8),
                np.argsort(-a2.view(np.int16).astype(np.int64), axis=-1,
                           kind="stable")[:, :3],
                np.concatenate([np.sort(b[:4]), np.sort(b[4:])]),
                np.concatenate([np.argsort(b[:4], kind="stable"),
                                np.argsort(b[4:], kind="stable")])]
        sorts1 = cd.stats()["requests"]["by_op"]["sort"]
        return (all(w == "daemon" and np.array_equal(g, e)
                    for (g, w), e in zip(got, want)) and sorts1 - sorts0 == 6,
                ([(g.tolist(), w) for g, w in got], sorts0, sorts1))
    check("rows, topk and segments of 8- and 16-bit keys with a named algorithm, device "
          "or params: the daemon's, even where the client would sort here", t_forced)

    def t_key_type():
        x = narrow_keys(NARROW[5], 3000)
        r = narrow_ref(NARROW[5], x, False)
        os.environ["GSORTD_SOCKET"] = sock
        s = gsort.sort(x, key_type="bf16")
        i = gsort.argsort(x.view(np.int16), key_type="bf16", stable=True)
        k, v = gsort.sort_by_key(x, np.arange(3000, dtype=np.uint64), key_type="bf16",
                                 stable=True)
        errs = [raises(TypeError, cd.sort, x.view(np.float16), key_type="bf16"),
                raises(TypeError, cd.sort, np.zeros(3, np.uint32), key_type="bf16"),
                raises(TypeError, cd.sort, np.zeros(3, ">u2"), key_type="bf16"),
                raises(ValueError, cd.sort, x, key_type="f16"),
                raises(ValueError, cd.argsort, x, key_type=16)]
        return (bits_equal(s, x[r]) and np.array_equal(i, r) and bits_equal(k, x[r]) and
                np.array_equal(v, r) and all(e is not None for e in errs) and
                "uint16" in str(errs[0]), [str(e) for e in errs])
    check("key_type='bf16' through gsort.sort/argsort/sort_by_key (uint16 and int16 words); "
          "on float16, uint32 or big-endian keys a TypeError, another key_type a ValueError",
          t_key_type)
    def t_parts():
        # gsort.dask's requests (_sort_parts, _argsort_into) with 16-bit
        # keys, a bfloat16 dtype among them: flat sorts, through the daemon
        bad = []
        for kind in (NARROW[2], NARROW[4], NARROW[7]):
            label, dt, kt, wire, fl = kind
            k = narrow_keys(kind, 9000)
            pieces = [k[:10], k[10:10], k[10:6001], k[6001:][::-1]]
            whole = np.concatenate(pieces)
            r = narrow_ref(kind, whole, False)
            for c in (cd, cdi):
                sk, _ = c._sort_parts(pieces)
                w1 = c.last["dtype"]
                idx = [np.arange(p.shape[0], dtype=np.int64) + 10000 * i
                       for i, p in enumerate(pieces)]
                sk2, sv = c._sort_parts(pieces, idx, stable=True)
                ko, io = np.empty(9000, dt), np.empty(9000, np.int64)
                c._argsort_into(whole, ko, io, False, True)
                if not (bits_equal(sk, whole[r]) and bits_equal(sk2, whole[r]) and
                        np.array_equal(sv, np.concatenate(idx)[r]) and
                        bits_equal(ko, whole[r]) and np.array_equal(io, r) and
                        w1 == c.last["dtype"] == wire):
                    bad.append((label, c.use_memfd, w1, c.last["dtype"]))
        return not bad, bad
    check("gsort.dask's requests with u16, f16 and bfloat16 keys: _sort_parts (keys, keys "
          "and indices) and _argsort_into, memfd and inline, the wire dtype named",
          t_parts)

    def t_daemon_parts():
        # the daemon takes rows, top-k and segments of these keys as the
        # protocol spells them, and serves the next call
        c = gsort.Client(sock, memfd=False, local=False)
        try:
            out = []
            for extra, want in (({"rows": 2}, [1, 4, 2, 3]), ({"topk": 2}, [1, 2]),
                                ({"segments": 1}, [1, 2, 3, 4])):
                body = np.array([4, 1, 3, 2], np.uint16).tobytes()
                if "segments" in extra:
                    body += np.array([0, 4], np.uint64).tobytes()
                rid = c._take_id()
                c._send(dict({"v": 1, "op": "sort", "id": rid, "dtype": "u16", "n": 4,
                              "payload_bytes": len(body)}, **extra), [memoryview(body)])
                h, pb = c._recv_header()
                got = np.frombuffer(bytes(c._recv_exact(pb)), np.uint16).tolist() if pb else []
                s = c.sort(np.array([3, 1, 2], np.uint16))
                out.append((h.get("ok") is True and h.get("dtype") == "u16" and got == want and
                            list(s) == [1, 2, 3], extra, got, h.get("error")))
            return all(o[0] for o in out), out
        finally:
            c.close()
    check("the daemon sorts u16 keys in rows, as top-k and in segments (the protocol's "
          "own requests) and serves the connection next", t_daemon_parts)
    for c in (cd, cdi, cl):
        c.close()

def local_checks(sock):
    """The local path (python/gsort/_local.py, issue 36): the same results
    as the daemon for every dtype, order, stability and NaN case; when it
    runs (the Router's rule, shown on recorded times, not timed here); and
    what turns it off."""
    from gsort import _local
    cd = gsort.Client(sock, local=False)      # the daemon's answers
    cl = gsort.Client(sock, local=True)
    for dt in gsort.SUPPORTED_DTYPES:
        for n in (300, 5000):
            x = random_keys(dt, n, special=True)
            vary_nans(x)
            v = np.arange(n, dtype=np.float64) * 1.5
            for desc in (False, True):
                def t_same():
                    ks = _local.sort_keys(x, desc, np.empty_like(x))
                    i = _local.order(x, desc)
                    return (bits_equal(ks, cd.sort(x, descending=desc)) and
                            np.array_equal(i, cd.argsort(x, descending=desc, stable=True)) and
                            np.array_equal(i, ref_argsort(x, desc)) and
                            bits_equal(x[i], ks), (ks[:6], cd.last["algorithm"]))
                check("local %s n=%d descending=%s: sort and stable argsort bit-identical "
                      "to the daemon's (zeros, NaN patterns, ties in input order)"
                      % (dt, n, desc), t_same)

                def t_client():
                    # through a Client that sorts here below 256 keys
                    y = x[:200]
                    r = (cl.sort(y, descending=desc), cl.last["where"],
                         cl.argsort(y, descending=desc, stable=True), cl.last["where"],
                         cl.sort_by_key(y, v[:200], descending=desc, stable=True),
                         cl.last["where"], cl.argsort(y, descending=desc))
                    e = (cd.sort(y, descending=desc),
                         cd.argsort(y, descending=desc, stable=True),
                         cd.sort_by_key(y, v[:200], descending=desc, stable=True))
                    return (r[1] == r[3] == r[5] == "local" and bits_equal(r[0], e[0]) and
                            np.array_equal(r[2], e[1]) and bits_equal(r[4][0], e[2][0]) and
                            bits_equal(r[4][1], e[2][1]) and bits_equal(y[r[6]], e[0]),
                            r[1::2])
                check("Client(local=True) %s 200 keys descending=%s: sort, argsort and "
                      "sort_by_key ran here, equal to the daemon's" % (dt, desc), t_client)

    def t_inplace():
        y = random_keys(np.float32, 100, special=True)
        ref = cd.sort(y)
        r = cl.sort(y, inplace=True)
        k = random_keys(np.int64, 100)
        w = np.arange(100, dtype=np.int32)
        rk = cd.sort_by_key(k, w, stable=True)
        pk, pv = cl.sort_by_key(k, w, stable=True, inplace=True)
        return (r is y and bits_equal(y, ref) and cl.last["where"] == "local" and pk is k and
                pv is w and bits_equal(k, rk[0]) and bits_equal(w, rk[1]))
    check("local inplace=True: sort and sort_by_key write the arrays themselves", t_inplace)

    def t_forced():
        y = random_keys(np.uint32, 100)
        w = []
        for kw in ({"algorithm": "host"}, {"local": False}, {"params": {"threads": 1},
                                                             "algorithm": "host"}):
            cl.sort(y, **kw)
            w.append(cl.last["where"])
        c2 = gsort.Client(sock, local=False)
        c2.sort(y)
        w.append(c2.last["where"])
        c2.close()
        with env_set("GSORT_NO_LOCAL", "1"):
            c3 = gsort.Client(sock)
        c3.sort(y)
        w.append(c3.last["where"])
        c3.close()
        return w == ["daemon"] * 5 and "times_ms" in cl.last, w
    check("a named algorithm or params, local=False, Client(local=False) and "
          "GSORT_NO_LOCAL=1 ask the daemon", t_forced)

    def t_small():
        # up to LOCAL_ALWAYS_UPTO keys a plain sort() takes numpy's sort at
        # once (Client.sort's first lines): every dtype, order, size at and
        # around the limit, strided and empty input, the daemon's bits
        up = _local.LOCAL_ALWAYS_UPTO
        bad = []
        for dt in gsort.SUPPORTED_DTYPES:
            x = random_keys(dt, 2 * up + 2, special=True)
            vary_nans(x)
            for y in (x[:up], x[:1000], x[::2][:up], x[:1], x[:0], x[:up + 1]):
                for desc in (False, True):
                    r = cl.sort(y, descending=desc)
                    last = dict(cl.last)
                    e = cd.sort(y, descending=desc)
                    # past the limit: the Router's route, either
                    small = y.shape[0] <= up
                    if not (bits_equal(r, e) and r.dtype == y.dtype and
                            r.flags.c_contiguous and not np.shares_memory(r, y) and
                            (not small or (last["where"], last["algorithm"], last["n"]) ==
                             ("local", "numpy", y.shape[0])) and last["client_ms"] >= 0.0):
                        bad.append((np.dtype(dt).name, y.shape[0], desc, last))
        # c.last is one dict, kept as changed, until the next call replaces it
        cl.sort(x[:10])
        cl.last["mark"] = 1
        kept = cl.last.get("mark") == 1
        cl.sort(x[:10], local=False)
        daemon = cl.last["where"] == "daemon" and "mark" not in cl.last
        return not bad and kept and daemon, (bad[:4], kept, daemon)
    def t_settled():
        # past the limit, a size the Router settled on numpy's sort takes it
        # directly; every SETTLED_CALLS + 1-th call routes again
        c = gsort.Client(sock, local=True, local_sort="numpy")
        try:
            x = random_keys(np.float32, 3000, special=True)
            vary_nans(x)
            e = cd.sort(x)
            # the Router's samples (the daemon's three, numpy's two) taken,
            # every routed call among the first ones
            for _ in range(8 * (gsort.SETTLED_CALLS + 1)):
                c.sort(x)
            routed = []
            orig = c._routed

            def counting(*args, **kw):
                routed.append(1)
                return orig(*args, **kw)
            c._routed = counting
            got = [c.sort(x) for _ in range(2 * (gsort.SETTLED_CALLS + 1))]
            nrouted = len(routed)
            where = (c.last["where"], c.last["algorithm"])
            c.sort(x, local=False)
            forced = c.last["where"]
            return (all(bits_equal(g, e) for g in got) and nrouted == 2 and
                    where == ("local", "numpy") and forced == "daemon",
                    (nrouted, where, forced))
        finally:
            c.close()
    check("a size settled on numpy's sort here takes it directly, routing again every "
          "%d calls; the daemon's bits; local=False still asks the daemon"
          % (gsort.SETTLED_CALLS + 1), t_settled)

    check("a plain sort() of up to %d keys runs numpy's sort at once: the daemon's "
          "bits for every dtype and order (strided, empty and one-key arrays too), "
          "c.last says local/numpy; local=False still asks the daemon"
          % _local.LOCAL_ALWAYS_UPTO, t_small)

    def t_router():
        r = _local.Router()
        sh = ("<u4", "none", False, False)
        seq = [r.choose(sh, 100), r.choose(sh, 4096)]       # local; daemon (unmeasured)
        r.record(sh, 4096, False, 4.0)
        seq.append(r.choose(sh, 4096))                      # numpy tried once
        r.record(sh, 4096, True, 0.2)
        seq.append(r.choose(sh, 4096))                      # the daemon's second sample
        r.record(sh, 4096, False, 1.0)
        seq.append(r.choose(sh, 4096))                      # and its third (cold stages)
        r.record(sh, 4096, False, 2.0)
        seq.append(r.choose(sh, 4096))                      # numpy's second
        r.record(sh, 4096, True, 0.1)
        first = r.table()[sh][12]                           # the fastest of each
        seq += [r.choose(sh, 4096), r.choose(sh, 2048)]     # local won: local; below too
        for _ in range(2):
            r.record(sh, 1 << 20, False, 2.0)
            r.record(sh, 1 << 20, True, 20.0)
        seq += [r.choose(sh, 1 << 22), r.choose(sh, 1 << 27)]   # daemon won below: daemon
        # the loser is tried again once in RETRY_EVERY calls, unless far slower
        tries = sum(r.choose(sh, 4096) is False for _ in range(_local.RETRY_EVERY * 2))
        for _ in range(_local.DAEMON_SAMPLES):
            r.record(sh, 1 << 16, False, 1.0)
            r.record(sh, 1 << 16, True, 1.5)
        retry = sum(r.choose(sh, 1 << 16) is True for _ in range(_local.RETRY_EVERY * 2))
        # one preempted local call (100x its time) does not hand 2^12 to the
        # daemon; local calls that stay 3x slower than the daemon do, in time
        r.record(sh, 4096, True, 10.0)
        spike = r.choose(sh, 4096)
        for _ in range(16):
            r.record(sh, 4096, True, 3.0)
        slow = r.choose(sh, 4096)
        want = [True, False, True, False, False, True, True, True, False, False]
        return (seq == want and tries == 0 and retry == 2 and spike is True and
                slow is False and first == (0.1 / 4096, 1.0 / 4096),
                (seq, tries, retry, spike, slow, r.table()))
    check("Router: local up to %d keys, the daemon first where unmeasured, each route "
          "timed (the daemon three times, numpy twice; the fastest kept), the faster route kept; neighbours "
          "decide unmeasured sizes; a close loser retried 1 in %d; one slow call does "
          "not flip the route, a lasting slowdown does"
          % (_local.LOCAL_ALWAYS_UPTO, _local.RETRY_EVERY), t_router)
    cd.close()
    cl.close()


def native_checks(sock):
    """libgsort's host sort in the process (python/gsort/_native.py, issue
    36): found through $GSORT_LIBRARY (tests/support/pyenv.sh names the
    build's), the daemon's answer bit for bit for every dtype, order,
    stability and NaN case, on one thread and on the pool's; Pick keeps the
    faster of numpy and it; local_sort picks one; a library that is not
    there leaves numpy, saying why."""
    from gsort import _native
    ok(_native.available(), "libgsort's local sort loads from $GSORT_LIBRARY (%s): %s"
       % (_native.library_path(), _native.why_not()))
    cd = gsort.Client(sock, local=False)
    ch = gsort.Client(sock, local=True, local_sort="host")
    ch.router.choose = lambda shape, n: True        # every size here, not only < 256
    cases = [(dt, None) for dt in gsort.SUPPORTED_DTYPES] + [(np.uint16, "bf16")]
    for dt, kt in cases:
        name = "bf16" if kt else np.dtype(dt).name
        for n in (300, 5000):
            if kt:
                x = narrow_keys(NARROW[5], n)
            else:
                x = random_keys(dt, n, special=True)
            vary_nans(x)
            v = np.arange(n, dtype=np.float64) * 1.5
            for desc in (False, True):
                for stable in (False, True):
                    def t_same():
                        kw = dict(descending=desc, stable=stable, key_type=kt)
                        r = (ch.sort(x, **kw), ch.last["algorithm"], ch.argsort(x, **kw),
                             ch.last["algorithm"], ch.sort_by_key(x, v, **kw),
                             ch.last["algorithm"],
                             ch.argsort(x, index_dtype=np.uint32, **kw))
                        e = (cd.sort(x, **kw), cd.argsort(x, **kw), cd.sort_by_key(x, v, **kw))
                        return (r[1] == r[3] == r[5] == "host" and bits_equal(r[0], e[0]) and
                                np.array_equal(r[2], e[1]) and
                                bits_equal(r[4][0], e[2][0]) and bits_equal(r[4][1], e[2][1]) and
                                r[6].dtype == np.uint32 and np.array_equal(r[6], e[1]),
                                (r[1::2], r[0][:6], e[0][:6]))
                    check("libgsort in process, %s n=%d descending=%s stable=%s: sort, "
                          "argsort and sort_by_key bit-identical to the daemon's"
                          % (name, n, desc, stable), t_same)

    def t_rows():
        # 2-D arrays along their last axis: each row by libgsort's rows sort
        bad = []
        for dt, kt in cases:
            for shape in ((37, 129), (3, 4, 50)):
                n = int(np.prod(shape))
                x = narrow_keys(NARROW[5], n) if kt else random_keys(dt, n, special=True)
                vary_nans(x)
                x = x.reshape(shape)
                for desc in (False, True):
                    kw = dict(descending=desc, key_type=kt)
                    r = (ch.sort(x, **kw), ch.last["algorithm"],
                         ch.argsort(x, stable=True, **kw), ch.last["algorithm"])
                    e = (cd.sort(x, **kw), cd.argsort(x, stable=True, **kw))
                    if not (r[1] == r[3] == "host" and r[0].shape == shape and
                            bits_equal(r[0], e[0]) and np.array_equal(r[2], e[1])):
                        bad.append((np.dtype(dt).name, kt, shape, desc, r[1], r[3]))
        return not bad, bad[:6]
    check("libgsort in process, rows of every dtype (2-D and 3-D, both orders): sort and "
          "stable argsort within the row bit-identical to the daemon's", t_rows)

    def t_threads():
        # two chunks of 2^18 keys or more: the host pool's helpers in this process
        n = 600000
        x = random_keys(np.float32, n, special=True)
        w = rng.integers(0, 1 << 62, n).astype(np.uint64)
        r = ch.sort_by_key(x, w, descending=True)
        e = cd.sort_by_key(x, w, descending=True)
        y = random_keys(np.int64, n)
        ri = ch.argsort(y)
        return (ch.last["algorithm"] == "host" and bits_equal(r[0], e[0]) and
                bits_equal(r[1], e[1]) and np.array_equal(ri, ref_argsort(y)), ch.last)
    check("libgsort in process on the host pool (600000 keys): sort_by_key and argsort "
          "equal to the daemon's", t_threads)

    def t_inplace():
        y = random_keys(np.float64, 1000, special=True)
        ref = cd.sort(y)
        r = ch.sort(y, inplace=True)
        k = random_keys(np.int32, 1000)
        w = np.arange(1000, dtype=np.int64)
        rk = cd.sort_by_key(k, w)
        pk, pv = ch.sort_by_key(k, w, inplace=True)
        return (r is y and bits_equal(y, ref) and pk is k and pv is w and
                bits_equal(k, rk[0]) and bits_equal(w, rk[1]) and
                ch.last["algorithm"] == "host", ch.last)
    check("libgsort in process, inplace=True: sort and sort_by_key write the arrays "
          "themselves", t_inplace)

    def t_refused():
        k = np.arange(10, dtype=np.uint32)
        e = raises(RuntimeError, _native.run, "u32", k, _native.VALUES_U32, None)
        return (e is not None and "values is NULL" in str(e) and
                np.array_equal(k, np.arange(10, dtype=np.uint32)), str(e))
    check("libgsort's local sort refuses values missing for their kind (GSORT_EINVAL, "
          "the keys as they were)", t_refused)

    def t_pick():
        p = _native.Pick()
        sh = ("u32", "none", False, False, False)
        seq = []
        for host, ms in ((True, 5.0), (False, 1.0), (True, 2.0), (False, 1.2)):
            seq.append(p.choose(sh, 4096))          # alternating, host first
            p.record(sh, 4096, host, ms)
        after = [p.choose(sh, 4096) for _ in range(_native.RETRY_EVERY)]
        other = p.choose(sh, 1 << 20)               # another size: measured apart
        return (seq == [True, False, True, False] and after.count(True) == 1 and
                after.count(False) == _native.RETRY_EVERY - 1 and other is True and
                abs(p.best_ms(sh, 4096) - 1.0) < 1e-9 and p.best_ms(sh, 1 << 20) is None,
                (seq, after.count(True), p.table()))
    check("Pick: libgsort's and numpy's sorts timed twice each, alternating, the faster "
          "kept (numpy here), the slower retried 1 in %d; sizes apart; best_ms the faster's"
          % _native.RETRY_EVERY, t_pick)

    def t_numpy_only():
        cn = gsort.Client(sock, local=True, local_sort="numpy")
        cn.router.choose = lambda shape, n: True
        x = random_keys(np.uint32, 5000)
        r = cn.sort(x)
        a = cn.last["algorithm"]
        cn.close()
        e = raises(ValueError, gsort.Client, sock, local_sort="qsort")
        return bits_equal(r, np.sort(x)) and a == "numpy" and e is not None, (a, e)
    check("local_sort=\"numpy\" keeps numpy's sort; another name is a ValueError",
          t_numpy_only)

    def t_missing():
        code = ("import gsort, sys; from gsort import _native as n; c = None\n"
                "try:\n    gsort.Client(sys.argv[1], local_sort='host')\n"
                "except ValueError as e:\n    c = str(e)\n"
                "x = gsort.Client(sys.argv[1], local=True)\n"
                "import numpy as np; r = x.sort(np.arange(100, 0, -1, dtype=np.uint32))\n"
                "print(n.available(), x.last['algorithm'], bool(c), int(r[0]), n.why_not())")
        out = []
        for val in ("none", "/nonexistent/libgsort.so.0"):
            with env_set("GSORT_LIBRARY", val):
                p = subprocess.run([sys.executable, "-c", code, sock], capture_output=True,
                                   text=True, timeout=60)
            out.append((p.returncode, p.stdout.strip(), p.stderr[-300:]))
        return (out[0][0] == 0 and out[0][1].startswith("False numpy True 1 GSORT_LIBRARY=none")
                and out[1][0] == 0 and out[1][1].startswith("False numpy True 1 cannot load "
                                                              "/nonexistent/libgsort.so.0"),
                out)
    check("GSORT_LIBRARY=none, or a library that is not there: numpy sorts locally, "
          "local_sort=\"host\" is a ValueError saying why", t_missing)
    cd.close()
    ch.close()


# ---- bit ranges (begin_bit/end_bit) ----

def ref_bits(a, desc, lo, hi):
    """The input places of a's keys in the stable order of bits [lo, hi) of
    their order code, from Python integers alone: the key's bits as an
    unsigned number, the sign bit flipped for signed keys, every bit
    inverted descending, then sorted() by (field, place)."""
    bits = 8 * a.dtype.itemsize
    full = (1 << bits) - 1
    fields = []
    for x in a.tolist():
        u = int(x) & full
        if a.dtype.kind == "i":
            u ^= 1 << (bits - 1)
        if desc:
            u ^= full
        fields.append((u >> lo) & ((1 << (hi - lo)) - 1))
    return sorted(range(len(fields)), key=lambda i: (fields[i], i))


def bits_keys(rng, dt, n):
    """n keys of dt: a third from the full range, a third from a few
    repeated byte patterns (ties in every range), a third small of both
    signs."""
    dt = np.dtype(dt)
    info = np.iinfo(dt)
    full = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    pat = np.array([0, 0x01, 0x7F, 0x80, 0xFF, 0x5A], np.uint64)[rng.integers(0, 6, n)]
    pat = (pat * np.uint64(0x0101010101010101)).astype(np.uint64)
    pat = pat.view(np.int64).astype(dt) if dt.kind == "i" else pat.astype(dt)
    small = rng.integers(-20 if dt.kind == "i" else 0, 20, n).astype(dt)
    pick = rng.integers(0, 3, n)
    return np.where(pick == 0, full, np.where(pick == 1, pat, small)).astype(dt)


def bits_checks(sock, cm, ci):
    """sort, argsort and sort_by_key with begin_bit/end_bit against
    ref_bits: every integer dtype, both orders, ranges of 3 bits inside a
    byte, across bytes, the top byte, the sign bit alone, either end left
    out; keys alone, 4- and 8-byte values, indices of two dtypes; through
    the daemon (memfd, inline, an array of gsort.empty sorted where it
    lies) and locally; what is refused, by the client and by the daemon;
    the Router's separate shape."""
    cl = gsort.Client(sock, local=True)
    cl.router = _AlwaysLocal()
    rng = np.random.default_rng(3939)
    routes = ((cm, False, "daemon memfd"), (ci, False, "daemon inline"), (cl, None, "local"))
    for dt in (np.uint32, np.int32, np.uint64, np.int64):
        name = np.dtype(dt).name
        bits = 8 * np.dtype(dt).itemsize
        a = bits_keys(rng, dt, 2000)
        keep = a.copy()
        v4 = rng.integers(0, 2**31, a.shape[0]).astype(np.float32)
        v8 = np.arange(a.shape[0], dtype=np.int64) * 3 - 7
        ranges = ((2, 5), (5, 13), (bits - 8, bits), (bits - 1, bits), (None, 3),
                  (bits // 2 + 3, None))
        for desc in (False, True):
            def t_bits():
                bad = []
                for lo, hi in ranges:
                    r = np.array(ref_bits(a, desc, 0 if lo is None else lo,
                                          bits if hi is None else hi), np.int64)
                    kw = dict(descending=desc, begin_bit=lo, end_bit=hi)
                    for c, loc, how in routes:
                        s = c.sort(a, local=loc, **kw)
                        w1 = c.last.get("where")
                        i = c.argsort(a, local=loc, **kw)
                        i32 = c.argsort(a, local=loc, index_dtype=np.uint32, **kw)
                        k4, p4 = c.sort_by_key(a, v4, local=loc, **kw)
                        k8, p8 = c.sort_by_key(a, v8, local=loc, stable=True, **kw)
                        got = (bits_equal(s, a[r]) and np.array_equal(i, r) and
                               i32.dtype == np.uint32 and np.array_equal(i32, r) and
                               bits_equal(k4, a[r]) and bits_equal(p4, v4[r]) and
                               bits_equal(k8, a[r]) and bits_equal(p8, v8[r]) and
                               w1 == how.split()[0] and c.last.get("where") == w1)
                        if not got:
                            bad.append((how, lo, hi, w1))
                return not bad and bits_equal(a, keep), bad[:4]
            check("bit ranges, %s %s: sort, argsort (int64, uint32), sort_by_key (4- and "
                  "8-byte values) by [2, 5), [5, 13), the top byte, the sign bit, end_bit=3 "
                  "alone, begin_bit=%d alone: the reference's stable order, daemon memfd, "
                  "inline and local; input untouched"
                  % (name, "descending" if desc else "ascending", bits // 2 + 3), t_bits)

    def t_shared():
        # arrays of gsort.empty sorted where they lie, by the daemon
        k = gsort.empty(5000, np.int64)
        k[...] = bits_keys(rng, np.int64, 5000)
        v = gsort.empty(5000, np.uint64)
        v[...] = np.arange(5000, dtype=np.uint64)
        r = np.array(ref_bits(k, True, 40, 63), np.int64)
        want = k[r].copy()
        ko, vo = cm.sort_by_key(k, v, descending=True, inplace=True, begin_bit=40, end_bit=63,
                                local=False)
        return (ko is k and vo is v and cm.last["zero_copy"] and bits_equal(k, want) and
                np.array_equal(v, r.astype(np.uint64)), cm.last.get("zero_copy"))
    check("bit range on gsort.empty arrays, sort_by_key inplace, i64 [40, 63) descending: "
          "sorted where they lie, as the reference", t_shared)

    def t_whole():
        a = bits_keys(rng, np.int32, 3000)
        res = []
        for c, loc, how in routes:
            res.append(bits_equal(c.sort(a, begin_bit=0, end_bit=32, local=loc), np.sort(a)) and
                       bits_equal(c.sort(a, begin_bit=0, local=loc), np.sort(a)) and
                       bits_equal(c.sort(a, end_bit=32, descending=True, local=loc),
                                  np.sort(a)[::-1]))
        return all(res), res
    check("a bit range over the whole key (0 and 32, either alone) is the plain sort",
          t_whole)

    def t_refused():
        a = np.arange(8, dtype=np.uint32)
        sorts0 = cm.stats()["requests"]["by_op"]["sort"]
        errs = [
            raises(TypeError, cm.sort, a.astype(np.float32), begin_bit=0, end_bit=8),
            raises(TypeError, cm.argsort, a.astype(np.float64), end_bit=8, local=False),
            raises(TypeError, cm.sort, a.astype(np.uint16), end_bit=8),
            raises(TypeError, cm.sort, a.astype(np.int8), begin_bit=1),
            raises(TypeError, cm.sort, a.astype(np.uint16), key_type="bf16", end_bit=8),
            raises(ValueError, cm.sort, a, begin_bit=8, end_bit=8),
            raises(ValueError, cm.sort, a, begin_bit=9, end_bit=8),
            raises(ValueError, cm.sort, a, end_bit=33),
            raises(ValueError, ci.sort_by_key, a.astype(np.int64), a, begin_bit=64),
            raises(ValueError, cm.argsort, a, begin_bit=-1, local=False),
            raises(TypeError, cm.sort, a, begin_bit=1.0),
            raises(TypeError, cm.sort, a, end_bit=True),
            raises(TypeError, cm.sort, a, end_bit="8"),
            raises(ValueError, cm.sort, a.reshape(2, 4), end_bit=8),
            raises(ValueError, cm.argsort, a.reshape(2, 4), begin_bit=1, local=False),
        ]
        sorts1 = cm.stats()["requests"]["by_op"]["sort"]
        return (all(e is not None for e in errs) and "float32" in str(errs[0]) and
                "[8, 8)" in str(errs[5]) and "32 bits" in str(errs[7]) and
                "shape (2, 4)" in str(errs[13]) and sorts1 == sorts0,
                ([str(e) for e in errs], sorts0, sorts1))
    check("bit ranges refused before anything is sent: float, 8- and 16-bit and bfloat16 "
          "keys (TypeError), empty, reversed, negative and too wide ranges (ValueError), "
          "non-integer bounds (TypeError), 2-D arrays (ValueError)", t_refused)

    def t_daemon_refuses():
        # what the client refuses, said to the daemon itself
        c = gsort.Client(sock, memfd=False)
        try:
            c.sort(np.arange(4, dtype=np.uint32), local=False)      # connected
            answers = []
            for extra, code in (({"dtype": "f32", "end_bit": 8}, "GS_EUNSUPPORTED"),
                                ({"dtype": "u32", "begin_bit": 8, "end_bit": 8}, "GS_EINVAL"),
                                ({"dtype": "u32", "end_bit": 33}, "GS_EINVAL"),
                                ({"dtype": "u32", "end_bit": 8, "rows": 2},
                                 "GS_EUNSUPPORTED")):
                rid = c._take_id()
                h = dict({"v": 1, "op": "sort", "id": rid, "n": 4, "payload_bytes": 16},
                         **extra)
                c._send(h, [memoryview(b"\0" * 16)])
                r, _ = c._recv_header()
                answers.append(r.get("ok") is False and r["error"]["code"] == code)
            s = c.sort(np.array([0x300, 0x101, 0x200], np.uint32), begin_bit=8, end_bit=16,
                       local=False)
            return all(answers) and list(s) == [0x101, 0x200, 0x300], answers
        finally:
            c.close()
    check("the daemon refuses f32 keys with a range (GS_EUNSUPPORTED), an empty and a too "
          "wide range (GS_EINVAL), a range with rows; the connection sorts by a range next",
          t_daemon_refuses)

    def t_router():
        # a range is timed under a shape of its own, not the plain sort's
        c = gsort.Client(sock, local=True)
        try:
            a = bits_keys(rng, np.uint64, 4096)
            for _ in range(3):
                c.argsort(a, begin_bit=4, end_bit=20)
            t = c.router.table()
            keys = list(t)
            return (len(keys) == 1 and keys[0][-1] == "bits" and keys[0][1] == "idx" and
                    np.array_equal(c.argsort(a, begin_bit=4, end_bit=20),
                                   ref_bits(a, False, 4, 20)), keys)
        finally:
            c.close()
    check("Router: a bit range's calls are timed under a shape of their own (\"bits\"), "
          "apart from the plain sort's", t_router)
    cl.close()


if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *a: sys.exit(1))
    try:
        main()
    except BaseException:
        ok(False, "the test program ran to the end", traceback.format_exc())
    finally:
        _daemons.stop()
        for p in daemons:
            ok(p.returncode == 0, "daemon pid %d stopped cleanly (rc %s)" % (p.pid, p.returncode))
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    finish()
