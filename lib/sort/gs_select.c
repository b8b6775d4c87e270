/* Top-k on the host (gs_select.h): a radix select on the keys' order-
 * preserving encoding (gs_keys.h). A long row with a small k is first cut
 * by a bound from a sample (one read keeps a few times k keys); otherwise
 * one pass counts the top digit of every key, which names the bucket
 * holding the k-th key, and a second takes every key of a lower bucket and
 * keeps those of that bucket as candidates, in private memory. The next
 * digits narrow the candidates until exactly k keys are taken (ties at the
 * k-th key: the earliest, as a stable sort leaves them). The k are sorted
 * by (encoding, position) with a small radix sort of their own and written
 * with their values or indices to the row's first places; a key is written
 * as its own bits, read again at its position, so NaN payloads survive.
 * A long row's passes run in chunks over the host pool (rows run side by
 * side through gs_sort.c's row runner, one thread a row; where k is a
 * large part of a row gs_sort.c sorts it whole instead).
 * The keys may be a client's shared memory, rewritten at any moment (issue
 * 32): the sampled cut reads each key once; the two passes' collecting pass
 * writes only inside what its count found and checks that it found as many
 * again, so a changed key ends the select with gs_err_raced before anything
 * is written; positions come from the passes, never from the keys. */
#include "config.h"
#include "gs_select.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"

#define SEL_BLOCK 256            /* keys encoded at a time, on the stack */
#define SEL_TOP_MAX 12           /* top digit: 4096 counts a chunk stay in L1 */
#define SEL_NEXT_BITS 8          /* the candidates' digits */
#define SEL_CHUNK_MIN ((size_t)1 << 18)
#define SEL_CHUNKS_MAX 64
/* A long row with a small k is first cut by a bound from a sample: one
 * read of every key keeps those at or below the sample's few-th smallest
 * (a few times k of them), and the select runs on those alone; a bound
 * that keeps fewer than k (an unlucky sample) falls back to the two
 * passes. From this many keys, for k up to len / SEL_SAMPLE_DIV. */
#define SEL_SAMPLE_MIN ((size_t)1 << 16)
#define SEL_SAMPLE_N 16384
#define SEL_SAMPLE_DIV 64

static void (*race_fn)(void *);
static void *race_arg;

void gs_select_force_race(void (*fn)(void *arg), void *arg)
{
    race_fn = fn;
    race_arg = arg;
}

/* One row's select. */
typedef struct sel {
    gs_dtype t;
    int desc;
    unsigned bits;              /* key width */
    size_t ks;
    const void *keys;
    size_t len, k;
    unsigned shift;             /* of the top digit */
    size_t nbins, nchunks, chunk;
    size_t *hist;               /* nchunks x nbins */
    size_t b;                   /* the top digit of the k-th key */
    size_t *lt_at, *eq_at;      /* nchunks + 1 each: where a chunk's keys go */
    uint64_t *te, *ti;          /* taken: encodings and positions (k of them) */
    size_t nt;
    uint64_t *ce, *ci;          /* candidates: in the k-th key's bucket */
    size_t nc;
    atomic_int raced;
    /* the sampled cut */
    uint64_t bound;             /* keys encoded at most this are kept */
    size_t cap;                 /* room a chunk has for them */
    size_t *kept;               /* nchunks: how many each kept */
    atomic_int over;            /* a chunk kept more than its room */
} sel;

static void enc_block(const sel *s, size_t i0, size_t m, uint64_t *out)
{
    if (s->ks == 4) {
        uint32_t tmp[SEL_BLOCK];
        memcpy(tmp, (const char *)s->keys + i0 * 4, m * 4);
        gs_keys_encode(s->t, s->desc, tmp, m);
        for (size_t j = 0; j < m; j++)
            out[j] = tmp[j];
    } else {
        memcpy(out, (const char *)s->keys + i0 * 8, m * 8);
        gs_keys_encode(s->t, s->desc, out, m);
    }
}

static void chunk_range(const sel *s, size_t c, size_t *lo, size_t *hi)
{
    *lo = c * s->chunk;
    *hi = *lo + s->chunk < s->len ? *lo + s->chunk : s->len;
}

