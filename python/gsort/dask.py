"""gsort.dask: gsortd as the per-node sort engine of a Dask cluster.

Every task sorts through the gsortd of the node it runs on, found as the
gsort client finds it (default_socket(): $GSORTD_SOCKET in the worker's
environment, else the user's or the system daemon's socket). Where no
daemon answers (or it refuses a request) the task warns once per worker
process and sorts in process with numpy, giving the same answer: a job
never fails for want of a daemon.

    >>> import dask.dataframe as dd, gsort.dask
    >>> ddf.sort_values("k", sort_function=gsort.dask.sort_values)
    >>> ddf.sort_values("k", ascending=False, na_position="first",
    ...                 sort_function=gsort.dask.sort_values)

sort_values is the partition sort Dask calls after its shuffle (Dask
2022.12 passes by, ascending and na_position, plus sort_function_kwargs):
it sorts a pandas DataFrame (or Series) by one numeric column with a stable
gsortd argsort and one take, or by 2 to 8 numeric columns (ascending one
bool or one per column) with gsort.lexsort and one take, exactly as
pandas' sort_values(..., kind="stable") would; anything else (a key
function, an extension or object dtype, more columns) goes to pandas' own
sort_values.

sort_values_ddf(ddf, by, ...) is the same sort without Dask's quantiles
and shuffle: a sample sort of its own (strided sample, one task shuffle
cut by a counting split on the first column, then sort_values on each
output partition). It also sorts by several columns, which Dask 2022.12's
sort_values refuses for more than one partition.

    >>> gsort.dask.sort_values_ddf(ddf, "k", ascending=False)
    >>> gsort.dask.sort_values_ddf(ddf, ["a", "b"], ascending=[True, False])

    >>> import dask.array as da
    >>> gsort.dask.sort(x)      # x: a 1-D dask array; np.sort's values
    >>> gsort.dask.argsort(x)   # np.argsort(x.compute(), kind="stable")

sort and argsort are a sample sort: each chunk is sorted on its worker and
kept there (persisted), a weighted sample of every chunk gives the
splitters, each worker cuts its chunks into one group of slices per output
partition, and each output partition sorts its slices of every chunk
(gsortd reads them straight into its staging memory, no concatenation).
Both return a dask array with known chunk sizes. The whole sort is started
when sort/argsort is called (persisted, as the first stage always was; on
a distributed cluster the call returns once the sample is in and the
chunk sizes are known, while the output partitions are being sorted); the
result holds them.

    >>> v, i = gsort.dask.topk(x, 100)                  # the 100 largest
    >>> v, i = dask.compute(*gsort.dask.topk(x, 100, largest=False))

topk is a top-k of each chunk on its worker (gsortd's select), then one
top-k of their answers: two lazy dask arrays of one chunk of k (values,
int64 global indices), computed together by dask.compute(v, i). Order as
argsort's: numpy's (-0.0 and +0.0 equal), NaNs first with largest, last
without; of equal keys the earliest index.
"""

import operator
import threading
import warnings

import numpy as np

import dask
import dask.array as da
from dask.highlevelgraph import HighLevelGraph

import gsort

__all__ = ["sort_values", "sort_values_ddf", "sort", "argsort", "topk"]

# Keys gsortd takes as they are; narrower ones widen losslessly to these.
_WIDEN = {"b": np.uint32, "u": np.uint32, "i": np.int32, "f": np.float32}

# Samples per output partition drawn from each chunk (regular sampling of
# the sorted chunk): more even partitions for a little more gathering.
_OVERSAMPLE = 32

_warned = set()
_warned_lock = threading.Lock()


def _warn_once(e):
    """One warning per worker process and error code: the fallback is meant
    to be seen, not to flood the log with a line per partition."""
    code = getattr(e, "code", type(e).__name__)
    with _warned_lock:
        if code in _warned:
            return
        _warned.add(code)
    warnings.warn("gsort.dask: sorting in process with numpy: %s" % e, RuntimeWarning,
                  stacklevel=3)


# ---- one node's sorts: gsortd, else numpy ----

