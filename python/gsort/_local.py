"""Sorting in the caller's process, and when to (issue 36): below a size a
round trip to gsortd costs more than numpy's whole sort, so a Client sorts
those arrays here and a call is never slower than the local sort.

The local sort gives exactly what the daemon gives: the keys in gsortd's
order (floats -inf < ... < -0.0 < +0.0 < ... < +inf < NaN; descending is
the exact reverse, NaNs first), every NaN's bit pattern kept, in input
order, and with stable=True equal keys in input order in either direction.
Integers sort with np.sort; floats, argsorts and sorts by key sort the
keys' order-preserving unsigned encoding (the daemon's, gs_keys.h), so the
two zeros, the NaNs and every bit come out as the daemon leaves them.

When: Router measures the two routes as the caller sees them, per request
shape and power-of-two size, and takes the faster. A size it has not
measured follows a measured neighbour (sizes below one local won stay
local, sizes above one the daemon won go to it); otherwise the daemon
goes first, and each route is timed twice (the faster of the two kept: a
first call is often cold) before either wins; the loser is tried again
now and then, as load and plans change. Arrays too large for numpy to try
cheaply (LOCAL_TRY_MAX) are never tried here."""

import time

import numpy as np

# Below this a round trip to the daemon (tens of microseconds) cannot pay:
# numpy sorts 256 keys in about a microsecond.
LOCAL_ALWAYS_BELOW = 256
# Never try numpy on more keys than this (its sort of 2^27 takes seconds).
LOCAL_TRY_MAX = 1 << 22
# Of this many calls at a size, one goes to the losing route, to notice
# when it becomes the faster (a loaded daemon, a new plan).
RETRY_EVERY = 64
# A loser this many times slower than the winner is not tried again.
RETRY_RATIO = 4.0
# Each route is timed this many times at a size before either wins, the
# fastest kept: a route's first call at a size is often cold (a new staging
# size, a new mapping in the daemon).
SAMPLES = 2
# After those, a sample counts for at most this many times the route's
# current time: one preempted call (a busy machine) must not hand a size to
# the slower route until the next retry, while a route that stays slower
# still moves its time up, by a quarter of this each call.
SPIKE = 2.0


def _bucket(n):
    return max(int(n) - 1, 0).bit_length()


class Router:
    """Per shape (dtype, values kind, order, stability) and bucket
    (ceil(log2 n)): the two routes' times in ms per key, the fastest of
    the first SAMPLES and then exponential averages; [local, daemon,
    choices made, local samples, daemon samples]."""

    def __init__(self):
        self._t = {}

    def choose(self, shape, n):
        """True: sort locally; False: ask the daemon."""
        if n < LOCAL_ALWAYS_BELOW:
            return True
        b = (n - 1).bit_length()     # _bucket(n), n >= 1 here
        t = self._t.get(shape)
        if t is None:
            return False
        cur = t.get(b)
        if cur is not None and cur[0] is not None and cur[1] is not None:
            if cur[4] < SAMPLES:
                return False
            if cur[3] < SAMPLES and n <= LOCAL_TRY_MAX:
                return True
            cur[2] += 1
            loc, dae = cur[0], cur[1]
            win = loc <= dae
            lose = dae if win else loc
            if cur[2] % RETRY_EVERY == 0 and lose < RETRY_RATIO * min(loc, dae) and \
                    (win or n <= LOCAL_TRY_MAX):
                return not win
            return win
        # Unmeasured here: a measured neighbour decides (the daemon pays
        # more the larger the array, relative to numpy). Lower buckets
        # first, as libgsort's twin (gsort_local.c): where two disagree,
        # the daemon is asked.
        for k in sorted(t):
            v = t[k]
            if v[0] is None or v[1] is None:
                continue
            if k < b and v[1] < v[0]:
                return False
            if k > b and v[0] <= v[1]:
                return True
        if cur is None or cur[1] is None:
            return False
        return n <= LOCAL_TRY_MAX    # the daemon was timed here: try numpy once

    def record(self, shape, n, local, ms):
        if n < LOCAL_ALWAYS_BELOW:
            return
        # on every routed call: lookups first, containers made only once
        t = self._t.get(shape)
        if t is None:
            t = self._t[shape] = {}
        b = (n - 1).bit_length()
        cur = t.get(b)
        if cur is None:
            cur = t[b] = [None, None, 0, 0, 0]
        i = 0 if local else 1
        # per key, so that sizes within a bucket compare alike
        v = (ms if ms > 0.0 else 0.0) / n
        old = cur[i]
        if cur[3 + i] < SAMPLES:
            cur[i] = v if old is None or v < old else old
        else:
            cap = SPIKE * old
            cur[i] = 0.75 * old + 0.25 * (v if v < cap else cap)
        cur[3 + i] += 1

    def table(self):
        """{shape: {bucket: (local ms/key, daemon ms/key)}} as measured."""
        return {s: {b: (v[0], v[1]) for b, v in t.items()} for s, t in self._t.items()}


# ---- the sorts ----

_UINTS = {}


def _uint(dt):
    """The unsigned type of dt's width (a table filled as widths come: no
    list of widths here)."""
    u = _UINTS.get(dt.itemsize)
    if u is None:
        u = _UINTS[dt.itemsize] = np.dtype("u%d" % dt.itemsize).type
    return u