static void task_count(void *arg, size_t c, unsigned worker)
{
    sel *s = arg;
    (void)worker;
    size_t *h = s->hist + c * s->nbins, lo, hi;
    uint64_t e[SEL_BLOCK];
    chunk_range(s, c, &lo, &hi);
    for (size_t i = lo; i < hi; i += SEL_BLOCK) {
        size_t m = hi - i < SEL_BLOCK ? hi - i : SEL_BLOCK;
        enc_block(s, i, m, e);
        for (size_t j = 0; j < m; j++)
            h[e[j] >> s->shift]++;
    }
}

static void task_collect(void *arg, size_t c, unsigned worker)
{
    sel *s = arg;
    (void)worker;
    size_t lo, hi, tp = s->lt_at[c], cp = s->eq_at[c];
    const size_t tend = s->lt_at[c + 1], cend = s->eq_at[c + 1];
    uint64_t e[SEL_BLOCK];
    chunk_range(s, c, &lo, &hi);
    for (size_t i = lo; i < hi; i += SEL_BLOCK) {
        size_t m = hi - i < SEL_BLOCK ? hi - i : SEL_BLOCK;
        enc_block(s, i, m, e);
        for (size_t j = 0; j < m; j++) {
            size_t d = (size_t)(e[j] >> s->shift);
            if (d < s->b) {
                if (tp < tend) {
                    s->te[tp] = e[j];
                    s->ti[tp] = i + j;
                }
                tp++;
            } else if (d == s->b) {
                if (cp < cend) {
                    s->ce[cp] = e[j];
                    s->ci[cp] = i + j;
                }
                cp++;
            }
        }
    }
    if (tp != tend || cp != cend)       /* the keys changed since they were counted */
        atomic_store(&s->raced, 1);
}

static void run_tasks(gs_hostpool_team *team, unsigned workers, size_t ntasks,
                      gs_hostpool_fn fn, void *arg)
{
    if (workers > 1 && ntasks > 1)
        gs_hostpool_for(team, ntasks, fn, arg);
    else
        for (size_t c = 0; c < ntasks; c++)
            fn(arg, c, 0);
}

/* The m-th smallest (from 0) of a[0..n), reordering a: quickselect. */
static uint64_t nth_u64(uint64_t *a, size_t n, size_t m)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint64_t p = a[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < p)
                i++;
            while (a[j] > p)
                j--;
            if (i <= j) {
                uint64_t t = a[i];
                a[i++] = a[j];
                a[j] = t;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (m <= j)
            hi = j;
        else if (m >= i)
            lo = i;
        else
            return a[m];
    }
    return a[m];
}

/* The sampled cut of chunk c: every key encoded at most the bound, with its
 * position, into the chunk's room (a full room stops it). A block is first
 * only tested, in its own width (vectorised): most hold none of them. */
#define SEL_KEEP_BLOCK(T, tmp)                                                          \
    do {                                                                                \
        T *b_ = (tmp);                                                                  \
        const T bd_ = (T)bound;                                                         \
        memcpy(b_, (const char *)s->keys + i * sizeof(T), m * sizeof(T));               \
        gs_keys_encode(s->t, s->desc, b_, m);                                           \
        unsigned any_ = 0;                                                              \
        for (size_t j = 0; j < m; j++)                                                  \
            any_ |= b_[j] <= bd_;                                                       \
        for (size_t j = 0; any_ && j < m; j++)                                          \
            if (b_[j] <= bd_) {                                                         \
                if (m0 == s->cap) {                                                     \
                    atomic_store(&s->over, 1);                                          \
                    goto full;                                                          \
                }                                                                       \
                ke[m0] = b_[j];                                                         \
                ki[m0++] = i + j;                                                       \
            }                                                                           \
    } while (0)

static void task_keep(void *arg, size_t c, unsigned worker)
{
    sel *s = arg;
    (void)worker;
    size_t lo, hi, m0 = 0;
    uint64_t *ke = s->ce + c * s->cap, *ki = s->ci + c * s->cap;
    const uint64_t bound = s->bound;
    uint32_t t32[SEL_BLOCK];
    uint64_t t64[SEL_BLOCK];
    chunk_range(s, c, &lo, &hi);
    for (size_t i = lo; i < hi; i += SEL_BLOCK) {
        size_t m = hi - i < SEL_BLOCK ? hi - i : SEL_BLOCK;
        if (s->ks == 4)
            SEL_KEEP_BLOCK(uint32_t, t32);
        else
            SEL_KEEP_BLOCK(uint64_t, t64);
    }
full:
    s->kept[c] = m0;
}

