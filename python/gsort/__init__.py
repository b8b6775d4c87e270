"""gsort: sort numpy arrays with gsortd, the OpenCL sort service.

A client of the gsortd daemon in pure Python (standard library + numpy).
It speaks the daemon's wire protocol (man gsort-protocol(7)) over its Unix
socket and hands arrays over through a sealed shared-memory file (memfd),
so a sort costs one copy into shared memory and one copy out (over
several threads for large arrays), never a trip through the socket; where
memfd is unavailable the bytes travel inline. Arrays made by gsort.empty()
or gsort.asarray() live in shared memory themselves and are sorted where
they lie, with no copy at all, by sort(x, inplace=True) (and
sort_by_key(k, v, inplace=True) with both such arrays); the daemon keeps
memory it is sent more than once mapped (and pinned on a GPU), so those
arrays, and a Client's staging memory, move at the PCIe rate from the
second call on.

    >>> x = gsort.empty(1 << 24, np.float32)
    >>> x[...] = np.random.rand(x.shape[0])
    >>> gsort.sort(x, inplace=True) is x   # zero copy
    True

    >>> import numpy as np, gsort
    >>> a = np.array([3, 1, 2], dtype=np.uint32)
    >>> gsort.sort(a)
    array([1, 2, 3], dtype=uint32)
    >>> gsort.argsort(a)
    array([1, 2, 0])
    >>> gsort.topk(a, 2)                    # the 2 largest and where they are
    (array([3, 2], dtype=uint32), array([0, 2]))
    >>> with gsort.Client() as c:
    ...     s = c.sort(np.random.rand(1 << 20), algorithm="radix")
    ...     c.last["algorithm"], c.last["device"], c.last["times_ms"]["sort"]

Keys: arrays of uint8, int8, uint16, int16, float16, uint32, int32,
float32, uint64, int64 or float64 in native byte order, and bfloat16: an
array of ml_dtypes.bfloat16 (recognised by its dtype's name; ml_dtypes
is not needed otherwise), or a uint16 or int16 array holding bfloat16
words with key_type="bf16" (sort, argsort, sort_by_key, topk and the
segment sorts; the result's keys keep the array's dtype). Any other
dtype is a TypeError. gsortd sorts 8- and 16-bit keys ("u8", "i8",
"u16", "i16", "f16", "bf16" on the wire) as their order-keeping 32-bit
words, flat, in rows, as top-k and in segments, with or without values.
sort() and argsort() sort an array of two or more
dimensions along its last axis, each row on its own, in one request
(np.sort(a, axis=-1)), and topk() takes each row's k largest or smallest
(torch.topk, issue 38); another axis is a ValueError (np.moveaxis puts
it last), as is a 0-D array; sort_by_key takes 1-D arrays, as do
sort_segments() and argsort_segments(), which sort each segment of a 1-D
array given by offsets on its own (CUB's segmented sort, issue 38). A
non-contiguous array is copied. Array-likes (lists) go through
numpy.asarray first.

Order: integers by value; floats (float16 and bfloat16 too) in numpy's
order, -inf < ... < -0.0 < +0.0 < ... < +inf < NaN (NaNs last, all NaNs
equal), with -0.0 always before +0.0 (numpy treats the two zeros as
equal and keeps them as they come). descending=True is the exact reverse
of that order, so NaNs come FIRST; numpy's idiom np.sort(a)[::-1] gives
the same sorted values. With stable=True equal keys keep their input
order in either direction, so argsort(a, stable=True) equals
np.argsort(a, kind="stable") (when a holds no mix of -0.0 and +0.0), and
argsort(a, descending=True, stable=True) lists equal keys in input
order, unlike np.argsort(a)[::-1].

Bit ranges: sort(), argsort() and sort_by_key() take begin_bit and
end_bit (CUB's begin_bit/end_bit; either alone: the other is 0 or the
key's width): the keys are ordered by bits [begin_bit, end_bit) of each
key's order code alone (for uint32/uint64 the key itself, for
int32/int64 the key with its sign bit flipped, inverted for
descending=True), and keys equal within the range keep their input order
(always stable). Integer keys of 32 and 64 bits only (another dtype is a
TypeError), 1-D arrays only and 0 <= begin_bit < end_bit <= the key's
bits (ValueError otherwise), all before anything is sent; the whole key's
range is a plain sort.

Errors: everything the daemon or the connection reports is a gsort.Error
with .code ("GS_EINVAL", "GS_ETOOBIG", "GS_ENOTFOUND", "GS_EUNSUPPORTED",
"GS_EIO", ...) and .message; str(e) of a daemon error starts "gsortd: ".
gsort.NoDaemonError (code "GS_ENODAEMON") when nothing listens on the
socket. After an error reply the connection serves the next call; after
the daemon closed it (e.closed is True: a fatal request, an idle timeout)
or a timeout, the next call connects again.

Socket: Client(socket=None) uses $GSORTD_SOCKET when set, else
$XDG_RUNTIME_DIR/gsortd.sock when that exists, else the system daemon's
/run/gsortd/gsortd.sock (see default_socket()).

Threads: a Client serves one call at a time (calls from several threads
are serialised). The module-level functions use one default Client per
thread (and per process, after a fork), created on first use.
"""

import contextlib
import errno
import fcntl
import json
import mmap
import operator
import os
import select
import socket as _socket
import struct
import sys
import threading
import time
from time import perf_counter as _perf_counter
import weakref

import numpy as np

from . import _local
from . import _native

__all__ = [
    "Client", "Error", "NoDaemonError", "SUPPORTED_DTYPES", "default_socket",
    "default_client", "sort", "argsort", "lexsort", "topk", "sort_by_key", "sort_segments",
    "argsort_segments", "info", "stats", "ping",
]

__version__ = "0.1.0"
PROTOCOL = 1

# The key dtypes: the one list here a new key type joins (the protocol's
# name, its width and its encoding all follow from numpy's kind and size).
# bfloat16, which numpy lacks, is not among them: an array of ml_dtypes'
# bfloat16, or a uint16/int16 array with key_type="bf16", is sorted as its
# raw 16-bit words, "bf16" on the wire (_key_wire).
SUPPORTED_DTYPES = ("uint32", "int32", "float32", "uint64", "int64", "float64",
                    "uint8", "int8", "uint16", "int16", "float16")
# the supported dtypes (native order) and their protocol names, looked up
# first: _wire_dtype runs on every call
_WIRE_NAMES = {np.dtype(d): "%s%d" % (np.dtype(d).kind, 8 * np.dtype(d).itemsize)
               for d in SUPPORTED_DTYPES}
_WIRE_KINDS = frozenset((np.dtype(d).kind, np.dtype(d).itemsize) for d in SUPPORTED_DTYPES)
# sizes a plain sort() takes straight to numpy (Client.sort's first lines)
_LOCAL_UPTO = _local.LOCAL_ALWAYS_UPTO
# A size whose routing chose numpy's sort here takes it directly this many
# calls, then routes once again (the Router and Pick time it, and try the
# other routes as they would): their bookkeeping cost 5-10 us a call, 20-70%
# of numpy's own sort of 2^12-2^14 keys on an H100 machine's AVX-512 host.
SETTLED_CALLS = 15
_ndarray = np.ndarray

# Reply headers are small (info and stats are the largest); this only bounds
# what a confused peer can make us allocate.
_MAX_REPLY_HEADER = 4 << 20
_TWO_53 = 1 << 53
# A staging memfd at most this large is kept for the next call (the default
# of Client's keep_stage_bytes): the daemon keeps a file sent again mapped
# and pinned, so a kept stage moves at the PCIe rate from the second call
# on; a larger one is released after its call, so one huge sort does not
# hold its shared memory (which the kernel cannot page out without swap)
# for the client's lifetime.
_KEEP_STAGE_BYTES = 2 << 30
# A copy takes one thread per this many bytes, up to 8 and the CPUs there
# are (numpy releases the GIL while it copies): one thread moves ~5-10 GB/s,
# far below the memory's bandwidth and the daemon's 55 GB/s to a GPU, while
# handing a part to a thread costs ~10 us. Below two threads' worth the copy
# runs on the caller's thread alone.
_COPY_BYTES_PER_THREAD = 4 << 20
# A leased stage (a sort's result left in the staging memory) is at most this
# many times the result's bytes: a stage grown by an earlier large request is
# not handed out to hold a small result (below 1 MiB it always may be).
_LEASE_SLACK = 4
# Free stages a Client keeps for its next sorts besides the current one.
_FREE_STAGES = 2
# Requests with at most this much payload go out in one send.
_SMALL_SEND = 64 << 10


class Error(Exception):
    """A failed request: .code is the error's name ("GS_EINVAL", ...),
    .message the sentence, .closed whether the connection was closed."""

    def __init__(self, code, message, daemon=False, closed=False):
        self.code = code
        self.message = message
        self.daemon = daemon
        self.closed = closed
        super().__init__(("gsortd: " if daemon else "") + message)


class NoDaemonError(Error):
    """Nothing listens on the socket (code "GS_ENODAEMON")."""

    def __init__(self, path, why):
        self.path = path
        super().__init__(
            "GS_ENODAEMON",
            "no gsortd listens at %s (%s); start the daemon with 'gsortd', or "
            "'gsortd --socket PATH' and set GSORTD_SOCKET=PATH" % (path, why))


def default_socket():
    """The socket a Client(socket=None) connects to: $GSORTD_SOCKET when
    set, else $XDG_RUNTIME_DIR/gsortd.sock when it exists (not for root,
    whose gsortd listens on the system socket), else
    /run/gsortd/gsortd.sock. The rule of libgsort's gsort_connect."""
    p = os.environ.get("GSORTD_SOCKET")
    if p:
        return p
    d = os.environ.get("XDG_RUNTIME_DIR") if os.geteuid() != 0 else None
    # The XDG spec says a relative value is to be ignored.
    if d and d.startswith("/"):
        p = os.path.join(d, "gsortd.sock")
        if os.path.exists(p):
            return p
    return "/run/gsortd/gsortd.sock"


# ---- dtypes ----

