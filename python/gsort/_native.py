"""libgsort's host sort in this process, through ctypes (issue 36): the
second local sort a Client can take besides numpy's, the daemon's own host
sort linked into libgsort (gsort_local_run), which gives the daemon's
answer bit for bit. Where numpy's sort is a scalar introsort (no AVX-512:
np.sort of 2^16 uint32 keys 3.5 ms on the 2-core test machine) it is 3-10x
faster; from two chunks of 2^18 keys it takes the machine's cores. Where
numpy has AVX-512 sorts, numpy is the faster below some size, so Pick
times the two per request shape and size and keeps the faster.

The library: $GSORT_LIBRARY when set (a path; "none" turns this off), else
libgsort.so.0 where the dynamic loader finds it (installed and ldconfig'd,
or on LD_LIBRARY_PATH). A libgsort without gsort_local_run (older than
this client) counts as none: the Client then sorts locally with numpy
alone. Flat arrays and equal rows (2-D arrays along their last axis) of
every key dtype, with values of 4 or 8 bytes or indices; segments, bit
ranges and top-k stay with numpy here."""

import ctypes
import os
import threading
from time import perf_counter

from ._local import _bucket

# gsort_dtype (include/gsort.h) per protocol name
_DTYPE = {"u32": 0, "i32": 1, "f32": 2, "u64": 3, "i64": 4, "f64": 5,
          "u8": 6, "i8": 7, "u16": 8, "i16": 9, "f16": 10, "bf16": 11}
VALUES_NONE, VALUES_U32, VALUES_U64, VALUES_IDX32, VALUES_IDX64 = range(5)
_DESCENDING, _STABLE = 1, 2


class _Request(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("n", ctypes.c_size_t), ("keys", ctypes.c_void_p),
                ("values_kind", ctypes.c_int), ("values", ctypes.c_void_p),
                ("flags", ctypes.c_uint), ("algorithm", ctypes.c_char_p),
                ("params", ctypes.c_char_p), ("device", ctypes.c_int)]


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 1024)]


_lock = threading.Lock()
_state = {"tried": False, "fn": None, "why": "not loaded yet", "path": None}


def _load():
    want = os.environ.get("GSORT_LIBRARY", "")
    if want.lower() == "none":
        return None, "GSORT_LIBRARY=none", None
    path = want or "libgsort.so.0"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        return None, "cannot load %s: %s" % (path, e), path
    try:
        fn = lib.gsort_local_run
    except AttributeError:
        return None, "%s has no gsort_local_run (older than this client)" % path, path
    fn.argtypes = [ctypes.POINTER(_Request), ctypes.c_size_t, ctypes.c_uint, ctypes.c_void_p,
                   ctypes.POINTER(_Error)]
    fn.restype = ctypes.c_int
    return fn, None, path


def available():
    """Whether libgsort's local sort was found (loaded on the first ask)."""
    if not _state["tried"]:
        with _lock:
            if not _state["tried"]:
                fn, why, path = _load()
                _state.update(fn=fn, why=why, path=path, tried=True)
    return _state["fn"] is not None


def why_not():
    """Why available() is False (None when it is True)."""
    available()
    return _state["why"]


def library_path():
    """The library asked for ($GSORT_LIBRARY or libgsort.so.0); None when off."""
    available()
    return _state["path"]


# one request and error record per thread: ctypes structures cost a
# microsecond or two to make, a tenth of numpy's sort of 1024 keys
_tls = threading.local()


def run(wire, keys, values_kind=VALUES_NONE, values=None, descending=False, stable=False,
        threads=0, rows=0):
    """Sort keys (a writable C-contiguous 1-D array of the protocol's dtype
    `wire`; bf16 keys as uint16 words) in place with libgsort's host sort,
    values (4- or 8-byte values, or the index array to fill) with them.
    rows > 1: keys are that many equal rows, each sorted on its own
    (indices from 0 within the row). threads: 0, the machine's cores for
    large arrays; 1, this thread.
    Raises RuntimeError (with the library's message) on failure, the arrays
    then as they were."""
    r = getattr(_tls, "r", None)
    if r is None:
        r = _tls.r = _Request()
        _tls.e = _Error()
        r.device = -1
    r.dtype = _DTYPE[wire]
    r.n = keys.shape[0]
    r.keys = keys.ctypes.data
    r.values_kind = values_kind
    r.values = values.ctypes.data if values is not None else None
    r.flags = (_DESCENDING if descending else 0) | (_STABLE if stable else 0)
    e = _tls.e
    fn = _state["fn"]
    if fn is None:
        if not available():
            raise RuntimeError("gsort: libgsort's local sort: %s" % why_not())
        fn = _state["fn"]
    rc = fn(r, rows, threads, None, e)
    if rc:
        raise RuntimeError("gsort_local_run: %s (%d)" % (e.message.decode(errors="replace"), rc))