/* Narrow the candidates by the next digits until k are taken. */
static void refine(sel *s)
{
    size_t need = s->k - s->nt;
    unsigned done = s->bits - s->shift;
    while (need < s->nc && done < s->bits) {
        unsigned d2 = s->bits - done < SEL_NEXT_BITS ? s->bits - done : SEL_NEXT_BITS;
        unsigned sh = s->bits - done - d2;
        uint64_t mask = ((uint64_t)1 << d2) - 1;
        size_t h[1u << SEL_NEXT_BITS] = { 0 };
        for (size_t i = 0; i < s->nc; i++)
            h[(s->ce[i] >> sh) & mask]++;
        size_t b = 0, cum = 0;
        while (cum + h[b] < need)
            cum += h[b++];
        size_t w = 0;
        for (size_t i = 0; i < s->nc; i++) {
            uint64_t d = (s->ce[i] >> sh) & mask;
            if (d < b) {
                s->te[s->nt] = s->ce[i];
                s->ti[s->nt++] = s->ci[i];
            } else if (d == b) {
                s->ce[w] = s->ce[i];
                s->ci[w++] = s->ci[i];
            }
        }
        s->nc = w;
        need -= cum;
        done += d2;
    }
    /* every candidate left, or (digits spent) equal keys in input order */
    for (size_t i = 0; i < need; i++) {
        s->te[s->nt] = s->ce[i];
        s->ti[s->nt++] = s->ci[i];
    }
}

/* The k taken in order of encoding, stably (equal keys were taken at one
 * level, in input order): an LSD radix sort of (encoding, position) pairs
 * by bytes, skipping the bytes every key shares. 0, or GS_ENOMEM. */
static int sort_pairs(uint64_t *e, uint64_t *p, size_t n, unsigned bits, gs_err *err)
{
    uint64_t *te = malloc(2 * n * sizeof *te), *tp;
    if (!te)
        return gs_err_set(err, GS_ENOMEM, "top-k: out of memory sorting %zu results", n);
    tp = te + n;
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        all_or |= e[i];
        all_and &= e[i];
    }
    uint64_t *se = e, *sp = p, *de = te, *dp = tp;
    for (unsigned sh = 0; sh < bits; sh += 8) {
        if (((all_or ^ all_and) >> sh & 0xff) == 0)
            continue;           /* every key has this byte */
        size_t cnt[256] = { 0 };
        for (size_t i = 0; i < n; i++)
            cnt[se[i] >> sh & 0xff]++;
        gs_digit_starts_sz(cnt);
        for (size_t i = 0; i < n; i++) {
            size_t o = cnt[se[i] >> sh & 0xff]++;
            de[o] = se[i];
            dp[o] = sp[i];
        }
        uint64_t *t = se; se = de; de = t;
        t = sp; sp = dp; dp = t;
    }
    if (se != e) {
        memcpy(e, se, n * sizeof *e);
        memcpy(p, sp, n * sizeof *p);
    }
    free(te);
    return 0;
}

/* The k taken, in order unless the request allows any, written to the
 * row's first k places. */
static int emit(sel *s, const gs_sort_req *row, gs_err *err)
{
    const size_t k = s->k, ks = s->ks, vs = gs_payload_size(row->shape.payload);
    if (!row->shape.unsorted && k > 1) {
        int rc = sort_pairs(s->te, s->ti, k, s->bits, err);
        if (rc < 0)
            return rc;
    }
    char *ko = malloc(k * ks + k * vs + 1);
    if (!ko)
        return gs_err_set(err, GS_ENOMEM, "top-k: out of memory for %zu results", k);
    char *vo = ko + k * ks;
    for (size_t i = 0; i < k; i++) {
        size_t at = (size_t)s->ti[i];
        gs_key_put(ko, i, ks, gs_key_get(row->keys, at, ks));
        switch (row->shape.payload) {
        case GS_PL_U32: case GS_PL_U64:
            gs_key_put(vo, i, vs, gs_key_get(row->values, at, vs));
            break;
        case GS_PL_IDX32: case GS_PL_IDX64:
            gs_key_put(vo, i, vs, at);
            break;
        default:
            break;
        }
    }
    memcpy(row->keys, ko, k * ks);
    if (vs)
        memcpy(row->values, vo, k * vs);
    free(ko);
    return 0;
}