def _wire(a):
    """a as keys gsortd takes (uint32/int32/float32/uint64/int64/float64 in
    native order, contiguous), widened where narrower; TypeError for
    anything not numeric."""
    a = np.asarray(a)
    k = a.dtype.kind
    if k not in "biuf":
        raise TypeError("gsort.dask: cannot sort dtype %s (numeric keys only)" % a.dtype)
    if a.dtype.itemsize < 4 or k == "b":
        a = a.astype(_WIDEN[k])
    elif not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.itemsize > 8:
        raise TypeError("gsort.dask: cannot sort dtype %s (at most 8-byte keys)" % a.dtype)
    return np.ascontiguousarray(a)


def _plus_zero(k):
    """Floats with -0.0 made +0.0 (a new array): numpy and pandas treat
    the two zeros as equal keys, gsortd puts -0.0 first; argsorts must tie
    them to agree. Other keys as they are."""
    return k + k.dtype.type(0) if k.dtype.kind == "f" else k


def _np_argsort(k, descending):
    """gsortd's stable argsort in numpy: equal keys in input order either
    way, NaNs last ascending and first descending."""
    if not descending:
        return np.argsort(k, kind="stable")
    r = np.argsort(k[::-1], kind="stable")
    return (k.shape[0] - 1 - r)[::-1]


def _argsort(k, descending=False):
    """Stable int64 argsort of wire keys k on this node."""
    if k.shape[0] == 0:
        return np.empty(0, np.int64)
    try:
        return gsort.default_client().argsort(k, descending=descending, stable=True)
    except gsort.Error as e:
        _warn_once(e)
    return _np_argsort(k, descending)


def _sort(k):
    if k.shape[0] == 0:
        return k.copy()
    try:
        return gsort.default_client().sort(k)
    except gsort.Error as e:
        _warn_once(e)
    return np.sort(k)


def _sort_with_index(k):
    """(k sorted stably, the int64 indices that sort it). The daemon makes
    the indices itself (4-byte ones where they fit, widened as they are
    copied out): no index array to fill and send."""
    n = k.shape[0]
    if n == 0:
        return k.copy(), np.empty(0, np.int64)
    try:
        ko, vo = np.empty(n, k.dtype), np.empty(n, np.int64)
        gsort.default_client()._argsort_into(k, ko, vo, False, True)
        return ko, vo
    except gsort.Error as e:
        _warn_once(e)
    p = np.argsort(k, kind="stable")
    return k[p], p


# ---- the partition sort of DataFrame.sort_values ----

def _one(x):
    """x itself, or the single item of a one-item list; None otherwise."""
    if isinstance(x, (list, tuple)):
        return x[0] if len(x) == 1 else None
    return x


# The most columns sort_values and sort_values_ddf sort by themselves.
_MAX_COLUMNS = 8


def _numeric(dt):
    """Whether dt is a key dtype gsortd takes (directly or widened)."""
    return isinstance(dt, np.dtype) and dt.kind in "biuf" and dt.itemsize <= 8


def _columns(df, by, ascending, na_position):
    """(columns, ascending flags) when df (a pandas DataFrame, or a dask
    DataFrame's meta) is to be sorted by 2 to _MAX_COLUMNS numeric columns
    of its own, by a list as pandas takes it (ascending one bool, or one per
    column); None for anything else, which pandas or Dask then sort."""
    if (not isinstance(by, (list, tuple)) or not 2 <= len(by) <= _MAX_COLUMNS or
            na_position not in ("first", "last")):
        return None
    asc = list(ascending) if isinstance(ascending, (list, tuple)) else [ascending] * len(by)
    if len(asc) != len(by) or not all(isinstance(a, (bool, np.bool_)) for a in asc):
        return None
    for c in by:
        # a repeated column name gives a DataFrame (no dtype); a name that
        # is also an index level is ambiguous to pandas
        if (not isinstance(c, str) or c not in df.columns or c in df.index.names or
                not _numeric(getattr(df[c], "dtype", None))):
            return None
    return list(by), [bool(a) for a in asc]