def encode(keys, descending):
    """The order-preserving unsigned encoding of gs_keys.h: a new array
    whose ascending unsigned order is gsortd's order of keys."""
    dt = keys.dtype
    u = _uint(dt)
    bits = 8 * dt.itemsize
    sign = u(1 << (bits - 1))
    e = np.ascontiguousarray(keys).view(u).copy()
    if dt.kind == "i":
        e ^= sign
    elif dt.kind == "f":
        # negative: all bits flipped; positive: the sign bit set. Whole-array
        # arithmetic, no masked ufuncs (those cost several passes).
        m = e >> u(bits - 1)
        m *= u((1 << (bits - 1)) - 1)
        m |= sign
        e ^= m
        nan = np.isnan(keys)
        if nan.any():
            e[nan] = np.iinfo(u).max      # every NaN the one top value
    if descending:
        np.invert(e, out=e)
    return e


def _decode_floats(e, dtype):
    """encode()'s inverse for ascending float keys, in place; a view as
    dtype (NaNs come back as some NaN: the caller restores their bits)."""
    u = e.dtype.type
    bits = 8 * e.itemsize
    m = e >> u(bits - 1)
    m ^= u(1)                   # 1: was negative
    m *= u((1 << (bits - 1)) - 1)
    m |= u(1 << (bits - 1))
    e ^= m
    return e.view(dtype)


def _np_sort_keeps_bits(dt):
    """Whether np.sort of this float dtype moves every value but the zeros
    and NaNs unchanged (numpy 1.24's AVX-512 float32 sort does not even
    keep the count of -0.0 and +0.0: a vector min of two equal zeros
    returns either; sort_keys puts both blocks back from the input)."""
    tiny = np.finfo(dt).tiny
    # long enough for numpy's vectorised paths (short arrays take others)
    x = np.array([tiny / 4, -tiny / 4, 0.0, -0.0, 1.0, -1.0, np.nan, -np.inf,
                  tiny * 3, -tiny / 3, 2.0, -3.0, 1e-3, -7.0, 5.0, 0.5] * 256, dt)
    x = x[np.random.default_rng(7).permutation(x.shape[0])]
    s = np.sort(x)
    u = _uint(np.dtype(dt))
    keep = (x != 0) & ~np.isnan(x)
    kept = (s != 0) & ~np.isnan(s)
    return bool(np.array_equal(np.sort(x[keep].view(u)), np.sort(s[kept].view(u))))


_FAST_FLOAT = {}


def _fast_float(dt):
    """_np_sort_keeps_bits(dt), found on the first float sort here rather
    than at import (it costs about a millisecond)."""
    v = _FAST_FLOAT.get(dt)
    if v is None:
        v = _FAST_FLOAT[dt] = _np_sort_keeps_bits(dt)
    return v


def order(keys, descending):
    """The stable permutation that sorts keys in gsortd's order."""
    if keys.dtype.kind in "iu" and not descending:
        return np.argsort(keys, kind="stable")
    return np.argsort(encode(keys, descending), kind="stable")


def sort_keys(keys, descending, out):
    """The keys sorted into out, as the daemon sorts them."""
    if keys.dtype.kind in "iu":
        if out is not keys:
            out[...] = keys
        out.sort()              # in place: one allocation fewer than np.sort
        if descending:
            out[...] = out[::-1]    # numpy buffers the overlap
        return out
    n = keys.shape[0]
    if _fast_float(keys.dtype):
        # numpy's order but for the zeros (equal to numpy) and the NaNs
        # (last, in no promised order): put those two blocks right. Sorted
        # in out itself: one allocation and one copy fewer than np.sort.
        if out is not keys:
            out[...] = keys
        else:
            keys = keys.copy()          # the input's zeros and NaNs, for the fix-ups
        s = out
        s.sort()
        nn = n
        if n and np.isnan(s[-1]):
            nn = n - int(np.count_nonzero(np.isnan(keys)))
        lo = int(np.searchsorted(s[:nn], 0.0, "left"))
        hi = int(np.searchsorted(s[:nn], 0.0, "right"))
        if hi - lo > 1:
            # counted in the input: numpy's sort may not keep the count
            k = int(np.count_nonzero(np.signbit(keys[keys == 0])))
            z = s[lo:hi]
            z[:k] = -0.0
            z[k:] = 0.0
    else:
        s = _decode_floats(np.sort(encode(keys, False)), keys.dtype)
        nn = n - int(np.count_nonzero(np.isnan(keys))) if n and np.isnan(s[-1]) else n
    m = n - nn
    if m:                                   # NaN bit patterns in input order
        nans = keys[np.isnan(keys)]
        if descending:
            out[...] = s[::-1]              # numpy buffers an overlap with s
            out[:m] = nans
        else:
            if s is not out:
                out[...] = s
            out[nn:] = nans
        return out
    if descending:
        out[...] = s[::-1]
    elif s is not out:
        out[...] = s
    return out


def sort_rows(keys, descending, out):
    """Each row (the last axis) of keys sorted into out, as the daemon
    sorts them: integers by numpy's sort of the rows; floats by the stable
    order of their encoding, which keeps -0.0 before +0.0 and the NaNs'
    bit patterns in input order at the end of each row (at the start,
    descending)."""
    if keys.dtype.kind in "iu":
        if out is not keys:
            out[...] = keys
        out.sort(axis=-1)
        if descending:
            out[...] = out[..., ::-1]
        return out
    if not np.isnan(keys).any():
        # numpy's sort of the encoded words: -0.0 before +0.0, exact bits
        s = _decode_floats(np.sort(encode(keys, False), axis=-1), keys.dtype)
        out[...] = s[..., ::-1] if descending else s
        return out
    i = order(keys, descending)     # NaNs' bit patterns in input order
    out[...] = np.take_along_axis(keys, i, axis=-1)
    return out


def timed(fn, *args):
    t0 = time.perf_counter()
    r = fn(*args)
    return r, (time.perf_counter() - t0) * 1e3