def _is_bfloat16(dt):
    """ml_dtypes' bfloat16 (or any 2-byte dtype of that name), told apart
    without importing ml_dtypes."""
    return dt.name == "bfloat16" and dt.itemsize == 2 and dt.names is None


def _wire_dtype(dt):
    """The protocol's name for a key dtype ("u32", ..., "bf16" for
    ml_dtypes' bfloat16); TypeError otherwise."""
    name = _WIRE_NAMES.get(dt)
    if name is not None:
        return name
    known = (dt.kind, dt.itemsize) in _WIRE_KINDS
    if (known and dt.isnative and
            dt.names is None and dt.subdtype is None):
        return "%s%d" % (dt.kind, 8 * dt.itemsize)
    if _is_bfloat16(dt):
        return "bf16"
    what = str(dt)
    if known and not dt.isnative:
        what += " (non-native byte order %r)" % dt.str
    raise TypeError("gsort: dtype %s is not supported; keys must be one of %s "
                    "in native byte order, or bfloat16 (ml_dtypes.bfloat16, or "
                    "uint16 bits with key_type=\"bf16\"); convert with a.astype(...)"
                    % (what, ", ".join(SUPPORTED_DTYPES)))


def _key_wire(dt, key_type):
    """(wire name, bf16): the protocol's name for keys of dtype dt read as
    key_type (None: as dt says; "bf16": a uint16 or int16 array's words as
    bfloat16), and whether they are bfloat16 words (sent and sorted here
    as their uint16 view). TypeError or ValueError otherwise."""
    if key_type is None:
        w = _wire_dtype(dt)
        return w, w == "bf16"
    if not isinstance(key_type, str) or key_type not in ("bf16", "bfloat16"):
        raise ValueError("gsort: key_type must be None or \"bf16\" (a uint16 or int16 "
                         "array's bits read as bfloat16), not %r" % (key_type,))
    if _is_bfloat16(dt) or (dt.kind in "iu" and dt.itemsize == 2 and dt.isnative and
                            dt.names is None):
        return "bf16", True
    raise TypeError("gsort: key_type=\"bf16\" reads each key's 16 bits as a bfloat16: "
                    "the keys must be uint16 or int16 (native byte order) or "
                    "ml_dtypes.bfloat16, not %s" % dt)


def _bits16(a, bf16):
    """a itself, or its uint16 view when its keys are bfloat16 words."""
    return a.view(np.uint16) if bf16 and a is not None else a


def _as_1d(a, what):
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError("gsort: %s must be a 1-D array, not %d-D of shape %s "
                         "(sort a.ravel() for the flattened order)"
                         % (what, arr.ndim, arr.shape))
    return arr


def _rows_of(a, axis, what):
    """(flat, rows, shape): a along its last axis as one 1-D C-contiguous
    array of rows equal rows (0: a 1-D array, one flat sort), and the shape
    to give the result back. Only the last axis (numpy's default, -1)."""
    arr = np.asarray(a)
    if arr.ndim <= 1:
        return _as_1d(arr, what), 0, arr.shape
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or \
            axis not in (-1, arr.ndim - 1):
        raise ValueError("gsort: %s of shape %s is sorted along its last axis only "
                         "(axis=-1), not axis=%r; np.moveaxis(a, axis, -1) puts the "
                         "axis last" % (what, arr.shape, axis))
    arr = np.ascontiguousarray(arr)
    rows = arr.size // arr.shape[-1] if arr.shape[-1] else 0
    return arr.reshape(-1), rows, arr.shape


def _segment_offsets(offsets, n):
    """offsets as a C-contiguous uint64 array of S + 1 (S >= 1): 0 first,
    never decreasing, n last; ValueError or TypeError otherwise."""
    o = np.asarray(offsets)
    if o.ndim != 1 or o.shape[0] < 2:
        raise ValueError("gsort: offsets must be a 1-D sequence of S + 1 integers (S >= 1 "
                         "segments), not of shape %s" % (o.shape,))
    if o.dtype.kind not in "iu":
        raise TypeError("gsort: offsets must be integers, not %s" % o.dtype)
    if o.dtype.kind == "i" and (o < 0).any():
        raise ValueError("gsort: offsets must not be negative")
    o = np.ascontiguousarray(o, dtype=np.uint64)
    if o[0] != 0:
        raise ValueError("gsort: offsets must start at 0, not %d" % o[0])
    d = np.flatnonzero(o[1:] < o[:-1])
    if d.shape[0]:
        i = int(d[0]) + 1
        raise ValueError("gsort: offsets decrease: offsets[%d] = %d after offsets[%d] = %d"
                         % (i, o[i], i - 1, o[i - 1]))
    if int(o[-1]) != n:
        raise ValueError("gsort: the last offset (%d) must be the array's length %d"
                         % (o[-1], n))
    return o


def _forced(algorithm, params, device, split):
    """The call names its route: it never sorts locally (Client's doc).
    "auto" is the daemon's own choice, as in libgsort's local_allowed."""
    return (algorithm not in (None, "auto") or params is not None or device is not None or
            bool(split))


def _writable_contiguous(a, what):
    if not isinstance(a, np.ndarray):
        raise ValueError("gsort: inplace=True needs %s to be a numpy array" % what)
    if not (a.flags.c_contiguous and a.flags.writeable):
        raise ValueError("gsort: inplace=True needs %s to be writable and "
                         "C-contiguous" % what)


def _params(params):
    """{name: int} for the header; numpy integers accepted, not floats."""
    try:
        items = dict(params).items()
        out = {}
        for k, v in items:
            if not isinstance(k, str) or isinstance(v, (bool, np.bool_)):
                raise TypeError
            out[k] = operator.index(v)
    except (TypeError, ValueError):
        raise TypeError("gsort: params must map names (strings) to integers, e.g. "
                        "{\"radix_bits\": 4}") from None
    return out


def _device(device):
    """A device index for the header. Only integers (numpy ones too): a
    bool would otherwise go out as device 0 or 1 and a float be truncated."""
    if not isinstance(device, (bool, np.bool_)):
        try:
            return operator.index(device)
        except TypeError:
            pass
    raise TypeError("gsort: device must be an integer device index (see info()["
                    "\"devices\"]), not %s %r" % (type(device).__name__, device))


def _split(split):
    """The header's "split" (see Client.sort). Only a bool: the protocol
    refuses anything else, and a truthy string is a mistake worth saying."""
    if not isinstance(split, (bool, np.bool_)):
        raise TypeError("gsort: split must be True, False or None, not %s %r"
                        % (type(split).__name__, split))
    return bool(split)


def _route_fields(header, algorithm, params, device, split):
    """A sort header's route: the algorithm, its params, the device and the
    split ask, each where given (checked as the daemon would)."""
    if algorithm is not None:
        if not isinstance(algorithm, str):
            raise TypeError("gsort: algorithm must be a string")
        header["algorithm"] = algorithm
    if params is not None:
        if algorithm is None:
            raise ValueError("gsort: params need an algorithm")
        header["params"] = _params(params)
    if device is not None:
        header["device"] = _device(device)
    if split is not None:
        header["split"] = _split(split)


def _index_dtype(index_dtype, n):
    """index_dtype as a numpy dtype able to count n places: TypeError for
    another than int64, uint64, int32 and uint32, ValueError when too
    narrow."""
    idt = np.dtype(index_dtype)
    if idt.kind not in "iu" or idt.itemsize not in (4, 8) or not idt.isnative:
        raise TypeError("gsort: index_dtype must be int64, uint64, int32 or uint32")
    if n - 1 > np.iinfo(idt).max:
        raise ValueError("gsort: %d indices do not fit in %s" % (n, idt))
    return idt


_LEX_MAX_KEYS = 8       # the daemon's lexsort takes up to this many keys


def _lex_wire(dt):
    """TypeError unless dt is a lexsort key type (bool, integers of up to
    64 bits, float16/32/64, in this machine's byte order)."""
    if not ((dt.kind in "biu" and dt.itemsize <= 8) or
            (dt.kind == "f" and dt.itemsize in (2, 4, 8))):
        raise TypeError("gsort: lexsort keys of dtype %s are not supported (bool, integers "
                        "of up to 64 bits, float16, float32 and float64 are)" % dt)


def _lex_encoded(a, descending):
    """(bits, words): the 1-D array a as unsigned words of its own width
    whose plain order is a's order (descending: reversed), in as many bits
    as a's values take (bool 1, an integer or float its width). Floats:
    -0.0 and +0.0 are one key (np.lexsort's ties), every NaN one key after
    +inf (ascending)."""
    dt = a.dtype
    if dt.kind == "b":
        bits, w = 1, a.astype(np.uint8)
    elif dt.kind == "u" and dt.itemsize <= 8:
        bits, w = 8 * dt.itemsize, a
    elif dt.kind == "i" and dt.itemsize <= 8:
        bits = 8 * dt.itemsize
        u = np.dtype("u%d" % dt.itemsize)
        w = a.view(u) ^ u.type(1 << (bits - 1))
    elif dt.kind == "f" and dt.itemsize in (2, 4, 8):
        bits = 8 * dt.itemsize
        u = np.dtype("u%d" % dt.itemsize)
        sign = u.type(1 << (bits - 1))
        x = np.where(a == 0, np.zeros(1, dt), a)           # -0.0 as +0.0
        b = x.view(u)
        neg = (b & sign) != 0
        w = np.where(neg, ~b, b | sign)
        w[np.isnan(x)] = np.iinfo(u).max
    else:
        raise TypeError("gsort: lexsort keys of dtype %s are not supported (bool, integers "
                        "of up to 64 bits, float16, float32 and float64 are)" % dt)
    if descending:
        w = w.dtype.type((1 << bits) - 1) - w
    return bits, w


def _topk_k(k, length):
    """topk's k as an int in 0 .. length (a row's length): TypeError for
    a non-integer (a bool, a float), ValueError outside that range (the
    daemon refuses it too)."""
    if not isinstance(k, (bool, np.bool_)):
        try:
            k = operator.index(k)
        except TypeError:
            k = None
    else:
        k = None
    if k is None:
        raise TypeError("gsort: k must be an integer")
    if not 0 <= k <= length:
        raise ValueError("gsort: k = %d is not within 0 .. %d, the length of a row" %
                         (k, length))
    return k


