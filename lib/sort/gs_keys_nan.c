/* NaN payload preservation (gs_keys.h: gs_keys_nan_save / _restore), which
 * gs_sort_run wraps around every float sort.
 *
 * Every NaN encodes to one key, so the sort leaves the NaNs as one block
 * of canonical NaNs, in input order for a stable algorithm and in any order
 * for an unstable one. Writing back only the key patterns in input order
 * would pair them with the wrong values after an unstable sort (issue 14:
 * shellsort). Saving each NaN's payload element with its bits and writing
 * both back is the cheapest fix that holds for every algorithm: nothing is
 * kept unless some NaN is not canonical (canonical NaNs are bit-equal, so
 * any order among them is a right answer); then it costs one more pass and
 * count * (key + value) bytes; and the NaN block comes out as a stable sort
 * leaves it. Keeping payloads apart in the encoding instead would order
 * NaNs by payload, breaking the input order a stable sort must keep (as
 * numpy) and needing a second encoding in every kernel. For idx payloads
 * the saved element is the input index, which is what belongs there.
 *
 * The scan reads every key once more, so it must run at memory speed, not
 * cost more than the sort (issue 16: floats no slower than integers): the
 * counting pass is branch-free over blocks the -O2 vectoriser takes, and a
 * large array is scanned by several threads, each a contiguous chunk; the
 * copying pass gives each chunk its place from the counts, so the saved
 * NaNs stay in input order. */
#include "config.h"
#include "gs_keys.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs_err.h"
#include "gs_sort.h"
#include "gs_hostpool.h"

#define F32_ABS UINT32_C(0x7fffffff)
#define F32_INF UINT32_C(0x7f800000)
#define F64_ABS UINT64_C(0x7fffffffffffffff)
#define F64_INF UINT64_C(0x7ff0000000000000)

/* Below this many keys per thread a thread costs more than it saves. */
#define NAN_CHUNK_MIN ((size_t)1 << 20)
#define NAN_THREADS_MAX 16
#define NAN_BLOCK 64

typedef struct nan_chunk {
    const gs_sort_req *req;
    size_t lo, hi;              /* the chunk's keys [lo, hi) */
    size_t count, odd;          /* its NaNs, and those not canonical */
    size_t at;                  /* where its NaNs go in the saved arrays */
    int raced;                  /* the copy found other NaNs than the count */
    unsigned char *bits;        /* the saved patterns (all chunks') */
    void *vals;                 /* the saved payload elements, or NULL */
} nan_chunk;

/* NaN flags as 0/1 without a branch: inf - |b| wraps below zero exactly for
 * NaNs, so its top bit is the flag. */
static inline uint32_t nan32(uint32_t b)
{
    return (F32_INF - (b & F32_ABS)) >> 31;
}

static inline uint64_t nan64(uint64_t b)
{
    return (F64_INF - (b & F64_ABS)) >> 63;
}

static void count_chunk(nan_chunk *c)
{
    size_t count = 0, odd = 0, i = c->lo;
    if (gs_dtype_size(c->req->shape.dtype) == 4) {
        const uint32_t *k = c->req->keys;
        for (; i + NAN_BLOCK <= c->hi; i += NAN_BLOCK) {
            uint32_t bc = 0, bo = 0;    /* per block: fits, and vectorises */
            for (int j = 0; j < NAN_BLOCK; j++) {
                uint32_t b = k[i + (size_t)j], f = nan32(b);
                bc += f;
                bo += f & (uint32_t)(b != GS_F32_CANON_NAN);
            }
            count += bc;
            odd += bo;
        }
        for (; i < c->hi; i++) {
            uint32_t f = nan32(k[i]);
            count += f;
            odd += f & (k[i] != GS_F32_CANON_NAN);
        }
    } else {
        const uint64_t *k = c->req->keys;
        for (; i + NAN_BLOCK <= c->hi; i += NAN_BLOCK) {
            uint64_t bc = 0, bo = 0;
            for (int j = 0; j < NAN_BLOCK; j++) {
                uint64_t b = k[i + (size_t)j], f = nan64(b);
                bc += f;
                bo += f & (uint64_t)(b != GS_F64_CANON_NAN);
            }
            count += bc;
            odd += bo;
        }
        for (; i < c->hi; i++) {
            uint64_t f = nan64(k[i]);
            count += f;
            odd += f & (k[i] != GS_F64_CANON_NAN);
        }
    }
    c->count = count;
    c->odd = odd;
}

/* Whether block [i, i + NAN_BLOCK) holds a NaN: a fixed-length loop, so it
 * vectorises. */
static inline int block_has_nan32(const uint32_t *k, size_t i)
{
    uint32_t any = 0;
    for (int j = 0; j < NAN_BLOCK; j++)
        any |= nan32(k[i + (size_t)j]);
    return any != 0;
}