def values_kind_of(values):
    """The values kind that carries an array of these values along, or None
    for a width libgsort does not carry (then numpy sorts them)."""
    size = values.dtype.itemsize
    return VALUES_U32 if size == 4 else VALUES_U64 if size == 8 else None


def index_kind_of(dt):
    """The indices kind for an index array of dtype dt (4 or 8 bytes)."""
    return VALUES_IDX32 if dt.itemsize == 4 else VALUES_IDX64


# ---- which local sort: numpy's or this one ----

# Each local sort is timed this many times at a size (alternating, this
# one first) before the faster is kept: a first call is often cold (a new
# size's scratch, the helper threads' start).
SAMPLES = 2
# Of this many local calls at a size, one goes to the slower sort, to notice
# when it becomes the faster.
RETRY_EVERY = 64


class Pick:
    """Per request shape and power-of-two size bucket: numpy's local sort
    or libgsort's, whichever measured faster (ms per key: the fastest of
    the first SAMPLES, then exponential averages); [numpy, host, local
    calls, numpy samples, host samples]."""

    def __init__(self):
        self._t = {}

    def _entry(self, shape, n):
        key = (shape, _bucket(n))
        cur = self._t.get(key)
        if cur is None:
            cur = self._t[key] = [None, None, 0, 0, 0]
        return cur

    @staticmethod
    def _choose(cur):
        # the two alternate while sampling, this one first: the Router
        # weighs the local route by its first samples, so numpy's must be
        # among them wherever numpy is the faster
        if cur[4] < SAMPLES and cur[4] <= cur[3]:
            return True
        if cur[3] < SAMPLES:
            return False
        cur[2] += 1
        win = cur[1] <= cur[0]
        return (not win) if cur[2] % RETRY_EVERY == 0 else win

    @staticmethod
    def _record(cur, host, ms, n):
        i = 1 if host else 0
        v = (ms if ms > 0.0 else 0.0) / (n if n > 1 else 1)
        old = cur[i]
        if cur[3 + i] < SAMPLES:
            cur[i] = v if old is None or v < old else old
        else:
            cur[i] = 0.75 * old + 0.25 * (v if v < 2.0 * old else 2.0 * old)
        cur[3 + i] += 1
        return Pick._best(cur) * n

    @staticmethod
    def _best(cur):
        """The faster sort's ms per key (None: neither measured)."""
        a, b = cur[0], cur[1]
        return a if b is None or (a is not None and a < b) else b

    def run(self, shape, n, here, native):
        """here() (numpy's) or native() (libgsort's), as measured; returns
        ("numpy" or "host", n keys' time by the faster sort measured here,
        in ms: what the Router should weigh the local route by)."""
        cur = self._entry(shape, n)
        host = self._choose(cur)
        t0 = perf_counter()
        native() if host else here()
        best = self._record(cur, host, (perf_counter() - t0) * 1e3, n)
        return ("host" if host else "numpy"), best

    def choose(self, shape, n):
        """True: libgsort's sort; False: numpy's."""
        return self._choose(self._entry(shape, n))

    def record(self, shape, n, host, ms):
        self._record(self._entry(shape, n), host, ms, n)

    def best_ms(self, shape, n):
        """n keys' time by the faster local sort measured at n's size (ms),
        or None."""
        cur = self._t.get((shape, _bucket(n)))
        best = None if cur is None else self._best(cur)
        return None if best is None else best * n

    def table(self):
        """{(shape, bucket): (numpy ms/key, host ms/key)} as measured."""
        return {k: (v[0], v[1]) for k, v in self._t.items()}