def _lex_key(a, descending, na_first):
    """Column a as a gsort.lexsort key of the same order: integers
    narrowed (_narrow); a float column with NaNs that lexsort would put at
    the wrong end (it puts them after +inf, so first when descending;
    pandas puts them where na_position says whatever the direction) as
    unsigned words of its width with NaNs below -inf, which the descending
    flip sends last; anything else as it is."""
    a = np.asarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.kind in "iu":
        return _narrow(a)
    if a.dtype.kind != "f" or na_first == descending:
        return a
    nan = np.isnan(a)
    if not nan.any():
        return a
    u = np.dtype("u%d" % a.dtype.itemsize)
    sign = u.type(1 << (8 * a.dtype.itemsize - 1))
    b = (a + a.dtype.type(0)).view(u)               # -0.0 as +0.0: pandas' ties
    w = np.where(b & sign, ~b, b | sign)            # negatives reversed, below positives
    w[nan] = 0              # no number's word: 0 would be ~(all ones), a NaN
    return w


def _narrow(a):
    """Integer keys a as their offsets from a.min() in the narrowest
    unsigned type that holds them (the same order, either direction):
    lexsort packs keys by their width, so two int64 columns of values
    spanning under 2^32 (as many have) make one 64-bit sort, not two."""
    if a.shape[0] == 0 or a.dtype.itemsize == 1:
        return a
    lo, hi = a.min(), a.max()
    span = int(hi) - int(lo)
    u = np.dtype("u%d" % a.dtype.itemsize)
    for dt in (np.uint8, np.uint16, np.uint32):
        if span <= np.iinfo(dt).max:
            if np.dtype(dt).itemsize >= a.dtype.itemsize:
                return a
            # modulo arithmetic: exact, as the difference fits in dt
            return (a.view(u) - lo.astype(u)).astype(dt)
    return a


def _lex_index(df, cols, asc, na_position):
    """The int64 positions sorting df by cols (pandas' multi-column
    order: stable, -0.0 and +0.0 equal, NaNs where na_position says in
    every column) through gsort.lexsort; None where gsortd fails (the
    caller then asks pandas, after one warning)."""
    if len(df) == 0:
        return np.empty(0, np.int64)
    na_first = na_position == "first"
    keys = [_lex_key(df[c].to_numpy(), not a, na_first) for c, a in zip(cols, asc)]
    try:
        # lexsort's primary key is its last
        return gsort.lexsort(keys[::-1], descending=[not a for a in asc[::-1]])
    except gsort.Error as e:
        _warn_once(e)
    return None


def sort_values(df, by=None, ascending=True, na_position="last", ignore_index=False,
                kind=None, **kwargs):
    """df.sort_values(by, ascending=..., na_position=..., kind="stable")
    through gsortd, for a pandas DataFrame sorted by one numeric column (or
    a Series, by its values): a stable argsort of the column, then one
    take; or by a list of 2 to 8 numeric columns (ascending: one bool or a
    list of one per column): gsort.lexsort of the columns, then one take.
    Dask's hook: ddf.sort_values(by, sort_function=sort_values). kind is
    accepted and ignored (the sort is always stable); other cases and
    keywords go to pandas' own sort_values."""
    import pandas as pd

    plan = None
    if not kwargs and isinstance(df, pd.DataFrame):
        plan = _columns(df, by, ascending, na_position)
    idx = _lex_index(df, *plan, na_position) if plan else None
    if idx is not None:
        out = df.take(idx)
        return out.reset_index(drop=True) if ignore_index else out

    col = _one(by)
    asc = _one(ascending)
    series = isinstance(df, pd.Series)
    s = df if series else (df[col] if isinstance(col, str) and col in df.columns else None)
    if (s is None or isinstance(s, pd.DataFrame) or kwargs or
            not isinstance(asc, (bool, np.bool_)) or na_position not in ("first", "last") or
            not isinstance(s.dtype, np.dtype) or s.dtype.kind not in "biuf" or
            s.dtype.itemsize > 8):
        kw = dict(kwargs, ascending=ascending, na_position=na_position,
                  ignore_index=ignore_index, kind=kind or "stable")
        return df.sort_values(**kw) if series else df.sort_values(by, **kw)
    k = _plus_zero(_wire(s.to_numpy()))
    idx = _argsort(k, descending=not asc)
    if k.dtype.kind == "f":
        # gsortd puts NaNs (in input order, as pandas) last ascending and
        # first descending; pandas puts them where na_position says.
        nn = int(np.count_nonzero(np.isnan(k)))
        n = k.shape[0]
        if nn and asc and na_position == "first":
            idx = np.concatenate([idx[n - nn:], idx[:n - nn]])
        elif nn and not asc and na_position == "last":
            idx = np.concatenate([idx[nn:], idx[:nn]])
    out = df.take(idx)
    if ignore_index:
        out = out.reset_index(drop=True)
    return out