static inline int block_has_nan64(const uint64_t *k, size_t i)
{
    uint64_t any = 0;
    for (int j = 0; j < NAN_BLOCK; j++)
        any |= nan64(k[i + (size_t)j]);
    return any != 0;
}

/* Save key m (a NaN) as the j-th: its bits and its payload element. */
static inline void save_one(const gs_sort_req *req, size_t m, size_t j, nan_chunk *c,
                            size_t vw, int idx)
{
    if (gs_dtype_size(req->shape.dtype) == 8)
        ((uint64_t *)(void *)c->bits)[j] = ((const uint64_t *)req->keys)[m];
    else
        ((uint32_t *)(void *)c->bits)[j] = ((const uint32_t *)req->keys)[m];
    if (vw == 4)
        ((uint32_t *)c->vals)[j] = idx ? (uint32_t)m : ((const uint32_t *)req->values)[m];
    else if (vw == 8)
        ((uint64_t *)c->vals)[j] = idx ? (uint64_t)m : ((const uint64_t *)req->values)[m];
}

/* The chunk's NaN bits and payload elements, in input order, from c->at on.
 * A block without a NaN is skipped whole, so a sparse NaN population costs
 * little more than the count. The keys may have changed since they were
 * counted (a client rewriting its shared memory, issue 32): it writes no
 * more than the count's room, and says when it found another number. */
static void copy_chunk(nan_chunk *c)
{
    const gs_sort_req *req = c->req;
    gs_payload pl = req->shape.payload;
    size_t vw = gs_payload_size(pl);
    int idx = pl == GS_PL_IDX32 || pl == GS_PL_IDX64;
    int f64 = gs_dtype_size(req->shape.dtype) == 8;
    const uint32_t *k32 = req->keys;
    const uint64_t *k64 = req->keys;
    size_t j = c->at, i = c->lo, end = c->at + c->count;
    for (; i < c->hi && j < end; i += NAN_BLOCK) {
        size_t stop = c->hi;
        if (i + NAN_BLOCK <= c->hi) {
            if (f64 ? !block_has_nan64(k64, i) : !block_has_nan32(k32, i))
                continue;
            stop = i + NAN_BLOCK;
        }
        for (size_t m = i; m < stop; m++)
            if (f64 ? nan64(k64[m]) : nan32(k32[m])) {
                if (j == end) {
                    c->raced = 1;
                    return;
                }
                save_one(req, m, j++, c, vw, idx);
            }
    }
    c->raced = j != end;
}

static void (*race_hook)(void *arg, const gs_sort_req *req);
static void *race_arg;

void gs_keys_nan_force_race(void (*fn)(void *arg, const gs_sort_req *req), void *arg)
{
    race_hook = fn;
    race_arg = arg;
}

static void *count_main(void *a)
{
    count_chunk(a);
    return NULL;
}

static void *copy_main(void *a)
{
    copy_chunk(a);
    return NULL;
}

/* Run fn on every chunk: chunk 0 on this thread, the others on their own.
 * A thread that cannot be created leaves its chunk to this thread. */
static void run_chunks(nan_chunk *ch, size_t nch, void *(*fn)(void *))
{
    pthread_t th[NAN_THREADS_MAX];
    int started[NAN_THREADS_MAX] = { 0 };
    for (size_t t = 1; t < nch; t++)
        started[t] = pthread_create(&th[t], NULL, fn, &ch[t]) == 0;
    fn(&ch[0]);
    for (size_t t = 1; t < nch; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            fn(&ch[t]);
    }
}

static size_t chunk_count(size_t n)
{
    size_t cpus = gs_hostpool_cpus();   /* counted once: this runs per request */
    size_t nch = n / NAN_CHUNK_MIN;
    if (nch > cpus)
        nch = cpus;
    if (nch > NAN_THREADS_MAX)
        nch = NAN_THREADS_MAX;
    return nch ? nch : 1;
}

int gs_keys_nan_save(const gs_sort_req *req, gs_nan_save *s, gs_err *err)
{
    s->count = 0;
    s->bits = NULL;
    s->vals = NULL;
    gs_dtype t = req->shape.dtype;
    size_t n = req->n;
    if (gs_keys_kind(t) != GS_KIND_FLOAT || !n)
        return 0;
    nan_chunk ch[NAN_THREADS_MAX];
    size_t nch = chunk_count(n), count = 0, odd = 0;
    for (size_t c = 0; c < nch; c++)
        ch[c] = (nan_chunk){ .req = req, .lo = n * c / nch, .hi = n * (c + 1) / nch };
    /* First pass: count NaNs and see whether any is not canonical; the
     * common case (no NaN, or only canonical ones) saves nothing. */
    run_chunks(ch, nch, count_main);
    for (size_t c = 0; c < nch; c++) {
        ch[c].at = count;
        count += ch[c].count;
        odd += ch[c].odd;
    }
    if (!odd)
        return 0;
    size_t kw = gs_dtype_size(t), vw = gs_payload_size(req->shape.payload);
    size_t voff = (count * kw + 7) & ~(size_t)7;      /* values 8-byte aligned */
    unsigned char *buf = malloc(voff + count * vw);
    if (!buf)
        return gs_err_set(err, GS_ENOMEM, "saving %zu NaN bit patterns: out of memory",
                          count);
    void *vals = vw ? buf + voff : NULL;
    /* Second pass: the NaNs' bits and payload elements, in input order. */
    for (size_t c = 0; c < nch; c++) {
        ch[c].bits = buf;
        ch[c].vals = vals;
    }
    if (race_hook)
        race_hook(race_arg, req);
    run_chunks(ch, nch, copy_main);
    for (size_t c = 0; c < nch; c++)
        if (ch[c].raced) {
            free(buf);
            return gs_err_raced("sort", err);
        }
    s->count = count;
    s->bits = buf;
    s->vals = vals;
    return 0;
}