/* The sampled cut (SEL_SAMPLE_MIN): 0 when the row is answered, 1 when
 * the bound kept fewer than k keys or a chunk more than its room (the
 * caller takes the two passes), or a negative error. */
static int select_sampled(sel *s, const gs_sort_req *row, unsigned workers,
                          gs_hostpool_team *team, gs_err *err)
{
    uint64_t *smp = malloc(SEL_SAMPLE_N * sizeof *smp);
    if (!smp)
        return gs_err_set(err, GS_ENOMEM, "top-k: out of memory for a sample");
    size_t step = s->len / SEL_SAMPLE_N;
    for (size_t i = 0; i < SEL_SAMPLE_N; i++)
        enc_block(s, i * step, 1, &smp[i]);
    /* the sample's rank of the k-th key, and a margin of a few deviations */
    double r = (double)s->k * SEL_SAMPLE_N / (double)s->len;
    size_t m = (size_t)(r + 4 * __builtin_sqrt(r) + 16);
    if (m >= SEL_SAMPLE_N)
        m = SEL_SAMPLE_N - 1;
    s->bound = nth_u64(smp, SEL_SAMPLE_N, m);
    free(smp);
    /* each chunk's room: four times its expected share */
    size_t expect = (size_t)((double)(m + 1) / SEL_SAMPLE_N * (double)s->chunk);
    s->cap = 4 * expect + 2 * SEL_BLOCK;
    if (s->cap > s->chunk)
        s->cap = s->chunk;
    s->ce = malloc(2 * s->nchunks * s->cap * sizeof *s->ce);
    s->kept = calloc(s->nchunks, sizeof *s->kept);
    s->te = malloc(2 * s->k * sizeof *s->te + 1);
    int rc = 1;
    if (!s->ce || !s->kept || !s->te) {
        rc = gs_err_set(err, GS_ENOMEM, "top-k: out of memory for the kept keys");
        goto out;
    }
    s->ci = s->ce + s->nchunks * s->cap;
    s->ti = s->te + s->k;
    atomic_init(&s->over, 0);
    run_tasks(team, workers, s->nchunks, task_keep, s);
    size_t total = 0;
    for (size_t c = 0; c < s->nchunks; c++)
        total += s->kept[c];
    if (atomic_load(&s->over) || total < s->k)
        goto out;
    /* the chunks' keys together, in input order */
    size_t w = 0;
    for (size_t c = 0; c < s->nchunks; c++) {
        memmove(s->ce + w, s->ce + c * s->cap, s->kept[c] * sizeof *s->ce);
        memmove(s->ci + w, s->ci + c * s->cap, s->kept[c] * sizeof *s->ci);
        w += s->kept[c];
    }
    s->nt = 0;
    s->nc = total;
    s->shift = s->bits;         /* every digit still to look at */
    refine(s);
    rc = emit(s, row, err);
out:
    free(s->ce);
    free(s->kept);
    free(s->te);
    s->ce = s->te = NULL;
    return rc;
}