# The key types a bit range sorts (the daemon's rule, gsort-protocol(7)).
_BITS_WIRES = ("u32", "i32", "u64", "i64")


def _bit_range(dt, wire, begin_bit, end_bit, shape):
    """(begin, end) for a sort by that bit range of the keys' order code,
    or None for no range (neither given, or the whole key). Checked as the
    daemon checks it: TypeError for a non-integer bound or keys other than
    32- and 64-bit integers, ValueError for a range outside the key or an
    array of two or more dimensions (the daemon sorts one flat array by a
    range, not rows)."""
    if begin_bit is None and end_bit is None:
        return None
    bounds = []
    for name, v in (("begin_bit", begin_bit), ("end_bit", end_bit)):
        if v is not None:
            w = None
            if not isinstance(v, (bool, np.bool_)):
                try:
                    w = operator.index(v)
                except TypeError:
                    pass
            if w is None:
                raise TypeError("gsort: %s must be an integer (a bit number) or None, not "
                                "%s %r" % (name, type(v).__name__, v))
            v = w
        bounds.append(v)
    if wire not in _BITS_WIRES:
        raise TypeError("gsort: a bit range (begin_bit/end_bit) sorts 32- and 64-bit integer "
                        "keys (uint32, int32, uint64, int64), not %s" %
                        ("bfloat16" if wire == "bf16" else dt))
    bits = 8 * dt.itemsize
    lo = 0 if bounds[0] is None else bounds[0]
    hi = bits if bounds[1] is None else bounds[1]
    if not 0 <= lo < hi <= bits:
        raise ValueError("gsort: bit range [%d, %d) is not within the %d bits of a %s key "
                         "(0 <= begin_bit < end_bit <= %d)" % (lo, hi, bits, dt, bits))
    if len(shape) > 1:
        raise ValueError("gsort: a bit range sorts a 1-D array, not one of shape %s (gsortd "
                         "takes no rows with a range: sort each row, or a.ravel())"
                         % (shape,))
    if lo == 0 and hi == bits:
        return None         # the whole key: a plain sort
    return lo, hi


def _round_up(x, m):
    return (x + m - 1) // m * m


# ---- the staging memfd ----

class _Stage:
    """One sealed memfd, mapped, reused from call to call and grown as
    needed (F_SEAL_SHRINK, which the daemon requires, allows growing)."""

    def __init__(self):
        self.fd = -1
        self.map = None
        self.size = 0

    def ensure(self, need):
        if need <= self.size:
            return
        page = mmap.PAGESIZE
        if need <= _KEEP_STAGE_BYTES:
            # Doubling is cheap: the file is sparse until written.
            size = _round_up(max(need, min(2 * self.size, _KEEP_STAGE_BYTES)), page)
        else:
            size = _round_up(need, page)
        if self.fd < 0:
            fd = os.memfd_create("gsort", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            try:
                os.ftruncate(fd, size)
                # The daemon maps the file: a shrink under its feet would
                # crash it, so it refuses files without this seal.
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
            except BaseException:
                os.close(fd)
                raise
            self.fd = fd
        else:
            self._unmap()
            os.ftruncate(self.fd, size)
        self.size = size
        self.map = mmap.mmap(self.fd, size)

    def _unmap(self):
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:
                # An array view still refers to it (a traceback frame): the
                # mapping goes when that view does.
                pass
            self.map = None

    def close(self):
        self._unmap()
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self.size = 0


# ---- copies ----

_pool = None
_pool_lock = threading.Lock()
_ncpu = None


def _cpus():
    global _ncpu
    if _ncpu is None:
        try:
            _ncpu = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            _ncpu = os.cpu_count() or 1
    return _ncpu


def _after_fork_in_child():
    # The copy threads did not come along: a pool that believes it has them
    # would queue a forked child's copies for ever.
    global _pool, _ncpu
    _pool = None
    _ncpu = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Concat:
    """1-D arrays of one dtype taken end to end, standing for their
    concatenation without making it: the memfd path copies each straight
    to its place in the staging memory, the inline path sends them one
    after another. (gsort.dask's merges sort such pieces: a concatenated
    array would be one more array of fresh pages, which on a worker that
    keeps its results cost more than the sort's own copies.)"""

    __slots__ = ("parts", "dtype", "shape", "nbytes")

    def __init__(self, parts, dtype):
        self.dtype = np.dtype(dtype)
        self.parts = [np.ascontiguousarray(p) for p in parts]
        for p in self.parts:
            if p.ndim != 1:
                raise ValueError("gsort: the parts must be 1-D arrays")
            if p.dtype != self.dtype:
                raise TypeError("gsort: parts of dtypes %s and %s" % (self.dtype, p.dtype))
        self.shape = (sum(p.shape[0] for p in self.parts),)
        self.nbytes = self.shape[0] * self.dtype.itemsize

    def view(self, dtype):
        return _Concat([p.view(dtype) for p in self.parts], dtype)


def _copy(dst, src):
    """dst[...] = src for 1-D arrays of the same length (src may be a
    _Concat), over several threads when it is large."""
    if isinstance(src, _Concat):
        at = 0
        for p in src.parts:
            _copy(dst[at:at + p.shape[0]], p)
            at += p.shape[0]
        return
    n = dst.shape[0]
    threads = dst.nbytes // _COPY_BYTES_PER_THREAD
    if threads < 2:             # first: os.cpu_count() costs ~9 us
        dst[...] = src
        return
    threads = min(threads, 8, _cpus())
    if threads < 2 or n < threads:
        dst[...] = src
        return
    global _pool
    with _pool_lock:
        if _pool is None:
            import concurrent.futures
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=7,
                                                          thread_name_prefix="gsort-copy")

    def part(i):
        a, b = n * i // threads, n * (i + 1) // threads
        dst[a:b] = src[a:b]

    futures = [_pool.submit(part, i) for i in range(1, threads)]
    part(0)
    for f in futures:
        f.result()


# ---- arrays in shared memory (zero copy) ----

# Blocks made by empty(): (start address, end address, fd), by id of the
# mapping; an entry goes with its mapping (weakref.finalize), when the last
# array on it is gone.
_blocks = {}
_blocks_lock = threading.Lock()


def _block_close(key, fd):
    with _blocks_lock:
        _blocks.pop(key, None)
    try:
        os.close(fd)
    except OSError:
        pass