void gs_keys_nan_restore(const gs_sort_req *req, const gs_nan_save *s)
{
    if (!req || !s || !s->bits || !s->count || s->count > req->n)
        return;
    gs_dtype t = req->shape.dtype;
    size_t kw = gs_keys_kind(t) == GS_KIND_FLOAT ? gs_dtype_size(t) : 0;
    if (!kw)
        return;
    size_t first = req->shape.descending ? 0 : req->n - s->count;
    memcpy((unsigned char *)req->keys + first * kw, s->bits, s->count * kw);
    size_t vw = gs_payload_size(req->shape.payload);
    if (vw && s->vals && req->values)
        memcpy((unsigned char *)req->values + first * vw, s->vals, s->count * vw);
}

void gs_keys_nan_free(gs_nan_save *s)
{
    if (!s)
        return;
    free(s->bits);
    s->bits = NULL;
    s->vals = NULL;
    s->count = 0;
}

/* Row r of a request of equal rows, as its own request (gs_sort_req_row's
 * slicing, here so that the NaN save needs nothing of gs_sort.c, which
 * calls it). */
static gs_sort_req row_of(const gs_sort_req *req, size_t r)
{
    gs_sort_req s = *req;
    const size_t len = req->n / (size_t)req->shape.rows;
    s.shape.rows = 0;
    s.n = len;
    s.keys = (char *)req->keys + r * len * gs_dtype_size(req->shape.dtype);
    if (req->values)
        s.values = (char *)req->values + r * len * gs_payload_size(req->shape.payload);
    return s;
}

int gs_keys_nan_rows_save(const gs_sort_req *req, gs_nan_rows *h, gs_err *err)
{
    gs_nan_save all = { 0, NULL, NULL };
    h->n = 0;
    h->s = NULL;
    int rc = gs_keys_nan_save(req, &all, err);
    if (rc < 0 || !all.count)
        return rc;      /* nothing kept: no NaN, or only canonical ones */
    if (req->shape.rows <= 1) {
        h->s = malloc(sizeof *h->s);
        if (!h->s) {
            gs_keys_nan_free(&all);
            return gs_err_set(err, GS_ENOMEM, "out of memory (NaN patterns)");
        }
        h->s[0] = all;
        h->n = 1;
        return 0;
    }
    /* rows: each row's patterns, for its own NaN block */
    gs_keys_nan_free(&all);
    const size_t nr = (size_t)req->shape.rows;
    h->s = calloc(nr, sizeof *h->s);
    if (!h->s)
        return gs_err_set(err, GS_ENOMEM, "out of memory (NaN patterns of %zu rows)", nr);
    h->n = nr;
    for (size_t row = 0; row < nr; row++) {
        gs_sort_req s = row_of(req, row);
        if ((rc = gs_keys_nan_save(&s, &h->s[row], err)) < 0)
            return rc;
    }
    return 0;
}

void gs_keys_nan_rows_restore(const gs_sort_req *req, const gs_nan_rows *h)
{
    if (req->shape.rows <= 1) {
        if (h->n)
            gs_keys_nan_restore(req, &h->s[0]);
        return;
    }
    for (size_t row = 0; row < h->n; row++) {
        gs_sort_req s = row_of(req, row);
        gs_keys_nan_restore(&s, &h->s[row]);
    }
}

void gs_keys_nan_rows_free(gs_nan_rows *h)
{
    for (size_t i = 0; i < h->n; i++)
        gs_keys_nan_free(&h->s[i]);
    free(h->s);
    h->s = NULL;
    h->n = 0;
}

static _Atomic size_t nan_device_min;

void gs_keys_nan_device_min(size_t n)
{
    atomic_store(&nan_device_min, n);
}

int gs_keys_nan_on_device(const gs_sort_req *req)
{
    size_t min = atomic_load(&nan_device_min);
    return gs_keys_kind(req->shape.dtype) == GS_KIND_FLOAT &&
           req->n >= (min ? min : GS_NAN_DEVICE_MIN);
}
