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
Keys of 8 and 16 bits (issue 39) take the same paths: numpy sorts
(u)int8/16 and float16 itself; bfloat16, which numpy lacks, comes here as
its raw uint16 words with bf16=True (sign 1, exponent 8, mantissa 7 bits;
a NaN: the exponent all ones and the mantissa not zero), and every
function then orders those words as the floats they hold.
A bit range (begin_bit/end_bit) is a stable argsort of each key's field
of its order code (bits_words), which then permutes keys and values.
topk (issue 38) takes the first k of that stable order: a bound from a
strided sample cuts the keys to a few times k candidates with one compare
pass, and np.partition of their encoding finds the k-th (ties at it to the
earliest positions), so only k keys are ever ordered.

When: Router measures the two routes as the caller sees them, per request
shape and power-of-two size, and takes the faster. A size it has not
measured follows a measured neighbour (sizes below one local won stay
local, sizes above one the daemon won go to it); otherwise the daemon
goes first, and each route is timed (the daemon's three times, numpy's
twice; the fastest kept: a first call is often cold) before either wins; the loser is tried again
now and then, as load and plans change. Arrays too large for numpy to try
cheaply (LOCAL_TRY_MAX; top-k, which reads the keys about once, has no
such limit) are never tried here."""

import time

import numpy as np

# Up to this many keys a round trip to the daemon cannot pay, and numpy's
# sort is the local one: numpy sorts 2048 keys in 12-37 us (an H100
# machine's AVX-512 host, the 2-core AMD one), libgsort's host sort called
# through ctypes in 38-45 on the latter, and a bare ping through gsortd
# takes 25-90. So a plain call this small sorts with numpy at once, without
# the Router's or Pick's bookkeeping, which cost as much as the sort at
# 2^10 (issue 36).
LOCAL_ALWAYS_UPTO = 2048
# Never try numpy on more keys than this (its sort of 2^27 takes seconds);
# top-k has no such limit (the local select reads the keys about once).
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
# The daemon's route one more: a grown staging memfd's first two calls are
# both cold (the daemon maps it for that request, then keeps it and, on a
# GPU, pins it: 0.3-4 ms), so the fastest of two still lost to numpy at
# sizes where the route, warm, is 2-3x faster (H100, 2^17-2^18).
DAEMON_SAMPLES = 3
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
        if n <= LOCAL_ALWAYS_UPTO:
            return True
        b = (n - 1).bit_length()     # _bucket(n), n >= 1 here
        try_max = float("inf") if shape[1] == "topk" else LOCAL_TRY_MAX
        t = self._t.get(shape)
        if t is None:
            return False
        cur = t.get(b)
        if cur is not None and cur[0] is not None and cur[1] is not None:
            if cur[4] < DAEMON_SAMPLES:
                return False
            if cur[3] < SAMPLES and n <= try_max:
                return True
            cur[2] += 1
            loc, dae = cur[0], cur[1]
            win = loc <= dae
            lose = dae if win else loc
            if cur[2] % RETRY_EVERY == 0 and lose < RETRY_RATIO * min(loc, dae) and \
                    (win or n <= try_max):
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
        return n <= try_max          # the daemon was timed here: try numpy once

    def record(self, shape, n, local, ms):
        if n <= LOCAL_ALWAYS_UPTO:
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
        if cur[3 + i] < (DAEMON_SAMPLES if i else SAMPLES):
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


# bfloat16's words: the sign bit and, below it, +inf's bits (exponent all
# ones, mantissa 0); a word whose low 15 bits exceed +inf's is a NaN
_BF16_ABS = np.uint16(0x7FFF)
_BF16_INF = np.uint16(0x7F80)


def isnan(keys, bf16=False):
    """np.isnan(keys), for bfloat16 words (bf16=True) too."""
    if bf16:
        return (np.ascontiguousarray(keys).view(np.uint16) & _BF16_ABS) > _BF16_INF
    return np.isnan(keys)


def _floats(keys, bf16):
    return bf16 or keys.dtype.kind == "f"


def _kind(dt):
    """The sort kind for words of dt: numpy's stable sort of 8- and 16-bit
    integers is a radix sort, 5-8x its default (1M keys: 11 ms, not 80);
    wider ones its default. (float16 is sorted as its encoded words: its
    own sort compares halves in software, 10x slower.)"""
    return "stable" if dt.itemsize <= 2 else None


def encode(keys, descending, bf16=False):
    """The order-preserving unsigned encoding of gs_keys.h: a new array
    whose ascending unsigned order is gsortd's order of keys (bf16: keys
    are bfloat16 words, uint16 or int16)."""
    dt = keys.dtype
    u = _uint(dt)
    bits = 8 * dt.itemsize
    sign = u(1 << (bits - 1))
    e = np.ascontiguousarray(keys).view(u).copy()
    if dt.kind == "i" and not bf16:
        e ^= sign
    elif dt.kind == "f" or bf16:
        # negative: all bits flipped; positive: the sign bit set. Whole-array
        # arithmetic, no masked ufuncs (those cost several passes).
        m = e >> u(bits - 1)
        m *= u((1 << (bits - 1)) - 1)
        m |= sign
        e ^= m
        nan = isnan(keys, bf16)
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
# each float dtype's zero, made once (searchsorted converts a Python float
# on every call)
_ZEROS = {}


def _fast_float(dt):
    """_np_sort_keeps_bits(dt), found on the first float sort here rather
    than at import (it costs about a millisecond)."""
    v = _FAST_FLOAT.get(dt)
    if v is None:
        v = _FAST_FLOAT[dt] = _np_sort_keeps_bits(dt)
    return v


def order(keys, descending, bf16=False):
    """The stable permutation that sorts keys in gsortd's order."""
    if keys.dtype.kind in "iu" and not descending and not bf16:
        return np.argsort(keys, kind="stable")
    return np.argsort(encode(keys, descending, bf16), kind="stable")


