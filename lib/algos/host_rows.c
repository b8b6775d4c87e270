/* The host sort's requests of equal rows (issue 38: np.sort(a, axis=-1) of
 * a 2-D array) and of segments (CUB's segmented sort: lengths from the
 * request's offsets, a private copy checked by gs_sort_req_check), which
 * gs_sort_run hands to the host algorithm whole (gs_algo_host.rows and
 * .segments). Rows are spread over the host pool in batches of about
 * ROWS_TASK_KEYS keys (segments: that many keys and SEG_WEIGHT a
 * segment); each worker sorts its rows one at a time in
 * scratch of its own, allocated once a request (sort_rows ran each row as
 * a request of its own: a malloc, a NaN scan and the job's frame a row).
 * A row is copied out of the caller's arrays first (a client may rewrite
 * its shared memory at any moment, issue 32: nothing read there twice),
 * sorted in private memory and written back once. Keys alone are encoded
 * (gs_keys.h) and sorted as unsigned words, where equal words are equal
 * keys, so any sort is a stable one; with a payload each key is sorted
 * with its index in the row as one word (32-bit keys: key << 32 | index
 * in 64 bits; 64-bit keys: a 128-bit pair), which makes the order stable by
 * construction, and the keys and values are then gathered from the
 * private copy by index. Those sorts are Highway's vqsort where the build
 * has it (HAVE_VQSORT; not in libgsort, which is C alone), else LSD radix
 * passes of 8 bits in L1; a few keys, an insertion sort. NaNs keep the
 * flat host sort's rules: with a payload every key comes back with its own
 * bits; keys alone, a row whose NaNs are not all canonical gets their bit
 * patterns written back into its NaN block in input order, as
 * gs_keys_nan_save/restore do for a flat sort. Rows longer than
 * ROWS_FAST_MAX (ROWS_FAST_MAX_K32 for 32-bit keys alone) go to the flat
 * host sort one row a worker, as before; so do such segments, each in its
 * task among the short ones. */
#include "config.h"
#include "host_rows.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_scratch.h"

#if defined(HAVE_VQSORT) && !defined(GS_ROWS_NO_VQSORT)
#define ROWS_VQ 1
#else
#define ROWS_VQ 0
#endif

/* Rows up to this long are sorted here; longer ones by the flat sort. */
#define ROWS_FAST_MAX ((size_t)1 << 16)
/* ... and 32-bit keys alone by vqsort up to this long */
#define ROWS_FAST_MAX_K32 ((size_t)1 << 20)
/* Keys a task of the pool sorts (whole rows): enough to pay for taking it,
 * few enough that the rows spread evenly over the workers. */
#define ROWS_TASK_KEYS 16384
/* Up to this many keys a row is insertion-sorted. */
#define ROWS_ISORT 16
/* vqsort of 64- and 128-bit words only up to these many: past its base
 * case (a sorting network of 128 64-bit words, 64 pairs with AVX-512) its
 * partitions are slow on the 2-core machine's AMD EPYC (measured, cause not profiled),
 * and the LSD passes win. u32 + idx32 rows (key << 32 | index), ns a key,
 * vqsort against the passes: 256 keys 3.4 / 4.5, 512 4.8 / 4.0, 1024
 * 6.5 / 4.5; u64 keys alone: 1024 5.9 / 5.8, 2048 7.1 / 5.9; u64 + u64
 * pairs: 128 9.0 / 10.6, 256 11.9 / 8.7. 32-bit keys alone stay with
 * vqsort at every length (1024: 0.8 against 4). */
#define ROWS_VQ_C64_MAX 256
#define ROWS_VQ_U64_MAX 1024
#define ROWS_VQ_P128_MAX 128
/* Between the scratch arrays of a worker: no two a multiple of 4 KiB apart
 * (loads from one aliasing stores to another). */
#define ROWS_SKEW 192

static atomic_int force_radix;

int gs_host_rows_force_radix(int on)
{
    return atomic_exchange(&force_radix, on);
}

/* A key of 64 bits with its index in the row: sorted as one 128-bit word. */
typedef struct pair128 {
    uint64_t lo, hi;            /* the index, the encoded key */
} pair128;

typedef struct rjob rjob;
typedef void (*row_fn)(rjob *j, unsigned worker, size_t r);