# ---- a DataFrame sample sort of its own ----

def _frame_sample(df, col, m):
    """(non-NaN keys of column col, about m of them taken at a stride)."""
    k = df[col].to_numpy()
    if k.dtype.kind == "f":
        k = k[~np.isnan(k)]
    n = k.shape[0]
    return n, k[::max(1, n // max(m, 1))].copy()


def _frame_split(df, col, splitters, asc, na_first):
    """df's rows cut into len(splitters) + 1 pieces by key (piece j goes to
    output partition j), each piece's rows in df's order: bucket ids from
    the splitters, then a stable counting split (numpy's stable argsort of
    small integers is a radix sort) and one take."""
    k = df[col].to_numpy()
    last = splitters.shape[0]
    b = np.searchsorted(splitters, k, side="right")
    if not asc:
        b = last - b
    if k.dtype.kind == "f":
        nan = np.isnan(k)
        if nan.any():
            b[nan] = 0 if na_first else last
    b = b.astype(np.uint8 if last < 256 else np.uint16 if last < 65536 else np.int64)
    ends = np.cumsum(np.bincount(b, minlength=last + 1))
    if np.any(b[1:] < b[:-1]):
        df = df.take(np.argsort(b, kind="stable"))
    return [df.iloc[e - c:e] for c, e in zip(np.diff(ends, prepend=0), ends)]


def _frame_merge(pieces, by, asc, na_position):
    """One output partition: its piece of every input partition, in input
    order, sorted by by (a column, or a list and one flag each) stably, so
    equal keys keep that order."""
    import pandas as pd
    df = pieces[0] if len(pieces) == 1 else pd.concat(pieces)
    return sort_values(df, by, asc, na_position)


def sort_values_ddf(ddf, by, ascending=True, na_position="last", npartitions=None):
    """ddf.sort_values(by, ascending=..., na_position=...) as a sample sort
    of its own, for a dask DataFrame sorted by one numeric column or by a
    list of 2 to 8 (ascending: one bool or one per column): splitters from
    a strided sample of the first column of every partition (one small
    computation), one task shuffle (each input partition cut by the
    splitters with a counting split, each output partition gathering its
    pieces) and the gsortd partition sort (sort_values above, by every
    column) of each output partition. Rows of equal first keys land in one
    output partition, so the partitions follow each other in order; NaNs of
    the first column go to the first or the last. Each row is sorted once,
    by gsortd; Dask's quantiles, its added partition column and its shuffle
    groups are not used. The result equals pandas' stable sort_values of
    the whole frame (rows of equal keys in their order in ddf), in
    npartitions partitions (default: ddf's count; some may be empty where
    keys repeat) with unknown divisions, as Dask's. Anything else (a
    non-numeric column, more columns) goes to Dask's sort_values with
    sort_function=sort_values (which in Dask 2022.12 refuses several
    columns of more than one partition). Like Dask's, it computes the
    sample when called."""
    meta = ddf._meta
    plan = _columns(meta, by, ascending, na_position)
    # the first column and its direction cut the frame
    col, asc = (plan[0][0], plan[1][0]) if plan else (_one(by), _one(ascending))
    # (A repeated column name gives a DataFrame, which has no dtype.)
    kdt = getattr(meta[col], "dtype", None) if isinstance(col, str) and col in meta else None
    if (not _numeric(kdt) or not isinstance(asc, (bool, np.bool_)) or
            na_position not in ("first", "last")):
        return ddf.sort_values(by, ascending=ascending, na_position=na_position,
                               sort_function=sort_values)
    import dask.dataframe as dd
    q = ddf.npartitions if npartitions is None else int(npartitions)
    if q < 1:
        raise ValueError("gsort.dask: npartitions must be at least 1")
    parts = ddf.to_delayed()
    samples = dask.compute(*[dask.delayed(_frame_sample, pure=True)(p, col, _OVERSAMPLE * q)
                             for p in parts])
    splitters = _splitters(samples, q).astype(kdt, copy=False)
    q = splitters.shape[0] + 1
    splits = [dask.delayed(_frame_split, pure=True, nout=q)(p, col, splitters, bool(asc),
                                                            na_position == "first")
              for p in parts]
    key = plan or (col, bool(asc))
    outs = [dask.delayed(_frame_merge, pure=True)([s[j] for s in splits], *key, na_position)
            for j in range(q)]
    return dd.from_delayed(outs, meta=meta, verify_meta=False)


# ---- sample sort of a 1-D dask array ----

class _Sorted:
    """A sorted chunk held by its worker: keys, and for argsort each key's
    index. (Not a tuple: Dask would read a tuple in its graph as a task.)"""

    __slots__ = ("keys", "index")

    def __init__(self, keys, index=None):
        self.keys = keys
        self.index = index

    def __sizeof__(self):
        # What Dask's memory accounting reads.
        return self.keys.nbytes + (0 if self.index is None else self.index.nbytes)


def _local(block, with_index):
    """A chunk sorted on its worker (with its chunk-relative indices for
    argsort)."""
    k = _wire(block)
    if not with_index:
        return _Sorted(_sort(k))
    return _Sorted(*_sort_with_index(_plus_zero(k)))


def _sample(local, m):
    """(chunk length, m evenly spaced keys of the sorted chunk, the worker
    holding it: the task runs where its data is)."""
    k = local.keys
    n = k.shape[0]
    if n == 0:
        return 0, k[:0], _where()
    return n, k[np.linspace(0, n - 1, min(n, m)).astype(np.int64)], _where()


def _splitters(samples, q):
    """q - 1 keys cutting the weighted sample into q equal shares (a
    chunk's sample items each stand for length / sample size keys)."""
    ks = [s for _, s in samples if s.shape[0]]
    if q < 2 or not ks:
        return ks[0][:0] if ks else np.empty(0)
    vals = np.concatenate(ks)
    w = np.concatenate([np.full(s.shape[0], n / s.shape[0]) for n, s in samples
                        if s.shape[0]])
    o = np.argsort(vals, kind="stable")
    cw = np.cumsum(w[o])
    pos = np.searchsorted(cw, cw[-1] * np.arange(1, q) / q)
    return vals[o][np.minimum(pos, vals.shape[0] - 1)]


def _where():
    """The address of the distributed worker running this task, or None
    (another scheduler)."""
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError, AttributeError):
        return None


def _cuts(k, splitters):
    """Where each output partition's slice of the sorted keys k starts
    (and the last one ends)."""
    return np.concatenate([[0], np.searchsorted(k, splitters, side="left"), [k.shape[0]]])


def _counts(chunks, splitters):
    """The length of every output partition's slice of each sorted chunk."""
    return [np.diff(_cuts(c.keys, splitters)) for c in chunks]


def _gather(chunks, numbers, offsets, splitters, j):
    """The slices of some sorted chunks held by one worker that go to
    output partition j: [(chunk number, _Sorted)], views of the chunks
    (indices made global by the chunks' offsets)."""
    out = []
    for c, i, offset in zip(chunks, numbers, offsets):
        k = c.keys
        a, b = (int(x) for x in _cuts(k, splitters)[j:j + 2])
        if b <= a:
            continue
        if c.index is None:
            out.append((i, _Sorted(k[a:b])))
        else:
            out.append((i, _Sorted(k[a:b], c.index[a:b] + offset)))
    return out


def _sort_pieces(keys, index=None):
    """The concatenation of the sorted key arrays in keys sorted (with
    index: the concatenation of the index arrays permuted alike, stably,
    and returned alone). gsortd reads the pieces straight into its staging
    memory: a concatenated copy would be one more array of fresh pages on
    a worker that keeps its results, which costs more than the copy."""
    n = sum(k.shape[0] for k in keys)
    if n == 0:
        return np.empty(0, keys[0].dtype if index is None else np.int64)
    try:
        # Stable only where indices ride along: a keys-only sort may take
        # any algorithm (on a GPU the fastest need not be stable).
        ko, vo = gsort.default_client()._sort_parts(keys, index, keys_out=index is None,
                                                    stable=index is not None)
        return ko if index is None else vo
    except gsort.Error as e:
        _warn_once(e)
    k = np.concatenate(keys)
    if index is None:
        return np.sort(k)
    return np.concatenate(index)[np.argsort(k, kind="stable")]


def _merge(groups, dtype, with_index):
    """One output partition: its pieces of every chunk (lists of _gather),
    sorted. The pieces are put in chunk order, so a stable sort keeps equal
    keys in index order."""
    pieces = [p for _, p in sorted((ip for g in groups for ip in g), key=lambda ip: ip[0])]
    if not pieces:
        return np.empty(0, dtype)
    if not with_index:
        return _sort_pieces([p.keys for p in pieces]).astype(dtype, copy=False)
    return _sort_pieces([p.keys for p in pieces], [p.index for p in pieces])


def _sample_sort(x, npartitions, with_index):
    x = da.asarray(x)
    if x.ndim != 1:
        raise ValueError("gsort.dask: x must be a 1-D dask array, not %d-D (sort "
                         "x.ravel() for the flattened order)" % x.ndim)
    if x.dtype.kind not in "biuf" or x.dtype.itemsize > 8:
        raise TypeError("gsort.dask: cannot sort dtype %s (numeric keys only)" % x.dtype)
    q = x.numblocks[0] if npartitions is None else int(npartitions)
    if q < 1:
        raise ValueError("gsort.dask: npartitions must be at least 1")
    out_dtype = np.dtype(np.int64) if with_index else x.dtype
    blocks = list(x.to_delayed().ravel())
    local = dask.persist(*[dask.delayed(_local, pure=True)(b, with_index) for b in blocks])
    samples = dask.compute(*[dask.delayed(_sample, pure=True)(l, _OVERSAMPLE * q)
                             for l in local])
    splitters = _splitters([(n, s) for n, s, _ in samples], q)
    q = splitters.shape[0] + 1
    offsets = np.concatenate([[0], np.cumsum([n for n, _, _ in samples])])
    # Chunks by the worker holding them: one task per worker and output
    # partition slices them all there (not one per chunk and partition,
    # whose scheduling costs more than the slicing), and only the slices
    # travel.
    holders = {}
    for i, (_, _, w) in enumerate(samples):
        holders.setdefault(w, []).append(i)
    held = list(holders.values())
    # On a distributed cluster persist returns at once: the slice lengths
    # (the result's chunk sizes, which the client waits for) come back
    # while the slicing and the merges already run. The lengths and the
    # slicing go first (a priority: graphs sent within the scheduler's
    # FIFO timeout share one generation, and a merge could otherwise be
    # ordered before a slice its partner worker waits for, which then
    # queues behind that worker's merges and starts its transfers late).
    # Another scheduler computes each batch in turn.
    with dask.annotate(priority=1):
        counts = dask.persist(*[dask.delayed(_counts, pure=True)([local[i] for i in h],
                                                                 splitters) for h in held])
        slices = dask.persist(*[dask.delayed(_gather, pure=True)(
            [local[i] for i in h], h, [int(offsets[i]) for i in h], splitters, j)
            for j in range(q) for h in held])
    merged = dask.persist(*[dask.delayed(_merge, pure=True)(
        list(slices[j * len(held):(j + 1) * len(held)]), out_dtype, with_index)
        for j in range(q)])
    sizes = np.sum([c for cs in dask.compute(*counts) for c in cs], axis=0)
    # The result's chunks are the merges themselves (one key each naming
    # its merge; empty ones left out), not from_delayed arrays joined by
    # concatenate, which would add two tasks per chunk.
    keep = [j for j in range(q) if sizes[j]] or [0]
    name = "gsort-%s-%s" % ("argsort" if with_index else "sort",
                            dask.base.tokenize(*[merged[j].key for j in keep]))
    layer = {(name, i): merged[j].key for i, j in enumerate(keep)}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[merged[j] for j in keep])
    return da.Array(graph, name, chunks=(tuple(int(sizes[j]) for j in keep),), dtype=out_dtype)