def bits_words(keys, descending, begin_bit, end_bit):
    """The words a sort by bits [begin_bit, end_bit) orders (gsortd's bit
    range, CUB's begin_bit/end_bit): of each integer key's order code (an
    unsigned key itself, a signed one with its sign bit flipped, every bit
    inverted for descending), that field, shifted down; uint32 where it
    fits (numpy sorts those faster)."""
    dt = keys.dtype
    u = _uint(dt)
    bits = 8 * dt.itemsize
    e = np.ascontiguousarray(keys).view(u).copy()
    if dt.kind == "i":
        e ^= u(1 << (bits - 1))
    if descending:
        np.invert(e, out=e)
    if begin_bit:
        e >>= u(begin_bit)
    width = end_bit - begin_bit
    if width < bits:
        e &= u((1 << width) - 1)
    if width <= 32 and bits > 32:
        e = e.astype(np.uint32)
    return e


def bits_order(keys, descending, begin_bit, end_bit):
    """The stable permutation that sorts keys by bits [begin_bit, end_bit)
    of their order code (bits_words): keys equal there keep input order."""
    return np.argsort(bits_words(keys, descending, begin_bit, end_bit), kind="stable")


def sort_keys(keys, descending, out, bf16=False, filled=False):
    """The keys sorted into out, as the daemon sorts them. filled: out
    (another array) holds the keys already (a.copy() costs less than
    np.empty and a copy into it)."""
    dt = keys.dtype
    if not (bf16 or dt.kind == "f"):
        if out is not keys and not filled:
            out[...] = keys
        # in place: one allocation fewer than np.sort
        out.sort(kind="stable" if dt.itemsize <= 2 else None)   # _kind()
        if descending:
            out[...] = out[::-1]    # numpy buffers the overlap
        return out
    n = keys.shape[0]
    if not bf16 and dt.itemsize > 2 and _fast_float(dt):
        # numpy's order but for the zeros (equal to numpy) and the NaNs
        # (last, in no promised order): put those two blocks right. Sorted
        # in out itself: one allocation and one copy fewer than np.sort.
        if out is keys:
            keys = keys.copy()          # the input's zeros and NaNs, for the fix-ups
        elif not filled:
            out[...] = keys
        s = out
        s.sort()
        nn = n
        # Python floats from item(): a numpy scalar's compare costs 20x
        # (1.4 us for s[i] == 0), a good part of a 1024-key sort
        last = s.item(-1) if n else 0.0
        if last != last:                    # a NaN last: numpy puts them there
            nn = n - int(np.count_nonzero(np.isnan(keys)))
        # Two zeros or more only need the fix-up: the first key not below
        # zero and the next one both zero (one search, two compares).
        zero = _ZEROS.get(dt)
        if zero is None:
            zero = _ZEROS[dt] = dt.type(0)
        lo = int(s.searchsorted(zero)) if nn == n else int(s[:nn].searchsorted(zero))
        if lo + 1 < nn and s.item(lo) == 0 and s.item(lo + 1) == 0:
            hi = int(s[:nn].searchsorted(zero, "right"))
            # counted in the input: numpy's sort may not keep the count
            k = int(np.count_nonzero(np.signbit(keys[keys == 0])))
            z = s[lo:hi]
            z[:k] = -0.0
            z[k:] = 0.0
    else:
        s = _decode_floats(np.sort(encode(keys, False, bf16), kind=_kind(keys.dtype)),
                           keys.dtype)
        nn = n - int(np.count_nonzero(isnan(keys, bf16))) if n and isnan(s[-1:], bf16)[0] \
            else n
    m = n - nn
    if m:                                   # NaN bit patterns in input order
        nans = keys[isnan(keys, bf16)]
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