struct rjob {
    const gs_sort_req *req;
    size_t rows, len, kw, vw;   /* rows (or segments); len: the row's (the
                                   longest segment the fast sort takes) */
    const uint64_t *off;        /* segments: S + 1 offsets (NULL: equal rows) */
    size_t *bounds;             /* segments: task t sorts [bounds[t], bounds[t + 1]) */
    size_t fast_max;            /* longer parts go to the flat sort */
    gs_dtype dtype;
    int desc, argsort, isfloat, radix;
    row_fn row;
    size_t batch;               /* rows a task */
    char *scr;                  /* per worker: `per` bytes at worker * per */
    size_t per, scr_bytes, off_vals, off_work, off_tmp;
    void **sorters;             /* per worker (vqsort) */
    gs_race_hook race;
    void *race_arg;
    gs_host_flat_fn flat;       /* rows longer than ROWS_FAST_MAX */
    void *flat_arg;
    pthread_mutex_t mu;
    int rc;                     /* the first failure of a flat row (under mu) */
    gs_err err;
    atomic_int stop;
};

/* ---- the sorts of a row's words ---- */

#define LESS_W(a, b) ((a) < (b))
#define LESS_P(a, b) ((a).hi < (b).hi || ((a).hi == (b).hi && (a).lo < (b).lo))
#define KEY_W(x) ((uint64_t)(x))
#define KEY_HI32(x) ((x) >> 32)
#define KEY_P(x) ((x).hi)

/* Insertion sort, and LSD passes of 8 bits between a and b (the digits of
 * every pass counted in one read; a pass whose digit every word shares is
 * skipped) returning where the words ended; KEY gives the bits sorted by,
 * which with an index in the low word are all but the index's (stable
 * passes keep the indices' order). */
#define DEFINE_ROW_ISORT(SUF, E, LESS)                                           \
    static void isort_##SUF(E *a, size_t n)                                     \
    {                                                                           \
        for (size_t i = 1; i < n; i++) {                                        \
            E x = a[i];                                                         \
            size_t k = i;                                                       \
            for (; k > 0 && LESS(x, a[k - 1]); k--)                             \
                a[k] = a[k - 1];                                                \
            a[k] = x;                                                           \
        }                                                                       \
    }

#define DEFINE_ROW_LSD(SUF, E, KEY, NP)                                          \
    static E *lsd_##SUF(E *a, E *b, size_t n)                                   \
    {                                                                           \
        uint32_t h[NP][256];                                                    \
        memset(h, 0, sizeof h);                                                 \
        for (size_t i = 0; i < n; i++) {                                        \
            uint64_t k = KEY(a[i]);                                             \
            for (unsigned p = 0; p < NP; p++)                                   \
                h[p][(k >> (8 * p)) & 255]++;                                   \
        }                                                                       \
        for (unsigned p = 0; p < NP; p++) {                                     \
            uint32_t *c = h[p];                                                 \
            if (c[(KEY(a[0]) >> (8 * p)) & 255] == n)                           \
                continue;                                                       \
            gs_digit_starts_u32(c);                                             \
            for (size_t i = 0; i < n; i++) {                                    \
                E x = a[i];                                                     \
                b[c[(KEY(x) >> (8 * p)) & 255]++] = x;                          \
            }                                                                   \
            E *t = a;                                                           \
            a = b;                                                              \
            b = t;                                                              \
        }                                                                       \
        return a;                                                               \
    }

DEFINE_ROW_ISORT(u32, uint32_t, LESS_W)
DEFINE_ROW_ISORT(u64, uint64_t, LESS_W)
DEFINE_ROW_ISORT(p128, pair128, LESS_P)
DEFINE_ROW_LSD(u32, uint32_t, KEY_W, 4)
DEFINE_ROW_LSD(u64, uint64_t, KEY_W, 8)
DEFINE_ROW_LSD(c64, uint64_t, KEY_HI32, 4)      /* (key << 32 | index) by its key */
DEFINE_ROW_LSD(p128, pair128, KEY_P, 8)