# ---- top-k of a 1-D dask array ----

def _topk_idx(k, n_keep, largest):
    """The positions of the first n_keep of wire keys k (stable order,
    numpy's ties: the zeros made one): gsortd's topk, else numpy."""
    k = _plus_zero(k)
    if n_keep == 0:
        return np.empty(0, np.int64)
    try:
        return gsort.default_client().topk(k, n_keep, largest=largest)[1]
    except gsort.Error as e:
        _warn_once(e)
    return gsort._local.topk(k, n_keep, largest)[1]


def _chunk_topk(block, k, largest):
    """(chunk length, its first min(k, length) keys in order, their
    chunk-relative int64 indices): the keys as the block holds them (its
    dtype, every bit)."""
    block = np.asarray(block)
    n = block.shape[0]
    i = _topk_idx(_wire(block), min(k, n), largest)
    return _Top(n, block[i], i)


class _Top:
    """A chunk's top-k (not a tuple: Dask reads a tuple in its graph as a
    task)."""

    __slots__ = ("n", "keys", "index")

    def __init__(self, n, keys, index):
        self.n, self.keys, self.index = n, keys, index


def _merge_topk(parts, k, largest, dtype):
    """The first k of the chunks' answers, taken in chunk order (so of
    equal keys the earliest index comes first), with global indices."""
    total = sum(p.n for p in parts)
    if k > total:
        raise ValueError("gsort.dask: k = %d exceeds the %d keys of the array" % (k, total))
    keys = [p.keys for p in parts if p.keys.shape[0]]
    if not keys:
        return np.empty(0, dtype), np.empty(0, np.int64)
    offsets = np.cumsum([0] + [p.n for p in parts[:-1]])
    index = np.concatenate([p.index + o for p, o in zip(parts, offsets) if p.keys.shape[0]])
    keys = np.concatenate(keys)
    i = _topk_idx(_wire(keys), k, largest)
    return keys[i].astype(dtype, copy=False), index[i]