/* Select in one row (n = its length, no rows) with up to `workers` threads. */
static int select_row(const gs_sort_req *row, unsigned want, gs_err *err)
{
    sel s = { .t = row->shape.dtype, .desc = row->shape.descending, .keys = row->keys,
              .len = row->n, .k = (size_t)row->shape.k };
    s.ks = gs_dtype_size(s.t);
    s.bits = (unsigned)s.ks * 8;
    unsigned top = 4;
    while (top < SEL_TOP_MAX && ((size_t)1 << (top + 4)) < s.len)
        top++;
    s.shift = s.bits - top;
    s.nbins = (size_t)1 << top;
    s.chunk = s.len / SEL_CHUNKS_MAX > SEL_CHUNK_MIN ? s.len / SEL_CHUNKS_MAX : SEL_CHUNK_MIN;
    s.nchunks = (s.len + s.chunk - 1) / s.chunk;
    if (s.nchunks > SEL_CHUNKS_MAX + 1)
        s.nchunks = SEL_CHUNKS_MAX + 1;
    s.chunk = (s.len + s.nchunks - 1) / s.nchunks;
    atomic_init(&s.raced, 0);
    int rc = 0;
    s.hist = calloc(s.nchunks * s.nbins + 2 * (s.nchunks + 1), sizeof *s.hist);
    if (!s.hist)
        return gs_err_set(err, GS_ENOMEM, "top-k: out of memory for the counts");
    s.lt_at = s.hist + s.nchunks * s.nbins;
    s.eq_at = s.lt_at + s.nchunks + 1;

    gs_hostpool_team team;
    const int joined = s.nchunks > 1;
    unsigned workers = joined ? gs_hostpool_join(&team, want ? want - 1 : 0) : 1;
    if (s.len >= SEL_SAMPLE_MIN && s.k <= s.len / SEL_SAMPLE_DIV) {
        rc = select_sampled(&s, row, workers, &team, err);
        if (rc <= 0) {
            if (joined)
                gs_hostpool_leave(&team);
            free(s.hist);
            return rc;
        }
        rc = 0;                 /* an unlucky sample: the two passes */
    }
    run_tasks(&team, workers, s.nchunks, task_count, &s);
    if (race_fn)
        race_fn(race_arg);

    size_t cum = 0, eq = 0;
    for (size_t d = 0; d < s.nbins; d++) {
        size_t tot = 0;
        for (size_t c = 0; c < s.nchunks; c++)
            tot += s.hist[c * s.nbins + d];
        if (cum + tot >= s.k) {
            s.b = d;
            eq = tot;
            break;
        }
        cum += tot;
    }
    for (size_t c = 0; c < s.nchunks; c++) {
        const size_t *h = s.hist + c * s.nbins;
        size_t lt = 0;
        for (size_t d = 0; d < s.b; d++)
            lt += h[d];
        s.lt_at[c + 1] = s.lt_at[c] + lt;
        s.eq_at[c + 1] = s.eq_at[c] + h[s.b];
    }
    s.te = malloc(2 * s.k * sizeof *s.te);
    s.ce = malloc((2 * eq + 1) * sizeof *s.ce);
    if (!s.te || !s.ce) {
        rc = gs_err_set(err, GS_ENOMEM, "top-k: out of memory for %zu candidates", eq + s.k);
    } else {
        s.ti = s.te + s.k;
        s.ci = s.ce + eq;
        run_tasks(&team, workers, s.nchunks, task_collect, &s);
    }
    if (joined)
        gs_hostpool_leave(&team);
    if (rc == 0 && atomic_load(&s.raced))
        rc = gs_err_raced("top-k", err);
    if (rc == 0) {
        s.nt = cum;
        s.nc = eq;
        refine(&s);
        rc = emit(&s, row, err);
    }
    free(s.te);
    free(s.ce);
    free(s.hist);
    return rc;
}

int gs_select_run(const gs_sort_req *req, unsigned threads, gs_err *err)
{
    if (req->shape.k == 0 || req->n == 0)
        return 0;
    unsigned cpus = gs_hostpool_cpus();
    return select_row(req, threads && threads < cpus ? threads : cpus, err);
}

void gs_select_pack(const gs_sort_req *req)
{
    gs_select_pack_keys(req, req->keys, gs_dtype_size(req->shape.dtype));
}

void gs_select_pack_keys(const gs_sort_req *req, void *keys, size_t ks)
{
    size_t rows = req->shape.rows > 1 ? (size_t)req->shape.rows : 1, k = (size_t)req->shape.k;
    size_t len = req->n / rows;
    size_t vs = gs_payload_size(req->shape.payload);
    for (size_t r = 1; r < rows && k; r++) {    /* forward: a row's new place is below it */
        memmove((char *)keys + r * k * ks, (char *)keys + r * len * ks, k * ks);
        if (vs)
            memmove((char *)req->values + r * k * vs, (char *)req->values + r * len * vs,
                    k * vs);
    }
}