/* Sort n words of a (b: as many of scratch); returns where they are. */
static uint32_t *sort_u32(const rjob *j, unsigned w, uint32_t *a, uint32_t *b, size_t n)
{
    if (n <= ROWS_ISORT) {
        isort_u32(a, n);
        return a;
    }
#if ROWS_VQ
    if (!j->radix) {
        gs_rows_vq_u32(j->sorters[w], a, n);
        return a;
    }
#else
    (void)w;
#endif
    (void)j;
    return lsd_u32(a, b, n);
}

static uint64_t *sort_u64(const rjob *j, unsigned w, uint64_t *a, uint64_t *b, size_t n,
                          int comp)
{
    if (n <= ROWS_ISORT) {
        isort_u64(a, n);
        return a;
    }
#if ROWS_VQ
    if (!j->radix && n <= (comp ? ROWS_VQ_C64_MAX : ROWS_VQ_U64_MAX)) {
        gs_rows_vq_u64(j->sorters[w], a, n);
        return a;
    }
#else
    (void)w;
#endif
    (void)j;
    return comp ? lsd_c64(a, b, n) : lsd_u64(a, b, n);
}

static pair128 *sort_p128(const rjob *j, unsigned w, pair128 *a, pair128 *b, size_t n)
{
    if (n <= ROWS_ISORT) {
        isort_p128(a, n);
        return a;
    }
#if ROWS_VQ
    if (!j->radix && n <= ROWS_VQ_P128_MAX) {
        gs_rows_vq_u128(j->sorters[w], (uint64_t *)(void *)a, n);
        return a;
    }
#else
    (void)w;
#endif
    (void)j;
    return lsd_p128(a, b, n);
}

/* ---- the keys' encoding, fused with the copies in and out ----
 * gs_keys.h's encoding (its inline gs_enc_f32 and the rest), applied
 * while a row is copied in and undone while it is written back: two
 * passes over the row fewer than memcpy and
 * gs_keys_encode/decode in place (f32 rows of 1024: 10% of the time).
 * Blocks of 16 with a constant trip count, as gs_keys.c: -O2 vectorises
 * those. test_host_rows checks every dtype and order against sortcheck's
 * reference, which does not use gs_keys. */

/* A NaN other than the canonical one, as 0/1 without a branch. */
static inline uint32_t odd32(uint32_t b)
{
    uint32_t d = b ^ GS_F32_CANON_NAN;
    return ((GS_F32_INF - (b & GS_F32_ABS)) >> 31) & ((d | (0u - d)) >> 31);
}

static inline uint64_t odd64(uint64_t b)
{
    uint64_t d = b ^ GS_F64_CANON_NAN;
    return ((GS_F64_INF - (b & GS_F64_ABS)) >> 63) & ((d | (0u - d)) >> 63);
}

/* dst[i] = expr of x = src[i], i < n; OR of acc_expr into acc */
#define ROWS_MAP(T, dst, src, n, expr, acc, acc_expr)                           \
    do {                                                                        \
        size_t i_ = 0, nb_ = (n) & ~(size_t)15;                                 \
        for (; i_ < nb_; i_ += 16) {                                            \
            T a_ = 0;                                                           \
            for (size_t j_ = 0; j_ < 16; j_++) {                                \
                T x = (src)[i_ + j_];                                           \
                (dst)[i_ + j_] = (expr);                                        \
                a_ |= (acc_expr);                                               \
            }                                                                   \
            acc |= a_;                                                          \
        }                                                                       \
        for (; i_ < (n); i_++) {                                                \
            T x = (src)[i_];                                                    \
            (dst)[i_] = (expr);                                                 \
            acc |= (acc_expr);                                                  \
        }                                                                       \
    } while (0)

/* enc_inW: encode n W-bit keys of src into dst; 1 when a NaN among them
 * is not the canonical one (floats). dec_outW: decode them back. One
 * definition for both widths. */