def sort_rows(keys, descending, out, bf16=False):
    """Each row (the last axis) of keys sorted into out, as the daemon
    sorts them: integers by numpy's sort of the rows; floats by the stable
    order of their encoding, which keeps -0.0 before +0.0 and the NaNs'
    bit patterns in input order at the end of each row (at the start,
    descending)."""
    # integers; floats with no NaN and no zero: numpy's order is gsortd's,
    # and keys equal to numpy are equal bit for bit (for those floats half
    # the time of the encoded sort)
    if not _floats(keys, bf16) or (
            not bf16 and keys.dtype.itemsize > 2 and _fast_float(keys.dtype) and
            not np.isnan(keys).any() and not (keys == 0).any()):
        if out is not keys:
            out[...] = keys
        out.sort(axis=-1, kind=_kind(keys.dtype))
        if descending:
            out[...] = out[..., ::-1]
        return out
    if not isnan(keys, bf16).any():
        # numpy's sort of the encoded words: -0.0 before +0.0, exact bits
        s = _decode_floats(np.sort(encode(keys, False, bf16), axis=-1, kind=_kind(keys.dtype)),
                           keys.dtype)
        out[...] = s[..., ::-1] if descending else s
        return out
    i = order(keys, descending, bf16)   # NaNs' bit patterns in input order
    out[...] = np.take_along_axis(keys, i, axis=-1)
    return out


def sort_segments(keys, offsets, descending, out, bf16=False):
    """Each segment keys[offsets[s]:offsets[s + 1]] sorted into out, as
    the daemon sorts it (sort_keys, segment by segment)."""
    for s in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[s]), int(offsets[s + 1])
        if hi > lo:
            sort_keys(keys[lo:hi], descending, out[lo:hi], bf16)
    return out


def order_segments(keys, offsets, descending, out, bf16=False):
    """The stable permutation of each segment, counted from 0 within it,
    into out."""
    for s in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[s]), int(offsets[s + 1])
        if hi > lo:
            out[lo:hi] = order(keys[lo:hi], descending, bf16)
    return out


# ---- top-k ----

# From k this large a part of a row (k * TOPK_FULL_DIV >= the row's length)
# the row's stable order is made whole and its first k taken.
TOPK_FULL_DIV = 8
# Rows at least this long are selected one by one (a 1-D select each: its
# sample and candidates); shorter rows all at once, row-wise numpy.
TOPK_LONG_ROW = 1 << 15
# Keys sampled (at a stride) to guess a bound the k-th key lies within:
# one compare pass then leaves a few times k candidates.
TOPK_SAMPLE = 1 << 14


def _first_k(e, k, ordered):
    """The positions of the first k of the 1-D order words e (0 < k <
    len(e)) in the stable order (ordered) or in input order: e's k-th
    value by np.partition, every position below it and the earliest of
    those equal to it."""
    t = np.partition(e, k - 1)[k - 1]
    c = np.flatnonzero(e <= t)
    if c.shape[0] > k:
        lt = e[c] < t
        need = k - int(np.count_nonzero(lt))
        lt[np.flatnonzero(~lt)[:need]] = True   # the earliest ties
        c = c[lt]
    if ordered:
        c = c[np.argsort(e[c], kind="stable")]
    return c