def topk(x, k, largest=True):
    """(values, indices): the k largest keys of the 1-D dask array x
    (largest=False: the k smallest) and their int64 indices in x, like
    torch.topk; values of x's dtype. In order (largest first, NaNs first,
    or smallest first, NaNs last), of equal keys (-0.0 and +0.0 among
    them, as numpy's order has it) the earliest index first: the first k
    of argsort(x) or of its descending twin. Each chunk's top-k is taken
    on its worker (through its gsortd, else numpy), then one task takes
    the top-k of their answers. Both are lazy dask arrays of one chunk
    of k items; dask.compute(values, indices) computes them together.
    Numeric dtypes; k from 0 to len(x) (ValueError otherwise, when
    computed where x's length is unknown)."""
    x = da.asarray(x)
    if x.ndim != 1:
        raise ValueError("gsort.dask: x must be a 1-D dask array, not %d-D" % x.ndim)
    if x.dtype.kind not in "biuf" or x.dtype.itemsize > 8:
        raise TypeError("gsort.dask: cannot select from dtype %s (numeric keys only)"
                        % x.dtype)
    if isinstance(k, (bool, np.bool_)):
        raise TypeError("gsort.dask: k must be an integer")
    k = operator.index(k)
    n = x.shape[0]
    if k < 0 or (not np.isnan(n) and k > n):
        raise ValueError("gsort.dask: k = %d is not within 0 .. %s, the array's length"
                         % (k, n))
    largest = bool(largest)
    parts = [dask.delayed(_chunk_topk, pure=True)(b, k, largest)
             for b in x.to_delayed().ravel()]
    merged = dask.delayed(_merge_topk, pure=True, nout=2)(parts, k, largest, x.dtype)
    return (da.from_delayed(merged[0], shape=(k,), dtype=x.dtype),
            da.from_delayed(merged[1], shape=(k,), dtype=np.int64))


def sort(x, npartitions=None):
    """The sorted values of the 1-D dask array x, as np.sort gives them
    (NaNs last), in a dask array of npartitions chunks (default: x's
    count; fewer where duplicates leave splitters equal) of known sizes.
    Numeric dtypes; the narrower ones are sorted widened and returned as
    they came."""
    return _sample_sort(x, npartitions, False)


def argsort(x, npartitions=None):
    """The int64 indices that sort the 1-D dask array x stably, as
    np.argsort(x, kind="stable") gives them (equal keys, -0.0 and +0.0
    among them, in index order; NaNs last), in a dask array of known
    chunk sizes."""
    return _sample_sort(x, npartitions, True)