#define DEFINE_ROWS_CODEC(W)                                                    \
    static int enc_in##W(gs_dtype t, int desc, uint##W##_t *restrict dst,      \
                         const uint##W##_t *restrict src, size_t n)             \
    {                                                                           \
        const uint##W##_t m = desc ? UINT##W##_MAX : 0;                         \
        uint##W##_t odd = 0;                                                    \
        switch (gs_keys_kind(t)) {                                              \
        case GS_KIND_SIGNED:                                                    \
            ROWS_MAP(uint##W##_t, dst, src, n, x ^ GS_F##W##_SIGN ^ m, odd, 0); \
            break;                                                              \
        case GS_KIND_FLOAT:                                                     \
            ROWS_MAP(uint##W##_t, dst, src, n, gs_enc_f##W(x) ^ m, odd,         \
                     odd##W(x));                                                \
            break;                                                              \
        default:                                                                \
            ROWS_MAP(uint##W##_t, dst, src, n, x ^ m, odd, 0);                  \
            break;                                                              \
        }                                                                       \
        return odd != 0;                                                        \
    }                                                                           \
                                                                                \
    static void dec_out##W(gs_dtype t, int desc, uint##W##_t *restrict dst,    \
                           const uint##W##_t *restrict src, size_t n)           \
    {                                                                           \
        const uint##W##_t m = desc ? UINT##W##_MAX : 0;                         \
        uint##W##_t none = 0;                                                   \
        switch (gs_keys_kind(t)) {                                              \
        case GS_KIND_SIGNED:                                                    \
            ROWS_MAP(uint##W##_t, dst, src, n, x ^ GS_F##W##_SIGN ^ m, none, 0); \
            break;                                                              \
        case GS_KIND_FLOAT:                                                     \
            ROWS_MAP(uint##W##_t, dst, src, n, gs_dec_f##W(x ^ m), none, 0);    \
            break;                                                              \
        default:                                                                \
            ROWS_MAP(uint##W##_t, dst, src, n, x ^ m, none, 0);                 \
            break;                                                              \
        }                                                                       \
        (void)none;                                                             \
    }

DEFINE_ROWS_CODEC(32)
DEFINE_ROWS_CODEC(64)

/* ---- NaNs of keys sorted alone ---- */

static inline int nan32(uint32_t b) { return (b & GS_F32_ABS) > GS_F32_INF; }
static inline int nan64(uint64_t b) { return (b & GS_F64_ABS) > GS_F64_INF; }

/* The sorted row's NaN block (the last keys ascending, the first
 * descending) gets the NaNs of raw, the row as it came, in input order. */
#define DEFINE_NAN_BACK(W, NANF)                                                 \
    static void nan_back##W(uint##W##_t *row, const uint##W##_t *raw, size_t n, int desc) \
    {                                                                           \
        size_t c = 0;                                                           \
        for (size_t i = 0; i < n; i++)                                          \
            c += (size_t)NANF(raw[i]);                                          \
        uint##W##_t *d = desc ? row : row + n - c;                              \
        for (size_t i = 0; i < n; i++)                                          \
            if (NANF(raw[i]))                                                   \
                *d++ = raw[i];                                                  \
    }
DEFINE_NAN_BACK(32, nan32)
DEFINE_NAN_BACK(64, nan64)

/* ---- one row ---- */

static inline char *wscr(const rjob *j, unsigned w)
{
    return j->scr + (size_t)w * j->per;
}

static inline void race_point(const rjob *j, size_t at, size_t n)
{
    if (j->race)
        j->race(j->race_arg, GS_RACE_BUCKET, at, at + n);
}

/* Where row (or segment) r starts, and its length in *n. */
static inline size_t row_at(const rjob *j, size_t r, size_t *n)
{
    if (j->off) {
        *n = (size_t)(j->off[r + 1] - j->off[r]);
        return (size_t)j->off[r];
    }
    *n = j->len;
    return r * j->len;
}

/* Keys alone, 32 bits: copied, encoded, sorted, decoded, written back. */
static void row_k32(rjob *j, unsigned w, size_t r)
{
    size_t n;
    const size_t at = row_at(j, r, &n);
    char *s = wscr(j, w);
    uint32_t *row = (uint32_t *)j->req->keys + at;
    uint32_t *raw = (uint32_t *)(void *)s, *k = (uint32_t *)(void *)(s + j->off_work);
    /* floats: the keys as they came, for NaN patterns to put back */
    const uint32_t *in = j->isfloat ? memcpy(raw, row, n * sizeof *raw) : row;
    int odd = enc_in32(j->dtype, j->desc, k, in, n);
    race_point(j, at, n);
    k = sort_u32(j, w, k, (uint32_t *)(void *)(s + j->off_tmp), n);
    dec_out32(j->dtype, j->desc, row, k, n);
    if (odd)
        nan_back32(row, raw, n, j->desc);
}

static void row_k64(rjob *j, unsigned w, size_t r)
{
    size_t n;
    const size_t at = row_at(j, r, &n);
    char *s = wscr(j, w);
    uint64_t *row = (uint64_t *)j->req->keys + at;
    uint64_t *raw = (uint64_t *)(void *)s, *k = (uint64_t *)(void *)(s + j->off_work);
    const uint64_t *in = j->isfloat ? memcpy(raw, row, n * sizeof *raw) : row;
    int odd = enc_in64(j->dtype, j->desc, k, in, n);
    race_point(j, at, n);
    k = sort_u64(j, w, k, (uint64_t *)(void *)(s + j->off_tmp), n, 0);
    dec_out64(j->dtype, j->desc, row, k, n);
    if (odd)
        nan_back64(row, raw, n, j->desc);
}

/* The row's values (not indices) into the worker's copy. */
static const void *copy_values(const rjob *j, char *s, size_t at, size_t n)
{
    if (j->argsort || !j->vw)
        return NULL;
    memcpy(s + j->off_vals, (const char *)j->req->values + at * j->vw, n * j->vw);
    return s + j->off_vals;
}

/* Where sorted position q takes the element of row index i from: the
 * key's own bits from the copy, and its value or index. */
#define GATHER(K, raw, ord, IDX, row, vrow, vals, n, vw, argsort)                \
    do {                                                                        \
        if ((vw) == 4) {                                                        \
            uint32_t *v_ = (vrow);                                              \
            const uint32_t *s_ = (vals);                                        \
            for (size_t q = 0; q < (n); q++) {                                  \
                size_t i = (size_t)IDX((ord)[q]);                               \
                (row)[q] = (raw)[i];                                            \
                v_[q] = (argsort) ? (uint32_t)i : s_[i];                        \
            }                                                                   \
        } else {                                                                \
            uint64_t *v_ = (vrow);                                              \
            const uint64_t *s_ = (vals);                                        \
            for (size_t q = 0; q < (n); q++) {                                  \
                size_t i = (size_t)IDX((ord)[q]);                               \
                (row)[q] = (raw)[i];                                            \
                v_[q] = (argsort) ? (uint64_t)i : s_[i];                        \
            }                                                                   \
        }                                                                       \
    } while (0)
#define IDX_C64(x) ((uint32_t)(x))
#define IDX_P128(x) ((x).lo)

/* 32-bit keys with values or indices: (encoded key << 32 | index) words. */
static void row_k32p(rjob *j, unsigned w, size_t r)
{
    size_t n;
    const size_t at = row_at(j, r, &n);
    char *s = wscr(j, w);
    uint32_t *row = (uint32_t *)j->req->keys + at;
    uint32_t *raw = (uint32_t *)(void *)s;
    uint64_t *c = (uint64_t *)(void *)(s + j->off_work);
    uint64_t *t = (uint64_t *)(void *)(s + j->off_tmp);
    uint32_t *e = (uint32_t *)(void *)t;       /* the encoded keys, until the sort */
    memcpy(raw, row, n * sizeof *raw);
    const void *vals = copy_values(j, s, at, n);
    race_point(j, at, n);
    enc_in32(j->dtype, j->desc, e, raw, n);
    for (size_t i = 0; i < n; i++)
        c[i] = (uint64_t)e[i] << 32 | i;
    c = sort_u64(j, w, c, t, n, 1);
    void *vrow = (char *)j->req->values + at * j->vw;
    GATHER(uint32_t, raw, c, IDX_C64, row, vrow, vals, n, j->vw, j->argsort);
}

/* 64-bit keys with values or indices: (encoded key, index) pairs. */
static void row_k64p(rjob *j, unsigned w, size_t r)
{
    size_t n;
    const size_t at = row_at(j, r, &n);
    char *s = wscr(j, w);
    uint64_t *row = (uint64_t *)j->req->keys + at;
    uint64_t *raw = (uint64_t *)(void *)s;
    pair128 *c = (pair128 *)(void *)(s + j->off_work);
    pair128 *t = (pair128 *)(void *)(s + j->off_tmp);
    uint64_t *e = (uint64_t *)(void *)c;       /* the encoded keys, until the pairs */
    memcpy(raw, row, n * sizeof *raw);
    const void *vals = copy_values(j, s, at, n);
    race_point(j, at, n);
    enc_in64(j->dtype, j->desc, e, raw, n);
    for (size_t i = 0; i < n; i++)
        t[i] = (pair128){ .lo = i, .hi = e[i] };
    c = sort_p128(j, w, t, c, n);
    void *vrow = (char *)j->req->values + at * j->vw;
    GATHER(uint64_t, raw, c, IDX_P128, row, vrow, vals, n, j->vw, j->argsort);
}

/* A row or segment longer than the rows' own sort takes, by the flat
 * sort; the first failure stops the long parts not begun. */
static void flat_part(rjob *j, size_t r)
{
    if (atomic_load(&j->stop))
        return;
    gs_sort_req part = j->off ? gs_sort_req_segment(j->req, r) : gs_sort_req_row(j->req, r);
    gs_err e;
    gs_err_clear(&e);
    int rc = j->flat(j->flat_arg, &part, &e);
    if (rc == 0)
        return;
    pthread_mutex_lock(&j->mu);
    if (j->rc == 0) {
        j->rc = rc;
        gs_err_set(&j->err, rc, "%s %zu of %zu: %s", j->off ? "segment" : "row", r, j->rows,
                   e.msg);
    }
    pthread_mutex_unlock(&j->mu);
    atomic_store(&j->stop, 1);
}

static void task_rows(void *arg, size_t t, unsigned worker)
{
    rjob *j = arg;
    if (!j->off) {
        size_t lo = t * j->batch, hi = lo + j->batch < j->rows ? lo + j->batch : j->rows;
        for (size_t r = lo; r < hi; r++)
            j->row(j, worker, r);
        return;
    }
    for (size_t r = j->bounds[t]; r < j->bounds[t + 1]; r++) {
        if (j->off[r + 1] - j->off[r] > j->fast_max)
            flat_part(j, r);
        else
            j->row(j, worker, r);
    }
}

/* Equal rows too long for the rows' own sort: one a task. */
static void task_flat(void *arg, size_t r, unsigned worker)
{
    (void)worker;
    flat_part(arg, r);
}

static size_t up64(size_t b)
{
    return (b + 63) / 64 * 64 + ROWS_SKEW;
}

/* Each worker's scratch: the raw copy, the values' copy, the words sorted
 * and as many more for the radix passes (and the encoded keys before). */
static void layout(rjob *j)
{
    const size_t n = j->len;
    const size_t es = j->vw ? 2 * j->kw : j->kw;       /* a word sorted */
    j->off_vals = up64(n * j->kw);
    j->off_work = j->off_vals + (j->vw && !j->argsort ? up64(n * j->vw) : 0);
    j->off_tmp = j->off_work + up64(n * es);
    j->per = j->off_tmp + up64(n * es);
}

static int rows_fast(rjob *j, gs_hostpool_team *team, unsigned workers, size_t tasks,
                     gs_err *err)
{
    static const row_fn fns[2][2] = { { row_k32, row_k32p }, { row_k64, row_k64p } };
    j->row = fns[j->kw == 8][j->vw != 0];
    layout(j);
    j->scr_bytes = j->per * workers;
    j->scr = gs_scratch_get(j->scr_bytes);
    int bad = !j->scr;
#if ROWS_VQ
    if (!bad && !j->radix) {
        j->sorters = calloc(workers, sizeof *j->sorters);
        bad = !j->sorters;
        for (unsigned w = 0; !bad && w < workers; w++)
            bad = !(j->sorters[w] = gs_rows_vq_new());
    }
#endif
    if (!bad)
        gs_hostpool_for(team, tasks, task_rows, j);
#if ROWS_VQ
    for (unsigned w = 0; j->sorters && w < workers; w++)
        gs_rows_vq_free(j->sorters[w]);
    free(j->sorters);
#endif
    gs_scratch_put(j->scr, j->scr_bytes);
    if (bad)
        return gs_err_set(err, GS_ENOMEM, "host: out of memory for %zu bytes of scratch for "
                          "rows of %zu keys", j->scr_bytes, j->len);
    return 0;
}

/* Segments: the tasks, cut where a task's weight (each segment's keys and
 * SEG_WEIGHT for the segment itself: many tiny segments cost their calls,
 * not their keys) reaches `per`; and the longest segment the rows' own
 * sort takes, which sizes the scratch. */
#define SEG_WEIGHT 8
static int seg_tasks(rjob *j, size_t per, size_t *ntasks, gs_err *err)
{
    const uint64_t *o = j->off;
    size_t S = j->rows, most = 0;
    for (size_t r = 0; r < S; r++) {
        size_t len = (size_t)(o[r + 1] - o[r]);
        if (len <= j->fast_max && len > most)
            most = len;
    }
    j->len = most;
    /* at most one task a segment, and no more than the weight allows */
    size_t cap = (j->req->n + SEG_WEIGHT * S) / per + 2;
    if (cap > S + 1)
        cap = S + 1;
    j->bounds = malloc((cap + 1) * sizeof *j->bounds);
    if (!j->bounds)
        return gs_err_set(err, GS_ENOMEM, "host: out of memory for the tasks of %zu segments",
                          S);
    size_t t = 0, acc = 0;
    j->bounds[0] = 0;
    for (size_t r = 0; r < S; r++) {
        acc += (size_t)(o[r + 1] - o[r]) + SEG_WEIGHT;
        if (acc >= per && t + 1 < cap) {
            j->bounds[++t] = r + 1;
            acc = 0;
        }
    }
    if (j->bounds[t] != S)
        j->bounds[++t] = S;
    *ntasks = t;
    return 0;
}

int gs_host_rows(const gs_sort_req *req, unsigned threads, gs_host_flat_fn flat,
                 void *flat_arg, gs_race_hook race, void *race_arg, gs_sort_stats *st,
                 gs_err *err)
{
    const int seg = req->shape.segments != 0;
    rjob j = {
        .req = req, .rows = (size_t)(seg ? req->shape.segments : req->shape.rows),
        .off = seg ? req->offsets : NULL, .dtype = req->shape.dtype,
        .kw = gs_dtype_size(req->shape.dtype), .vw = gs_payload_size(req->shape.payload),
        .desc = req->shape.descending,
        .argsort = req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64,
        .isfloat = gs_keys_kind(req->shape.dtype) == GS_KIND_FLOAT,
        .radix = !ROWS_VQ || atomic_load(&force_radix),
        .race = race, .race_arg = race_arg, .flat = flat, .flat_arg = flat_arg,
    };
    j.fast_max = j.kw == 4 && !j.vw && !j.radix ? ROWS_FAST_MAX_K32 : ROWS_FAST_MAX;
    if (j.rows == 0 || req->n == 0)
        return 0;
    size_t want = threads > 1 ? threads - 1 : 0, tasks = 0;
    /* a task: ROWS_TASK_KEYS keys, or fewer, so that each worker has four
     * where there are keys enough */
    size_t per = req->n / (4 * (want + 1));
    if (per > ROWS_TASK_KEYS)
        per = ROWS_TASK_KEYS;
    if (per < 1)
        per = 1;
    int fast = 1;
    if (seg) {
        int rc = seg_tasks(&j, per, &tasks, err);
        if (rc < 0)
            return rc;
    } else {
        j.len = req->n / j.rows;
        if (j.len == 0)
            return 0;
        fast = j.len <= j.fast_max;
        /* batches of whole rows */
        j.batch = fast ? per / j.len : 1;
        if (j.batch < 1)
            j.batch = 1;
        tasks = (j.rows + j.batch - 1) / j.batch;
    }
    if (want > tasks - 1)
        want = tasks - 1;
    pthread_mutex_init(&j.mu, NULL);
    gs_err_clear(&j.err);
    gs_hostpool_team team;
    unsigned workers = gs_hostpool_join(&team, (unsigned)want);
    int rc = fast ? rows_fast(&j, &team, workers, tasks, err) : 0;
    if (!fast)
        gs_hostpool_for(&team, j.rows, task_flat, &j);
    gs_hostpool_leave(&team);
    if (rc == 0 && j.rc < 0) {
        rc = j.rc;
        if (err)
            *err = j.err;
    }
    /* a failed scratch allocation touched nothing; a failed long part may
     * follow parts already written */
    st->output_touched = !(fast && rc < 0 && j.rc == 0);
    pthread_mutex_destroy(&j.mu);
    free(j.bounds);
    return rc;
}