def empty(n, dtype):
    """A new 1-D array of n items of dtype that lives in shared memory (a
    sealed memfd): the daemon sorts it where it lies, with no copy, when
    it is given to sort(..., inplace=True) or, with values from the same
    kind of array, sort_by_key(..., inplace=True); sent again and again
    it is kept mapped and, on a GPU, pinned by the daemon, so its copies to
    the device run at the PCIe rate. Any other use is as an ordinary
    array; its memory goes when the last array or view on it does."""
    if not _memfd_supported():
        raise Error("GS_EUNSUPPORTED", "this Python lacks os.memfd_create, "
                    "fcntl.F_ADD_SEALS or socket.send_fds: no shared arrays")
    dt = np.dtype(dtype)
    n = operator.index(n)
    if n < 0:
        raise ValueError("gsort: n must not be negative")
    size = _round_up(max(n * dt.itemsize, 1), mmap.PAGESIZE)
    fd = os.memfd_create("gsort-array", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        m = mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        raise
    a = np.frombuffer(m, dtype=dt, count=n)
    start = a.__array_interface__["data"][0]
    key = id(m)
    with _blocks_lock:
        _blocks[key] = (start, start + size, fd)
    weakref.finalize(m, _block_close, key, fd)
    return a


def asarray(a):
    """A copy of the 1-D array a in shared memory (see empty())."""
    a = _as_1d(a, "the array")
    out = empty(a.shape[0], a.dtype)
    _copy(out, a)
    return out


def _block_of(a):
    """(fd, offset) when all of array a lies in one block of empty(),
    else None."""
    if a.shape[0] == 0 or not a.flags.c_contiguous:
        return None
    p = a.__array_interface__["data"][0]
    with _blocks_lock:
        for start, end, fd in _blocks.values():
            if start <= p and p + a.nbytes <= end:
                return fd, p - start
    return None


def _same_memory(a, b):
    return (a is not None and b is not None and a.nbytes == b.nbytes and
            a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def _in_place(keys, dst_keys, values, dst_vals, values_kind):
    """(fd, keys offset, values offset or None) when the sort can run where
    the arrays lie: the output is the input (inplace), and keys and values
    (u32/u64) lie in one block of empty(); else None."""
    if not _same_memory(keys, dst_keys) or values_kind not in ("none", "u32", "u64"):
        return None
    kb = _block_of(keys)
    if kb is None:
        return None
    if values_kind == "none":
        return kb[0], kb[1], None
    if not _same_memory(values, dst_vals):
        return None
    vb = _block_of(values)
    if vb is None or vb[0] != kb[0]:
        return None
    return kb[0], kb[1], vb[1]


def _memfd_supported():
    return (hasattr(os, "memfd_create") and hasattr(fcntl, "F_ADD_SEALS") and
            hasattr(_socket, "send_fds"))


# ---- the client ----

class Client:
    """A connection to gsortd.

    Client(socket=None, timeout=None, memfd=None): socket is the daemon's
    socket path (None: default_socket()); timeout the seconds to wait for
    the daemon on any one socket operation, a sort's whole run included
    (None: for ever; a timed-out call raises Error "GS_EIO"); memfd False
    sends every array inline on the socket, None/True uses shared memory
    when the system has it (memfd_error then says why not when it did not
    work). Use as a context manager, or call close().

    Small arrays are sorted here, in the calling process, when that is
    faster than a round trip to the daemon (local=True, the default; see
    gsort._local): the Client times both routes per request shape and
    size as it goes and takes the faster, so a call is never slower than
    numpy's own sort for long; up to 2048 keys (_local.LOCAL_ALWAYS_UPTO),
    and at a size that settled on numpy's sort, sort() sorts here at once,
    without timing anything (routing again every SETTLED_CALLS + 1
    calls). The result is the same either way (gsortd's
    order, NaNs and zeros included). local=False, or GSORT_NO_LOCAL=1 in
    the environment, always asks the daemon; so does any call that names
    an algorithm, params, a device or a split. c.last["where"] says which
    ran it: "local" (then "algorithm" is "numpy" or "host") or "daemon".
    A local sort of one flat array is numpy's or, where libgsort is found
    (gsort._native: $GSORT_LIBRARY, else libgsort.so.0), the daemon's own
    host sort linked into it ("host"), whichever the Client measured
    faster for the request's shape and size; local_sort="numpy" or "host"
    keeps to one (ValueError for "host" without the library).

    After each successful call c.last is the daemon's reply header (a
    dict, see gsort-protocol(7)); for a sort it says where the sort ran:
    "device" ({index, name, platform} or None for the host sort),
    "algorithm", "params", "plan", "times_ms" ({queue, receive, upload,
    sort, download, total, and total's spans admit, run, handback, with a
    device's steps setup, enqueue, wait, writeback, release}), plus
    "zero_copy" (the memfd was used), "client_ms" (the whole call as
    seen from Python) and, through the memfd, "client_times_ms" ({copy_in,
    round_trip: the request sent to its reply read, copy_out}).
    """

    def __init__(self, socket=None, timeout=None, memfd=None,
                 keep_stage_bytes=_KEEP_STAGE_BYTES, local=None, local_sort=None):
        self.path = socket if socket is not None else default_socket()
        if local is None:
            local = os.environ.get("GSORT_NO_LOCAL", "") in ("", "0")
        self.local = bool(local)
        self.router = _local.Router()
        if local_sort not in (None, "numpy", "host"):
            raise ValueError("gsort: local_sort must be None (the faster, measured), "
                             "\"numpy\" or \"host\" (libgsort's), not %r" % (local_sort,))
        if local_sort == "host" and not _native.available():
            raise ValueError("gsort: local_sort=\"host\" needs libgsort: %s"
                             % _native.why_not())
        # None: not decided yet (the library is looked for on the first
        # local sort that could use it)
        self.local_sort = local_sort
        self._pick = _native.Pick()
        if timeout is not None and not timeout > 0:
            raise ValueError("gsort: timeout must be a positive number of seconds or None")
        self.timeout = timeout
        self.keep_stage_bytes = keep_stage_bytes
        self.use_memfd = memfd is not False and _memfd_supported()
        self.memfd_error = None if self.use_memfd or memfd is False else \
            "this Python lacks os.memfd_create, fcntl.F_ADD_SEALS or socket.send_fds"
        self._last_small = None
        self._settled = {}      # sort()'s settled sizes: calls left before routing again
        self.last = None
        self._sock = None
        self._closed = False
        self._next_id = 1
        self._stage = _Stage()
        self._lock = threading.RLock()
        self._connect()

    @property
    def last(self):
        """What the last call did (the class's doc): the daemon's reply
        header, or where a local sort ran."""
        q = self._last_small
        if q is not None:
            # a small sort() (its first lines) left its numbers only: the
            # dict costs a good part of such a call, so it is made here
            self._last_small = None
            self._last = {"where": "local", "algorithm": "numpy", "n": q[0],
                          "client_ms": (q[2] - q[1]) * 1e3}
        return self._last

    @last.setter
    def last(self, value):
        self._last_small = None
        self._last = value

    # -- connection --

    def _connect(self):
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.path)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            s.close()
            raise NoDaemonError(self.path, e.strerror or str(e)) from None
        except _socket.timeout:
            s.close()
            raise Error("GS_EIO", "timed out connecting to gsortd at %s" % self.path) from None
        except OSError as e:
            s.close()
            hint = ""
            if e.errno in (errno.EACCES, errno.EPERM):
                hint = " (are you in the socket's group?)"
            raise Error("GS_EIO", "cannot connect to gsortd at %s: %s%s"
                        % (self.path, e.strerror or e, hint)) from None
        self._sock = s

    def _drop(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _usable(self):
        """The socket for a new request, connecting again when the daemon
        closed the last one (an idle timeout, a fatal error)."""
        if self._closed:
            raise ValueError("gsort: operation on a closed Client")
        if self._sock is not None:
            # Between requests the daemon sends nothing: anything readable
            # means it closed the connection (idle_timeout) or is confused.
            p = select.poll()   # not select(): descriptors may exceed FD_SETSIZE
            p.register(self._sock, select.POLLIN)
            if p.poll(0):
                self._drop()
        if self._sock is None:
            self._connect()
        return self._sock

    def close(self):
        """Close the connection and release the shared memory."""
        with self._lock:
            self._closed = True
            self._drop()
            self._stage.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._drop()
            self._stage.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self._closed else "connected" if self._sock else "idle"
        return "<gsort.Client %s %s>" % (self.path, state)

    # -- framing --

    def _broken(self, code, message):
        self._drop()
        return Error(code, message, closed=True)

    def _io_error(self, e, doing):
        if isinstance(e, _socket.timeout):
            return self._broken("GS_EIO", "timed out after %g s %s gsortd at %s"
                                % (self.timeout, doing, self.path))
        return self._broken("GS_EIO", "%s gsortd at %s: %s"
                            % (doing, self.path, getattr(e, "strerror", None) or e))

    def _recv_into(self, buf):
        view = memoryview(buf).cast("B")
        got = 0
        while got < len(view):
            k = self._sock.recv_into(view[got:], min(len(view) - got, 1 << 24))
            if k == 0:
                raise ConnectionError("closed")
            got += k

    def _recv_exact(self, n):
        buf = bytearray(n)
        self._recv_into(buf)
        return buf

    def _drain(self, n):
        scratch = bytearray(min(n, 1 << 20))
        while n > 0:
            k = min(n, len(scratch))
            self._recv_into(memoryview(scratch)[:k])
            n -= k

    def _recv_header(self):
        """Read one reply header: (dict, payload_bytes)."""
        try:
            head = self._recv_exact(4)
        except ConnectionError:
            raise self._broken("GS_EIO", "gsortd at %s closed the connection without "
                               "a reply" % self.path) from None
        except OSError as e:
            raise self._io_error(e, "waiting for a reply from") from None
        (hlen,) = struct.unpack(">I", head)
        if not 1 <= hlen <= _MAX_REPLY_HEADER:
            raise self._broken("GS_ECORRUPT", "bad reply frame from gsortd: a %d-byte "
                               "header" % hlen)
        try:
            text = self._recv_exact(hlen)
        except ConnectionError:
            raise self._broken("GS_EIO", "gsortd at %s closed the connection in the "
                               "middle of a reply" % self.path) from None
        except OSError as e:
            raise self._io_error(e, "reading a reply from") from None
        try:
            h = json.loads(bytes(text))
        except ValueError:
            h = None
        if not isinstance(h, dict):
            raise self._broken("GS_ECORRUPT", "reply header from gsortd is not a JSON object")
        if h.get("v") != PROTOCOL:
            raise self._broken("GS_EUNSUPPORTED", "gsortd replied with protocol version "
                               "%r; this client speaks %d" % (h.get("v"), PROTOCOL))
        pb = h.get("payload_bytes", 0)
        if isinstance(pb, float) and pb.is_integer():
            pb = int(pb)
        if not isinstance(pb, int) or isinstance(pb, bool) or not 0 <= pb <= _TWO_53:
            raise self._broken("GS_ECORRUPT", "reply payload_bytes is not a byte count")
        return h, pb

    def _reply_error(self, h):
        """An Error for an "ok":false reply (dropping the connection when
        the daemon says it closes it)."""
        e = h.get("error") if isinstance(h.get("error"), dict) else {}
        code = e.get("code") if isinstance(e.get("code"), str) else "GS_EIO"
        msg = e.get("message") if isinstance(e.get("message"), str) else "(no message)"
        closed = h.get("close") is True
        if closed:
            self._drop()
        return Error(code, msg, daemon=True, closed=closed)

    def _send(self, header, parts=(), fd=None):
        """Send one request: header, then the payload parts (buffers)."""
        h = json.dumps(header, separators=(",", ":")).encode()
        head = struct.pack(">I", len(h)) + h
        sock = self._sock
        try:
            if fd is not None:
                # The descriptor rides with the frame head (the protocol
                # wants it on bytes of the length prefix or header).
                sent = _socket.send_fds(sock, [head], [fd])
                if sent < len(head):
                    sock.sendall(memoryview(head)[sent:])
            elif sum(p.nbytes for p in parts) <= _SMALL_SEND:
                sock.sendall(b"".join([head] + [bytes(p) for p in parts]))
                parts = ()
            else:
                sock.sendall(head)
            for p in parts:
                sock.sendall(p)
        except (BrokenPipeError, ConnectionResetError) as e:
            # The daemon refused the request from its header (too big, too
            # many clients) and closed without reading the rest: its error
            # reply is already waiting. Report that instead of the pipe.
            sock.settimeout(1.0)
            try:
                r, pb = self._recv_header()
            except Error:
                r = None
            if r is not None and r.get("ok") is False and pb == 0:
                err = self._reply_error(r)
                err.closed = True
                self._drop()
                raise err from None
            raise self._io_error(e, "sending to") from None
        except OSError as e:
            raise self._io_error(e, "sending to") from None

    def _take_id(self):
        i = self._next_id
        self._next_id += 1
        return i

    def _check_reply(self, h, pb, rid, op):
        if h.get("ok") is not True:
            if pb:
                raise self._broken("GS_ECORRUPT", "error reply declares a %d-byte payload" % pb)
            raise self._reply_error(h)
        if h.get("id") != rid:
            raise self._broken("GS_ECORRUPT", "reply to %s does not echo the request id" % op)

    def _simple(self, op):
        with self._lock:
            self._usable()
            rid = self._take_id()
            self._send({"v": PROTOCOL, "op": op, "id": rid})
            h, pb = self._recv_header()
            self._check_reply(h, pb, rid, op)
            if pb:
                raise self._broken("GS_ECORRUPT", "reply to %s declares a %d-byte payload"
                                   % (op, pb))
            self.last = h
            return h

    # -- the daemon --

    def ping(self):
        """Round trip of an empty request, in milliseconds."""
        t0 = time.perf_counter()
        self._simple("ping")
        return (time.perf_counter() - t0) * 1e3

    def info(self):
        """The daemon's info reply: version, devices, algorithms, limits."""
        return self._simple("info")

    def stats(self):
        """The daemon's stats reply: uptime, clients, requests, bytes, routes."""
        return self._simple("stats")

    # -- sorting --

    def _run(self, keys, values_kind, values, dst_keys, dst_vals, descending, stable,
             algorithm, params, device, split=None, rows=0, topk=None, unsorted=False,
             offsets=None, wire=None, bits=None):
        """One sort request. keys (and values, for "u32"/"u64") are 1-D
        arrays of any layout; the sorted keys land in dst_keys (None:
        dropped) and the values or indices in dst_vals (None: dropped).
        rows > 1: they are that many equal rows, each sorted on its own.
        topk: only the first topk of each row are asked for (unsorted: in
        any order); dst_keys and dst_vals then hold rows * topk, row after
        row. offsets (a C-contiguous uint64 array of S + 1, checked by the
        caller): S segments, each sorted on its own; they travel after the
        keys and values. wire: the keys' protocol name when not their
        dtype's (bfloat16 words in a uint16 array: "bf16"). bits: (begin,
        end), a bit range checked by _bit_range, sent as begin_bit and
        end_bit."""
        if wire is None:
            wire = _wire_dtype(keys.dtype)
        if wire == "bf16" and keys.dtype != np.uint16:
            # bfloat16 (ml_dtypes') travels as its words: numpy's buffer
            # protocol cannot export every extension dtype
            keys, dst_keys = keys.view(np.uint16), _bits16(dst_keys, True)
        kdt = keys.dtype
        n = keys.shape[0]
        ks = kdt.itemsize
        vs = {"none": 0, "u32": 4, "u64": 8, "idx32": 4, "idx64": 8}[values_kind]
        wire_vdt = {4: np.uint32, 8: np.uint64}.get(vs)
        if n > _TWO_53:
            raise Error("GS_ETOOBIG", "sort: n = %d exceeds the protocol's 2^53" % n)
        header = {"v": PROTOCOL, "op": "sort", "dtype": wire, "n": n}
        if values_kind != "none":
            header["values"] = values_kind
        if descending:
            header["order"] = "desc"
        if stable:
            header["stable"] = True
        if rows > 1:
            header["rows"] = int(rows)
        if offsets is not None:
            header["segments"] = int(offsets.shape[0]) - 1
        if topk is not None:
            header["topk"] = int(topk)
            if unsorted:
                header["sorted"] = False
        if bits is not None:
            header["begin_bit"], header["end_bit"] = int(bits[0]), int(bits[1])
        _route_fields(header, algorithm, params, device, split)

        t0 = time.perf_counter()
        with self._lock:
            self._usable()
            rid = self._take_id()
            header["id"] = rid
            shared = (self.use_memfd and n > 0 and not isinstance(keys, _Concat) and
                      topk is None and offsets is None and
                      _in_place(keys, dst_keys, values, dst_vals, values_kind))
            use_memfd = self.use_memfd and n > 0 and not shared
            stage = self._stage
            if use_memfd:
                kb = n * ks
                voff = _round_up(kb, vs) if vs else kb
                need = voff + n * vs
                if offsets is not None:     # the segment offsets after, 8-aligned
                    need = _round_up(need, 8) + offsets.nbytes
                use_memfd = self._stage_fits(need)
            try:
                if shared:
                    return self._run_shared(header, rid, shared, t0)
                if use_memfd:
                    return self._run_memfd(header, rid, keys, values_kind, values, dst_keys,
                                           dst_vals, kb, voff, wire_vdt, t0, rows, topk,
                                           offsets)
                return self._run_inline(header, rid, keys, values_kind, values, dst_keys,
                                        dst_vals, wire_vdt, t0, rows, topk, offsets)
            finally:
                if stage.size > self.keep_stage_bytes:
                    stage.close()

    @contextlib.contextmanager
    def _reading_reply(self):
        """A sort reply's payload being read: a peer that hangs up or a
        failing socket become the client's errors (the connection is then
        broken: its framing is lost)."""
        try:
            yield
        except ConnectionError:
            raise self._broken("GS_EIO", "gsortd at %s closed the connection in the "
                               "middle of a reply" % self.path) from None
        except OSError as e:
            raise self._io_error(e, "reading a sort reply from") from None

    def _stage_fits(self, need):
        """Grow the staging memfd to need bytes: True, or False (and inline
        from now on) where there is no shared memory (a sandbox, an old
        kernel)."""
        try:
            self._stage.ensure(need)
            return True
        except OSError as e:
            self._stage.close()
            self.use_memfd = False
            self.memfd_error = "memfd: %s" % (e.strerror or e)
            return False

    def _finish(self, h, zero_copy, t0):
        h["zero_copy"] = zero_copy
        h["client_ms"] = (time.perf_counter() - t0) * 1e3
        self.last = h

    def _run_shared(self, header, rid, shared, t0):
        """Arrays of empty() sorted where they lie: only the header and the
        block's descriptor go out."""
        fd, koff, voff = shared
        header["memfd"] = True
        if koff:
            header["keys_offset"] = koff
        if voff is not None:
            header["values_offset"] = voff
        self._send(header, fd=fd)
        h, pb = self._recv_header()
        self._check_reply(h, pb, rid, "sort")
        if pb:
            raise self._broken("GS_ECORRUPT", "memfd sort reply declares a %d-byte "
                               "payload" % pb)
        self._finish(h, True, t0)
        return h

    def _run_memfd(self, header, rid, keys, values_kind, values, dst_keys, dst_vals, kb,
                   voff, wire_vdt, t0, rows=0, topk=None, offsets=None):
        n = keys.shape[0]
        m = self._stage.map
        kview = np.frombuffer(m, dtype=keys.dtype, count=n, offset=0)
        vview = oview = None
        try:
            t1 = _perf_counter()
            _copy(kview, keys)
            if wire_vdt is not None:
                vview = np.frombuffer(m, dtype=wire_vdt, count=n, offset=voff)
                if values is not None:
                    _copy(vview, values.view(wire_vdt))
                if voff != kb:
                    header["values_offset"] = voff
            if offsets is not None:
                ooff = _round_up(voff + (n * vview.dtype.itemsize if vview is not None
                                         else 0), 8)
                oview = np.frombuffer(m, dtype=np.uint64, count=offsets.shape[0],
                                      offset=ooff)
                oview[...] = offsets
                header["offsets_offset"] = ooff
            header["memfd"] = True
            t2 = _perf_counter()
            self._send(header, fd=self._stage.fd)
            h, pb = self._recv_header()
            t3 = _perf_counter()
            self._check_reply(h, pb, rid, "sort")
            if pb:
                raise self._broken("GS_ECORRUPT", "memfd sort reply declares a %d-byte "
                                   "payload" % pb)
            if topk is not None:
                # each row's k answers are that row's first k places
                r = max(rows, 1)
                if dst_keys is not None:
                    dst_keys.reshape(r, topk)[...] = kview.reshape(r, -1)[:, :topk]
                if dst_vals is not None:
                    dv = (dst_vals.view(wire_vdt) if dst_vals.dtype.itemsize ==
                          vview.dtype.itemsize else dst_vals)
                    dv.reshape(r, topk)[...] = vview.reshape(r, -1)[:, :topk]
            else:
                if dst_keys is not None:
                    _copy(dst_keys, kview)
                if dst_vals is not None:
                    if dst_vals.dtype.itemsize == vview.dtype.itemsize:
                        _copy(dst_vals.view(wire_vdt), vview)
                    else:
                        _copy(dst_vals, vview)      # 4-byte indices widened
            # the client's own steps: the copy in, the request's round trip
            # (send to reply header), the copy out
            h["client_times_ms"] = {"copy_in": (t2 - t1) * 1e3, "round_trip": (t3 - t2) * 1e3,
                                    "copy_out": (_perf_counter() - t3) * 1e3}
            self._finish(h, True, t0)
            return h
        finally:
            # No view may outlive the call: the mapping is resized later.
            del kview, vview, oview

    def _run_inline(self, header, rid, keys, values_kind, values, dst_keys, dst_vals,
                    wire_vdt, t0, rows=0, topk=None, offsets=None):
        n = keys.shape[0]
        parts = keys.parts if isinstance(keys, _Concat) else [np.ascontiguousarray(keys)]
        if values_kind in ("u32", "u64"):
            values = values.view(wire_vdt)
            parts = parts + (values.parts if isinstance(values, _Concat) else
                             [np.ascontiguousarray(values)])
        if offsets is not None:
            parts = parts + [offsets]       # the segment offsets last
        parts = [memoryview(p).cast("B") for p in parts if p.shape[0]]
        header["payload_bytes"] = sum(p.nbytes for p in parts)
        self._send(header, parts)
        h, pb = self._recv_header()
        self._check_reply(h, pb, rid, "sort")
        # the keys (and values) the reply carries: all, or k of each row
        m = n if topk is None else max(rows, 1) * topk
        vs = np.dtype(wire_vdt).itemsize if wire_vdt is not None else 0
        kb = m * keys.dtype.itemsize
        vb = m * vs
        if pb != kb + vb:
            raise self._broken("GS_EWRONG", "sort reply declares %d payload bytes, the "
                               "request expects %d" % (pb, kb + vb))
        with self._reading_reply():
            if dst_keys is not None:
                self._recv_into(dst_keys)
            else:
                self._drain(kb)
            if vb:
                if dst_vals is None:
                    self._drain(vb)
                elif dst_vals.dtype.itemsize == vs:
                    self._recv_into(dst_vals)
                else:
                    tmp = np.empty(m, dtype=wire_vdt)
                    self._recv_into(tmp)
                    dst_vals[...] = tmp
        self._finish(h, False, t0)
        return h

    # -- sorting here or there --

    def _local_run(self, shape, n, here, native):
        """One local sort: numpy's (here) or libgsort's (native, None
        where it does not apply), as local_sort and the measured Pick say;
        returns its name for c.last and, once measured, n keys' time by the
        faster of the two (None: take the call's own)."""
        how = self.local_sort
        # up to LOCAL_ALWAYS_UPTO keys numpy's sort is the faster (and
        # ctypes' call a good part of libgsort's), so Pick's bookkeeping is
        # skipped too
        if native is None or how == "numpy" or (
                how is None and (n <= _LOCAL_UPTO or not _native.available())):
            here()
            return "numpy", None
        if how == "host":
            native()
            return "host", None
        return self._pick.run(shape, n, here, native)

    def _routed(self, shape, n, local, forced, here, there, native=None):
        """One sort, here() in this process or there() through the daemon,
        as the Router picks for a call free to go either way (see the
        class's doc); the route's time is recorded only for such a call, as
        libgsort's twin does, and c.last says where it ran. native: the
        same sort by libgsort's host sort, where it applies (_local_run)."""
        free = (self.local if local is None else bool(local)) and not forced
        if free and self.router.choose(shape, n):
            # the whole call costs numpy's sort and about a microsecond: a
            # small array's sort takes a few (issue 36)
            t0 = _perf_counter()
            algo, best = self._local_run(shape, n, here, native)
            ms = (_perf_counter() - t0) * 1e3
            if n > _LOCAL_UPTO:
                # the local route at the pace of its faster sort (Pick's)
                self.router.record(shape, n, True, ms if best is None or ms < best else best)
            self.last = {"where": "local", "algorithm": algo, "n": n, "client_ms": ms}
            return
        there()
        self.last["where"] = "daemon"
        if free:
            self.router.record(shape, n, False, self.last["client_ms"])

    def sort(self, a, descending=False, stable=False, inplace=False, algorithm=None,
             params=None, device=None, split=None, local=None, axis=-1, key_type=None,
             begin_bit=None, end_bit=None):
        """Return a sorted copy of the array a (inplace=True: sort a
        itself, which must be a writable C-contiguous numpy array, and
        return it). An array of two or more dimensions is sorted along its
        last axis, each row on its own in one request, as np.sort(a,
        axis=-1) does; other axes are refused (np.moveaxis puts one last).

        descending: largest first (NaNs first, see the module's doc);
        stable: only stable algorithms (the sorted values are the same);
        algorithm: force one of info()["algorithms"] ("radix",
        "mergepath", "shellsort", "bitonic" (rows of up to 4096 keys on
        a GPU, all rows in one launch), "host", "vqsort" where the daemon
        was built with Highway), params: its tuning parameters as
        {name: int}, a name left out taking its default; device: force a device index, an integer (see
        info(); a bool or a float is a TypeError); split: True asks the
        daemon to weigh splitting the request over several devices at any
        size (self.last then lists the parts, or says in
        "split_declined" why not), False forbids a split, None (the
        default) leaves it to the daemon from 2^20 keys on.
        key_type: None (the keys are what their dtype says) or "bf16": a
        uint16 or int16 array's words are bfloat16 values, sorted as those
        (the result keeps a's dtype); an array of ml_dtypes.bfloat16 needs
        no key_type.
        begin_bit, end_bit: sort by bits [begin_bit, end_bit) of each key's
        order code alone (see the module's doc; either may be left out: 0
        and the key's width), stably; uint32, int32, uint64 and int64 keys
        of a 1-D array only, as gsortd takes them (TypeError, ValueError
        before anything is sent). Sorted here or by the daemon as any sort
        (the Router times a range apart from the plain sort of its shape).
        """
        settle = None
        if (type(a) is _ndarray and a.ndim == 1 and not inplace and algorithm is None and
                params is None and device is None and not split and key_type is None and
                begin_bit is None and end_bit is None and
                (self.local if local is None else local) and self.local_sort != "host" and
                a.dtype in _WIRE_NAMES):
            # A plain call of one flat array: up to LOCAL_ALWAYS_UPTO keys,
            # and at a size whose routing settled on numpy's sort here,
            # numpy's sort at once, before the checks and bookkeeping below,
            # which cost as much as numpy's sort of 1024 keys (issue 36: a
            # call is never slower than the local sort). A settled size
            # takes the whole routing again every SETTLED_CALLS + 1 calls,
            # where the Router and Pick time and retry as before.
            n = a.shape[0]
            quick = n <= _LOCAL_UPTO
            if not quick:
                settle = (a.dtype, bool(descending), bool(stable), (n - 1).bit_length())
                left = self._settled.get(settle)
                if left:
                    self._settled[settle] = left - 1
                    quick = True
            if quick:
                t0 = _perf_counter()
                out = _local.sort_keys(a, descending, a.copy(), False, True)
                self._last_small = (a.shape[0], t0, _perf_counter())
                return out
        if inplace:
            _writable_contiguous(a, "the array")
        given = a
        a, rows, shape = _rows_of(a, axis, "the array")
        wire, bf16 = _key_wire(a.dtype, key_type)
        bits = _bit_range(a.dtype, wire, begin_bit, end_bit, shape)
        out = a if inplace else np.empty(a.shape[0], dtype=a.dtype)
        a16, out16 = _bits16(a, bf16), _bits16(out, bf16)
        if bits is not None:
            def here_bits():
                out[...] = a[_local.bits_order(a, descending, *bits)]   # a copy first
            self._routed((wire, "none", bool(descending), True, False, "bits"), a.shape[0],
                         local, _forced(algorithm, params, device, split), here_bits,
                         lambda: self._run(a, "none", None, out, None, descending, stable,
                                           algorithm, params, device, split, bits=bits))
            return given if inplace else out
        if rows:
            def here():
                _local.sort_rows(a16.reshape(shape), descending, out16.reshape(shape), bf16)
        else:
            def here():
                _local.sort_keys(a16, descending, out16, bf16)

        def native():
            if out16 is not a16:
                out16[...] = a16
            _native.run(wire, out16, descending=descending, stable=stable, rows=rows)
        self._routed((wire, "none", bool(descending), bool(stable), rows > 0), a.shape[0],
                     local, _forced(algorithm, params, device, split), here,
                     lambda: self._run(a16, "none", None, out16, None, descending, stable,
                                       algorithm, params, device, split, rows, wire=wire),
                     native)
        if settle is not None:
            # numpy's sort won here, as the Router and Pick see it: settled
            if self.last.get("where") == "local" and self.last.get("algorithm") == "numpy":
                self._settled[settle] = SETTLED_CALLS
            else:
                self._settled.pop(settle, None)
        if inplace:
            return given
        return out.reshape(shape) if len(shape) > 1 else out

    def argsort(self, a, descending=False, stable=False, index_dtype=np.int64,
                algorithm=None, params=None, device=None, split=None, local=None, axis=-1,
                key_type=None, begin_bit=None, end_bit=None):
        """Return the indices that sort the array a, like np.argsort
        (a is left as it is; of two or more dimensions, along the last axis,
        the indices counting from 0 within each row). index_dtype: int64
        (default), uint64, int32 or uint32. With stable=True equal keys are
        listed in input order. Other arguments as for sort() (begin_bit,
        end_bit: the order of a bit range, keys equal there in input
        order).
        """
        a, rows, shape = _rows_of(a, axis, "the array")
        wire, bf16 = _key_wire(a.dtype, key_type)
        bits = _bit_range(a.dtype, wire, begin_bit, end_bit, shape)
        a = _bits16(a, bf16)
        n = a.shape[0]
        idt = _index_dtype(index_dtype, n)
        out = np.empty(n, dtype=idt)
        if bits is not None:
            def here_bits():
                out[...] = _local.bits_order(a, descending, *bits)
            self._routed((wire, "idx", bool(descending), True, False, "bits"), n, local,
                         _forced(algorithm, params, device, split), here_bits,
                         lambda: self._argsort_into(a, None, out, descending, stable, algorithm,
                                                    params, device, split, wire=wire,
                                                    bits=bits))
            return out

        def here():
            out.reshape(shape)[...] = _local.order(a.reshape(shape), descending, bf16)

        def native():
            # the keys' copy is sorted with the indices and dropped
            _native.run(wire, a.copy(), _native.index_kind_of(out.dtype), out, descending,
                        stable, rows=rows)
        self._routed((wire, "idx", bool(descending), bool(stable), rows > 0), n, local,
                     _forced(algorithm, params, device, split), here,
                     lambda: self._argsort_into(a, None, out, descending, stable, algorithm,
                                                params, device, split, rows, wire),
                     native)
        return out.reshape(shape) if len(shape) > 1 else out

    def lexsort(self, keys, descending=False, index_dtype=np.int64, algorithm=None,
                params=None, device=None, local=None):
        """The indices that sort by several keys, like np.lexsort: keys is
        a sequence of 1-D arrays of one length, the last the primary key,
        the first the least significant; ties on every key keep input
        order (stable). descending: one bool for every key, or a sequence
        with one for each key in keys' order (pandas' ascending=[...],
        inverted). Keys of bool, signed or unsigned integers of up to 64
        bits, float16, float32 or float64, mixed freely; floats as
        np.lexsort orders them (-0.0 and +0.0 equal; NaNs equal, after
        +inf; descending: first). Up to 8 keys go to the daemon in one
        request ("lexsort" in gsort-protocol(7)): it packs them into
        order-keeping words, primary key in the highest bits, as few
        64-bit words as their widths allow (two u32 keys: one), on its host
        cores, and sorts each word array by a stable argsort where its plan
        says, the words chained from the least significant. Where the
        router would keep an argsort of that many words in this process
        (small arrays, see argsort), and for more than 8 keys, the same
        packing and chained argsorts run here, in numpy. Returns an array
        of index_dtype (int64, uint64, int32 or uint32). algorithm, params
        and device apply to the daemon's sorts of the words.
        """
        if isinstance(keys, np.ndarray) and keys.ndim == 2:
            keys = list(keys)
        if not isinstance(keys, (list, tuple)) or not keys:
            raise TypeError("gsort: lexsort needs a sequence of one or more key arrays")
        ks = [_as_1d(np.asarray(k), "a lexsort key") for k in keys]
        n = ks[0].shape[0]
        if any(k.shape[0] != n for k in ks):
            raise ValueError("gsort: lexsort keys differ in length (%s)" %
                             ", ".join(str(k.shape[0]) for k in ks))
        if isinstance(descending, (list, tuple, np.ndarray)):
            desc = [bool(d) for d in descending]
            if len(desc) != len(ks):
                raise ValueError("gsort: %d descending flags for %d keys" %
                                 (len(desc), len(ks)))
        else:
            desc = [bool(descending)] * len(ks)
        idt = _index_dtype(index_dtype, n)
        for k in ks:
            _lex_wire(k.dtype)
        ks = [k if k.dtype.isnative else k.astype(k.dtype.newbyteorder("=")) for k in ks]
        forced = _forced(algorithm, params, device, None)
        free = (self.local if local is None else bool(local)) and not forced
        if n and len(ks) <= _LEX_MAX_KEYS and not (
                free and self.router.choose((np.dtype(np.uint64), "idx", False, True), n)):
            # one request: the daemon packs the keys and sorts the words
            kind = "idx32" if n <= 0xFFFFFFFF else "idx64"
            out = self._lex_run(ks[::-1], desc[::-1], kind, algorithm, params, device, idt)
            self.last["where"] = "daemon"
            return out
        enc = [_lex_encoded(k, d) for k, d in zip(ks, desc)]
        # groups of at most 64 bits, from the primary (the last key) down
        groups, cur, used = [], [], 0
        for bits, w in reversed(enc):
            if cur and used + bits > 64:
                groups.append(cur)
                cur, used = [], 0
            cur.append((bits, w))
            used += bits
        groups.append(cur)
        words = []
        for g in groups:
            total = sum(b for b, _ in g)
            wt = np.uint32 if total <= 32 else np.uint64
            if len(g) == 2 and g[0][0] == g[1][0] == 32 and sys.byteorder == "little":
                # two 32-bit keys (the common case): the halves written
                # straight into the composite, no shifts
                c = np.empty(n, dtype=np.uint64)
                halves = c.view(np.uint32).reshape(n, 2)
                halves[:, 1] = g[0][1]
                halves[:, 0] = g[1][1]
                words.append(c)
                continue
            c = np.zeros(n, dtype=wt)
            at = total
            for bits, w in g:
                at -= bits
                w = w.astype(wt, copy=False)
                if at:      # shifted by an array (numpy's fast path)
                    w = np.left_shift(w, np.full(1, at, dtype=wt))
                np.bitwise_or(c, w, out=c)
            words.append(c)
        kw = dict(stable=True, algorithm=algorithm, params=params, device=device, local=local)
        perm = None
        for c in reversed(words):       # the least significant group first
            if perm is None:
                perm = self.argsort(c, index_dtype=np.int64, **kw)
            else:
                perm = perm[self.argsort(c[perm], index_dtype=np.int64, **kw)]
        if perm is None:
            perm = np.arange(n, dtype=np.int64)
        return perm.astype(idt, copy=False)

    def _lex_run(self, keys, desc, kind, algorithm, params, device, idt):
        """One lexsort request: keys (1-D arrays, the primary first) with
        their descending flags; returns the indices as an array of idt (on
        the wire uint32 or uint64 as kind says; from the memfd they are
        widened in the one threaded copy out). The key arrays follow one
        another in the staging memfd (or inline), each from a multiple of
        8 bytes, the indices after."""
        n = keys[0].shape[0]
        vdt = np.uint32 if kind == "idx32" else np.uint64
        header = {"v": PROTOCOL, "op": "sort", "n": n, "values": kind,
                  "lexsort": [dict({"dtype": k.dtype.name}, **({"order": "desc"} if d else {}))
                              for k, d in zip(keys, desc)]}
        _route_fields(header, algorithm, params, device, None)
        offs, at = [], 0
        for k in keys:
            offs.append(at)
            at = _round_up(at + k.nbytes, 8)
        out = np.empty(n, dtype=vdt)
        t0 = time.perf_counter()
        with self._lock:
            self._usable()
            rid = self._take_id()
            header["id"] = rid
            stage = self._stage
            use_memfd = self.use_memfd and self._stage_fits(at + out.nbytes)
            try:
                if use_memfd:
                    m = stage.map
                    views = [np.frombuffer(m, dtype=k.dtype, count=n, offset=o)
                             for k, o in zip(keys, offs)]
                    iview = np.frombuffer(m, dtype=vdt, count=n, offset=at)
                    try:
                        for v, k in zip(views, keys):
                            _copy(v, k)
                        header["memfd"] = True
                        self._send(header, fd=stage.fd)
                        h, pb = self._recv_header()
                        self._check_reply(h, pb, rid, "sort")
                        if pb:
                            raise self._broken("GS_ECORRUPT", "memfd sort reply declares a "
                                               "%d-byte payload" % pb)
                        res = np.empty(n, dtype=idt)
                        _copy(res, iview)
                    finally:
                        del views, iview
                    self._finish(h, True, t0)
                    return res
                parts = []
                for k, o in zip(keys, offs):
                    b = memoryview(np.ascontiguousarray(k)).cast("B")
                    parts.append(b)
                    pad = _round_up(k.nbytes, 8) - k.nbytes
                    if pad:
                        parts.append(memoryview(bytes(pad)))
                parts = [p for p in parts if p.nbytes]
                header["payload_bytes"] = sum(p.nbytes for p in parts)
                self._send(header, parts)
                h, pb = self._recv_header()
                self._check_reply(h, pb, rid, "sort")
                if pb != out.nbytes:
                    raise self._broken("GS_EWRONG", "lexsort reply declares %d payload "
                                       "bytes, the request expects %d" % (pb, out.nbytes))
                with self._reading_reply():
                    self._recv_into(out)
                self._finish(h, False, t0)
                return out.astype(idt, copy=False)
            finally:
                if stage.size > self.keep_stage_bytes:
                    stage.close()

    def topk(self, a, k, largest=True, sorted=True, axis=-1, index_dtype=np.int64,
             algorithm=None, params=None, device=None, local=None, key_type=None):
        """(values, indices): the k largest keys of the array a (largest=
        False: the k smallest) and their indices, like torch.topk. Of two
        or more dimensions, along the last axis, each row on its own in one
        request (other axes are refused, as by sort()); the results have
        shape a.shape[:-1] + (k,), values of a's dtype, indices of
        index_dtype (int64, uint64, int32 or uint32) counting from 0 within
        the row. a is left as it is.

        The k are the first k of the row in gsortd's order, exactly as a
        stable sort lists them: descending for largest (NaNs first, all
        equal; +inf; ...; +0.0 before -0.0), ascending otherwise (-inf
        first, -0.0 before +0.0, NaNs last); of keys tied with the k-th,
        the earliest in the row are taken. sorted=True lists them in that
        order; sorted=False in any order (the daemon's select skips
        ordering them). Values keep their bits (NaN payloads).

        k must be an integer from 0 to the length of a row (TypeError,
        ValueError otherwise; nothing is sent). The daemon selects on the
        host (a multi-threaded radix select) unless algorithm, params or
        device name a route: a device alone gets that device's radix select
        ("select", for k up to 2048; above, the device's own choice); an
        algorithm sorts the rows whole, stably (one that cannot, such as
        shellsort, is a gsort.Error GS_EUNSUPPORTED), and takes the first k
        (algorithm="select" with a device: its select). local: as for
        sort(); the local path (numpy, a sampled bound and a partition of
        the few keys within it) gives the same answer. An array of no keys is answered
        here, with no request. 8- and 16-bit keys (key_type as for sort())
        too: the daemon selects their order-keeping 32-bit words.
        """
        a, rows, shape = _rows_of(a, axis, "the array")
        wire, bf16 = _key_wire(a.dtype, key_type)
        n = a.shape[0]
        length = shape[-1]
        k = _topk_k(k, length)
        idt = _index_dtype(index_dtype, length)
        r = int(np.prod(shape[:-1], dtype=np.int64))     # rows (1-D: one)
        out_shape = tuple(shape[:-1]) + (k,)
        vals = np.empty(r * k, dtype=a.dtype)
        idx = np.empty(r * k, dtype=idt)

        def here():
            v, i = _local.topk(_bits16(a, bf16).reshape(shape), k, bool(largest), bool(sorted),
                               bf16)
            _bits16(vals, bf16)[...] = v.reshape(-1)
            idx[...] = i.reshape(-1)
        if n == 0:
            # nothing to select (and rows the protocol cannot say: (0, L))
            self.last = {"where": "local", "algorithm": "none", "n": 0, "client_ms": 0.0}
        else:
            kind = "idx32" if n <= 0xFFFFFFFF else "idx64"
            # A named route sorts the rows whole and takes their first k:
            # stable, so that ties at the k-th key are the earliest (an
            # unstable algorithm is refused rather than answering others).
            # The daemon's own route, the host select, is stable as it is.
            forced = _forced(algorithm, params, device, None)
            self._routed((wire, "topk", bool(largest), bool(sorted), rows > 0,
                          _local._bucket(k)), n, local, forced, here,
                         lambda: self._run(_bits16(a, bf16), kind, None, _bits16(vals, bf16),
                                           idx, bool(largest), forced, algorithm, params,
                                           device, None, rows, k, not sorted, wire=wire))
        return vals.reshape(out_shape), idx.reshape(out_shape)

    def _segmented(self, a, off, payload, descending, stable, local, forced, here, there,
                   wire):
        """A segments call, here() in this process or there() through the
        daemon, as the Router picks (_routed); its shape counts the
        segments too (by log2): numpy sorts them one by one here, the
        daemon side by side on its cores."""
        S = off.shape[0] - 1
        self._routed((wire, payload, bool(descending), bool(stable), "segments",
                      S.bit_length()), a.shape[0], local, forced, here, there)

    def sort_segments(self, a, offsets, descending=False, stable=False, algorithm=None,
                      params=None, device=None, local=None, key_type=None):
        """Return a copy of the 1-D array a with each segment sorted on its
        own (a segmented sort, as CUB's): offsets is a 1-D sequence of S + 1
        integers, 0 first, never decreasing, len(a) last, and segment s is
        a[offsets[s]:offsets[s + 1]] (it may be empty). Order, stability
        and NaN rules are sort()'s, segment by segment. Offsets that break
        a rule are a ValueError (nothing is sent). The daemon sorts
        segments on its host cores, side by side; a call free to sort here
        (local, as for sort()) goes where the Client measured it faster for
        the array's size and number of segments (numpy here sorts them one
        by one); algorithm, params or device name a route (a device named
        alone: its bitonic sort, every segment in one launch, where the
        longest fits a work-group; else one segment after another). 8- and
        16-bit keys (key_type as for
        sort()) too, as their order-keeping 32-bit words in the daemon.
        """
        a = _as_1d(a, "the array")
        wire, bf16 = _key_wire(a.dtype, key_type)
        off = _segment_offsets(offsets, a.shape[0])
        out = np.empty(a.shape[0], dtype=a.dtype)
        a16, out16 = _bits16(a, bf16), _bits16(out, bf16)

        def here():
            _local.sort_segments(a16, off, descending, out16, bf16)
        self._segmented(a16, off, "none", descending, stable, local,
                        _forced(algorithm, params, device, None), here,
                        lambda: self._run(a16, "none", None, out16, None, descending, stable,
                                          algorithm, params, device, offsets=off, wire=wire),
                        wire)
        return out

    def argsort_segments(self, a, offsets, descending=False, stable=False,
                         index_dtype=np.int64, algorithm=None, params=None, device=None,
                         local=None, key_type=None):
        """The indices that sort each segment of the 1-D array a (offsets
        as for sort_segments), counting from 0 within the segment, in a new
        array of index_dtype (int64, uint64, int32 or uint32). With
        stable=True equal keys keep their input order. a is left as it
        is. Other arguments as for sort_segments().
        """
        a = _as_1d(a, "the array")
        wire, bf16 = _key_wire(a.dtype, key_type)
        a = _bits16(a, bf16)
        n = a.shape[0]
        off = _segment_offsets(offsets, n)
        longest = int(np.max(np.diff(off))) if off.shape[0] > 1 else 0
        idt = _index_dtype(index_dtype, longest)
        out = np.empty(n, dtype=idt)

        def here():
            _local.order_segments(a, off, descending, out, bf16)
        kind = "idx32" if n <= 0xFFFFFFFF else "idx64"
        self._segmented(a, off, "idx", descending, stable, local,
                        _forced(algorithm, params, device, None), here,
                        lambda: self._run(a, kind, None, None, out, descending, stable,
                                          algorithm, params, device, offsets=off, wire=wire),
                        wire)
        return out

    def _argsort_into(self, a, dst_keys, dst_index, descending, stable, algorithm=None,
                      params=None, device=None, split=None, rows=0, wire=None, bits=None):
        """The indices that sort a into dst_index (and, unless dst_keys is
        None, the sorted keys into dst_keys): argsort's request, which
        gsort.dask also makes for both at once."""
        # 4-byte indices halve the index traffic whenever n allows them.
        kind = "idx32" if a.shape[0] <= 0xFFFFFFFF else "idx64"
        self._run(a, kind, None, dst_keys, dst_index, descending, stable, algorithm, params,
                  device, split, rows, wire=wire, bits=bits)

    def sort_by_key(self, keys, values, descending=False, stable=False, inplace=False,
                    algorithm=None, params=None, device=None, split=None, local=None,
                    key_type=None, begin_bit=None, end_bit=None):
        """Sort keys and permute values (a 1-D array of the same length
        whose items are 4 or 8 bytes: any dtype, moved as raw bytes) with
        them. Returns (sorted keys, permuted values): copies, or with
        inplace=True the two arrays themselves, sorted where they are.
        Other arguments as for sort() (key_type="bf16": keys' uint16 or
        int16 words are bfloat16 values; begin_bit, end_bit: keys and
        values in the stable order of that bit range).
        """
        if inplace:
            _writable_contiguous(keys, "keys")
            _writable_contiguous(values, "values")
            # Sorted where they lie, two views of one buffer would scramble
            # each other; both are contiguous, so overlapping bounds are
            # shared bytes (libgsort refuses the same).
            if np.may_share_memory(keys, values):
                raise ValueError("gsort: the keys and values arrays overlap; with "
                                 "inplace=True they must be separate memory")
        keys = _as_1d(keys, "keys")
        values = _as_1d(values, "values")
        wire, bf16 = _key_wire(keys.dtype, key_type)
        bits = _bit_range(keys.dtype, wire, begin_bit, end_bit, keys.shape)
        vdt = values.dtype
        if vdt.hasobject or vdt.itemsize not in (4, 8):
            raise TypeError("gsort: values must have 4- or 8-byte items without Python "
                            "objects, not %s" % vdt)
        if values.shape[0] != keys.shape[0]:
            raise ValueError("gsort: %d keys but %d values" % (keys.shape[0], values.shape[0]))
        if not values.flags.c_contiguous:
            values = np.ascontiguousarray(values)  # for the raw-bytes view
        kind = "u32" if vdt.itemsize == 4 else "u64"
        ko = keys if inplace else np.empty(keys.shape[0], dtype=keys.dtype)
        vo = values if inplace else np.empty(values.shape[0], dtype=vdt)
        # The daemon moves values as raw bytes, so the transfer works on
        # unsigned views of the same width (sharing memory with values and
        # vo): dtypes the buffer protocol cannot export (datetime64,
        # timedelta64) then travel like any other on every path, memfd and
        # inline, out and back.
        raw = np.uint32 if vdt.itemsize == 4 else np.uint64

        k16, ko16 = _bits16(keys, bf16), _bits16(ko, bf16)

        def here():
            i = (_local.order(k16, descending, bf16) if bits is None else
                 _local.bits_order(k16, descending, *bits))
            ko16[...] = k16[i]      # fancy indexing copies first: safe in place
            vo[...] = values[i]

        def native():
            if ko16 is not k16:
                ko16[...] = k16
                vo[...] = values
            _native.run(wire, ko16, _native.values_kind_of(vo), vo, descending, stable)
        # a range is timed apart from the plain sort of its shape (always stable)
        self._routed((wire, kind, bool(descending), bool(stable)) if bits is None else
                     (wire, kind, bool(descending), True, "bits"), keys.shape[0],
                     local, _forced(algorithm, params, device, split), here,
                     lambda: self._run(k16, kind, values.view(raw), ko16, vo.view(raw),
                                       descending, stable, algorithm, params, device, split,
                                       wire=wire, bits=bits),
                     native if bits is None else None)
        return ko, vo

    def _sort_parts(self, keys, values=None, keys_out=True, stable=False):
        """Sort the concatenation of the 1-D arrays in the list keys (one
        key dtype) and, when values is a list of arrays of 8-byte items
        with the same lengths, permute their concatenation alike, without
        making either concatenation (see _Concat). Returns (sorted keys,
        or None with keys_out False; permuted values as values[0]'s dtype,
        or None). For gsort.dask's merges."""
        if not keys:
            raise ValueError("gsort: no parts to sort")
        kdt = np.asarray(keys[0]).dtype
        wire = _wire_dtype(kdt)
        if wire == "bf16":          # ml_dtypes' bfloat16: as its uint16 words
            keys = [np.asarray(k).view(np.uint16) for k in keys]
        kc = _Concat(keys, kdt if wire != "bf16" else np.uint16)
        n = kc.shape[0]
        ko = np.empty(n, dtype=kdt) if keys_out else None
        if values is None:
            self._run(kc, "none", None, _bits16(ko, wire == "bf16"), None, False, stable,
                      None, None, None, wire=wire)
            return ko, None
        vdt = np.asarray(values[0]).dtype
        if vdt.hasobject or vdt.itemsize != 8:
            raise TypeError("gsort: values must have 8-byte items, not %s" % vdt)
        vc = _Concat(values, vdt)
        if vc.shape[0] != n:
            raise ValueError("gsort: %d keys but %d values" % (n, vc.shape[0]))
        vo = np.empty(n, dtype=vdt)
        self._run(kc, "u64", vc.view(np.uint64), _bits16(ko, wire == "bf16"),
                  vo.view(np.uint64), False, stable, None, None, None, wire=wire)
        return ko, vo


# ---- module-level convenience: one default client per thread ----

_per_thread = threading.local()


def default_client():
    """This thread's default Client (created on first use, at
    default_socket(); again in a forked child)."""
    c = getattr(_per_thread, "client", None)
    if c is None or c._closed or getattr(_per_thread, "pid", None) != os.getpid():
        c = Client()
        _per_thread.client = c
        _per_thread.pid = os.getpid()
    return c


def sort(a, **kw):
    """default_client().sort(a, ...): a sorted copy of a."""
    return default_client().sort(a, **kw)


def argsort(a, **kw):
    """default_client().argsort(a, ...): the indices that sort a."""
    return default_client().argsort(a, **kw)


def lexsort(keys, **kw):
    """default_client().lexsort(keys, ...): the indices that sort by
    several keys, the last the primary, like np.lexsort."""
    return default_client().lexsort(keys, **kw)


def topk(a, k, **kw):
    """default_client().topk(a, k, ...): (values, indices) of the k
    largest (largest=False: smallest) keys of a."""
    return default_client().topk(a, k, **kw)


def sort_by_key(keys, values, **kw):
    """default_client().sort_by_key(keys, values, ...)."""
    return default_client().sort_by_key(keys, values, **kw)


def sort_segments(a, offsets, **kw):
    """default_client().sort_segments(a, offsets, ...)."""
    return default_client().sort_segments(a, offsets, **kw)


def argsort_segments(a, offsets, **kw):
    """default_client().argsort_segments(a, offsets, ...)."""
    return default_client().argsort_segments(a, offsets, **kw)


def info():
    return default_client().info()


def stats():
    return default_client().stats()


def ping():
    return default_client().ping()