def _topk_1d(keys, k, largest, ordered):
    """The positions of the first k keys of the 1-D array keys in gsortd's
    order (descending with largest), ties to the earliest."""
    n = keys.shape[0]
    if k == 0:
        return np.empty(0, np.int64)
    if k * TOPK_FULL_DIV >= n:
        return order(keys, largest)[:k]
    if n >= 4 * TOPK_SAMPLE and k * 32 <= n:
        # A bound from a strided sample, compared with the keys themselves
        # (no encoding of the whole array): the positions at or before it
        # in the order form a prefix of the order closed under ties (the
        # two zeros compare equal, a NaN fails every comparison: it is in
        # when largest, as it comes first, and out otherwise), so when
        # there are at least k of them the first k lie among them.
        s = keys[::n // TOPK_SAMPLE].copy()
        m = s.shape[0]
        exp = k * m / n
        r = int(exp + 4.0 * exp ** 0.5 + 16)
        if r < m:
            b = np.partition(s, r if not largest else m - 1 - r)[r if not largest else m - 1 - r]
            if b == b:                          # not a NaN
                c = np.flatnonzero(~(keys < b) if largest else keys <= b)
                if k <= c.shape[0] <= n // 4:
                    return c[_topk_1d(keys[c], k, largest, ordered)]
    e = keys if keys.dtype.kind in "iu" and not largest else encode(keys, largest)
    return _first_k(e, k, ordered)


def topk(keys, k, largest, ordered=True, bf16=False):
    """(values, positions): the first k keys of each row of keys (the last
    axis; a 1-D array is one row) in gsortd's order, ascending or, with
    largest, descending (NaNs first), exactly as a stable sort of the row
    lists them (of keys tied with the k-th, the earliest), with their
    positions in the row (int64). ordered=False: the k in input order
    (any order is allowed; the daemon's select gives this one too). The
    values are the keys' own bits (NaN payloads kept). bf16: keys are
    bfloat16 words: the first k of their order words, smallest first."""
    keys = np.ascontiguousarray(keys)
    if bf16:
        pos = topk(encode(keys, largest, True), k, False, ordered)[1]
        rows = keys.reshape(int(np.prod(keys.shape[:-1], dtype=np.int64)), keys.shape[-1])
        vals = np.take_along_axis(rows, pos.reshape(rows.shape[0], k), -1)
        return vals.reshape(pos.shape), pos
    shape = keys.shape
    length = shape[-1]
    if not 0 <= k <= length:
        raise ValueError("gsort: k = %d is not within 0 .. %d, the row's length" % (k, length))
    rows = keys.reshape(-1, length)
    nr = rows.shape[0]
    if k == 0 or nr == 0:
        pos = np.empty((nr, k), np.int64)
    elif length >= TOPK_LONG_ROW or nr == 1:
        pos = np.empty((nr, k), np.int64)
        for r in range(nr):
            pos[r] = _topk_1d(rows[r], k, largest, ordered)
    elif k * TOPK_FULL_DIV >= length:
        pos = order(rows, largest)[:, :k]
    else:
        # every row at once: each row's k-th value, the positions below it
        # and the earliest of those equal to it, then those k ordered
        e = rows if rows.dtype.kind in "iu" and not largest else encode(rows, largest)
        t = np.partition(e, k - 1, axis=-1)[:, k - 1:k]
        lt = e < t
        eq = e == t
        need = k - np.count_nonzero(lt, axis=-1)
        keep = np.cumsum(eq, axis=-1, dtype=np.int32 if length < 1 << 31 else np.int64)
        keep = (keep <= need[:, None]) & eq
        keep |= lt
        pos = np.nonzero(keep)[1].reshape(nr, k)
        if ordered:
            pos = np.take_along_axis(
                pos, np.argsort(np.take_along_axis(e, pos, -1), axis=-1, kind="stable"), -1)
    vals = np.take_along_axis(rows, pos, -1)
    out = shape[:-1] + (k,)
    return vals.reshape(out), pos.reshape(out)


def timed(fn, *args):
    t0 = time.perf_counter()
    r = fn(*args)
    return r, (time.perf_counter() - t0) * 1e3
