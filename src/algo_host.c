/* gs_algo_host: a stable LSD radix sort on the host CPU, for every dtype,
 * payload and order. It is the fallback when no device is usable and the
 * baseline the device algorithms are measured against. Keys are encoded in
 * place (gs_keys.h) so one unsigned sort serves all dtypes and both orders;
 * the digit histograms of every pass come from one read pass up front,
 * which also shows which passes can be skipped (every key has the same
 * digit); keys and values ping-pong between the caller's buffers and one
 * scratch buffer each. Tiny inputs use insertion sort. No tunable
 * parameters; single-threaded (the daemon sorts requests concurrently). */
#include "config.h"
#include "gs_algos.h"

#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_keys.h"

/* Below this, insertion sort beats building histograms. */
#define HOST_SMALL_N 48
/* 8-bit digits while the data is small (histograms and the scatter targets
 * stay in L1); 11-bit digits for large n (3 passes instead of 4 for 32-bit
 * keys, 6 instead of 8 for 64-bit). */
#define HOST_WIDE_N 65536
#define HOST_MAX_BITS 11
/* Once the keys no longer fit the last-level cache, scatter through one
 * cache line of buffer per bucket and write full lines with non-temporal
 * stores: it avoids reading every destination line before writing it.
 * Measured 1.3-1.5x per pass from 8 MiB of keys up; slower below (the next
 * pass would have found the data in cache). */
#define HOST_WC_BYTES ((size_t)6 << 20)
#define HOST_LINE 64

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HOST_HAVE_NT 1
static inline void nt_u32(uint32_t *p, uint32_t v) { _mm_stream_si32((int *)p, (int)v); }
static inline void nt_u64(uint64_t *p, uint64_t v) { _mm_stream_si64((long long *)p, (long long)v); }
static inline void nt_fence(void) { _mm_sfence(); }
#else
#define HOST_HAVE_NT 0
static inline void nt_u32(uint32_t *p, uint32_t v) { *p = v; }
static inline void nt_u64(uint64_t *p, uint64_t v) { *p = v; }
static inline void nt_fence(void) { }
#endif
static inline void nt_none(char *p, char v) { *p = v; }
#define NT_STORE(p, v) _Generic((p), uint32_t *: nt_u32, uint64_t *: nt_u64, char *: nt_none)(p, v)

typedef struct radix_plan {
    unsigned bits, passes;
    size_t *hist;       /* passes x (1 << bits) counts, then offsets */
    int wc;             /* scatter through the line buffers below */
    void *wck, *wcv;    /* per bucket: one line of keys, as many values */
    uint32_t *fill;     /* per bucket: elements in its line buffer */
} radix_plan;

/* One stable insertion sort and one LSD radix sort per (key width, value
 * width); V_ is uint32_t/uint64_t, or char with HASV 0 for keys only. */
#define DEFINE_HOST_SORT(SUF, K, V_, HASV)                                       \
    static void isort_##SUF(K *k, V_ *v, size_t n)                              \
    {                                                                           \
        for (size_t i = 1; i < n; i++) {                                        \
            K x = k[i];                                                         \
            V_ y = HASV ? v[i] : 0;                                             \
            size_t j = i;                                                       \
            for (; j > 0 && k[j - 1] > x; j--) {                                \
                k[j] = k[j - 1];                                                \
                if (HASV)                                                       \
                    v[j] = v[j - 1];                                            \
            }                                                                   \
            k[j] = x;                                                           \
            if (HASV)                                                           \
                v[j] = y;                                                       \
        }                                                                       \
    }                                                                           \
                                                                                \
    /* Stable scatter of one pass through per-bucket line buffers. */           \
    static void wcscatter_##SUF(const K *sk, const V_ *sv, K *dk, V_ *dv,       \
                                size_t n, unsigned sh, K mask, size_t *off,     \
                                const radix_plan *pl)                           \
    {                                                                           \
        enum { B = HOST_LINE / sizeof(K) };                                     \
        K *bk = pl->wck;                                                        \
        V_ *bv = pl->wcv;                                                       \
        uint32_t *fill = pl->fill;                                              \
        memset(fill, 0, ((size_t)mask + 1) * sizeof *fill);                     \
        for (size_t i = 0; i < n; i++) {                                        \
            K x = sk[i];                                                        \
            size_t d = (size_t)((x >> sh) & mask);                              \
            uint32_t f = fill[d];                                               \
            bk[d * B + f] = x;                                                  \
            if (HASV)                                                           \
                bv[d * B + f] = sv[i];                                          \
            if (++f == B) {                                                     \
                size_t pos = off[d];                                            \
                for (unsigned q = 0; q < B; q++)                                \
                    NT_STORE(dk + pos + q, bk[d * B + q]);                      \
                if (HASV)                                                       \
                    for (unsigned q = 0; q < B; q++)                            \
                        NT_STORE(dv + pos + q, bv[d * B + q]);                  \
                off[d] = pos + B;                                               \
                f = 0;                                                          \
            }                                                                   \
            fill[d] = f;                                                        \
        }                                                                       \
        for (size_t d = 0; d <= (size_t)mask; d++)                              \
            for (uint32_t q = 0; q < fill[d]; q++) {                            \
                dk[off[d] + q] = bk[d * B + q];                                 \
                if (HASV)                                                       \
                    dv[off[d] + q] = bv[d * B + q];                             \
            }                                                                   \
        nt_fence();     /* the next pass reads what was streamed out */        \
    }                                                                           \
                                                                                \
    /* Returns where the sorted data ended up: 0 in k/v, 1 in the scratch. */   \
    static int radix_##SUF(K *k, V_ *v, K *ks, V_ *vs, size_t n,                \
                           const radix_plan *pl, gs_sort_stats *st)             \
    {                                                                           \
        const unsigned bits = pl->bits;                                         \
        const size_t nb = (size_t)1 << bits;                                    \
        const K mask = (K)(nb - 1);                                             \
        size_t *h = pl->hist;                                                   \
        memset(h, 0, pl->passes * nb * sizeof *h);                              \
        for (size_t i = 0; i < n; i++) {                                        \
            K x = k[i];                                                         \
            for (unsigned p = 0; p < pl->passes; p++)                           \
                h[p * nb + (size_t)((x >> (p * bits)) & mask)]++;               \
        }                                                                       \
        K *sk = k, *dk = ks;                                                    \
        V_ *sv = v, *dv = vs;                                                   \
        int in_scratch = 0;                                                     \
        for (unsigned p = 0; p < pl->passes; p++) {                             \
            size_t *off = h + p * nb;                                           \
            const unsigned sh = p * bits;                                       \
            if (off[(size_t)((sk[0] >> sh) & mask)] == n) {                     \
                st->passes_skipped++;                                           \
                continue;                                                       \
            }                                                                   \
            size_t sum = 0;                                                     \
            for (size_t d = 0; d < nb; d++) {                                   \
                size_t c = off[d];                                              \
                off[d] = sum;                                                   \
                sum += c;                                                       \
            }                                                                   \
            if (pl->wc) {                                                       \
                wcscatter_##SUF(sk, sv, dk, dv, n, sh, mask, off, pl);          \
            } else {                                                            \
                for (size_t i = 0; i < n; i++) {                                \
                    K x = sk[i];                                                \
                    size_t pos = off[(size_t)((x >> sh) & mask)]++;             \
                    dk[pos] = x;                                                \
                    if (HASV)                                                   \
                        dv[pos] = sv[i];                                        \
                }                                                               \
            }                                                                   \
            K *tk = sk; sk = dk; dk = tk;                                       \
            V_ *tv = sv; sv = dv; dv = tv;                                      \
            in_scratch = !in_scratch;                                           \
            st->passes++;                                                       \
        }                                                                       \
        return in_scratch;                                                      \
    }

DEFINE_HOST_SORT(k32, uint32_t, char, 0)
DEFINE_HOST_SORT(k32v32, uint32_t, uint32_t, 1)
DEFINE_HOST_SORT(k32v64, uint32_t, uint64_t, 1)
DEFINE_HOST_SORT(k64, uint64_t, char, 0)
DEFINE_HOST_SORT(k64v32, uint64_t, uint32_t, 1)
DEFINE_HOST_SORT(k64v64, uint64_t, uint64_t, 1)

static int host_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p,
                      gs_err *err)
{
    (void)dev;
    (void)req;
    if (p && p->count > 0)
        return gs_err_set(err, GS_EUNSUPPORTED, "unknown parameter '%s' (the host "
                          "sort has no tunable parameters)", p->p[0].name);
    return 0;
}

static void host_defaults(const gs_dev_info *info, gs_params *out)
{
    (void)info;
    gs_params_clear(out);
}

/* The sort's scratch: the key and value ping-pong arrays and the plan's
 * histograms and write-combining buffers (any of them may be NULL). */
static void scratch_free(void *ks, void *vs, radix_plan *pl)
{
    free(ks);
    free(vs);
    free(pl->hist);
    free(pl->wck);
    free(pl->wcv);
    free(pl->fill);
}

static int host_run(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                    gs_sort_stats *st, gs_err *err)
{
    (void)ctx;
    (void)p;
    const size_t n = req->n, kw = gs_dtype_size(req->dtype);
    const size_t vw = gs_payload_size(req->payload);
    const int argsort = req->payload == GS_PL_IDX32 || req->payload == GS_PL_IDX64;
    const int k64 = kw == 8;
    if (n == 0)
        return 0;

    /* Allocate everything before touching the input, so failure leaves it
     * as it was. */
    radix_plan pl = { .bits = n < HOST_WIDE_N ? 8 : HOST_MAX_BITS };
    pl.passes = (unsigned)((kw * 8 + pl.bits - 1) / pl.bits);
    pl.wc = HOST_HAVE_NT && n * kw >= HOST_WC_BYTES;
    void *ks = NULL, *vs = NULL;
    int nomem = 0;
    if (n > HOST_SMALL_N) {
        size_t nb = (size_t)1 << pl.bits, line_elems = HOST_LINE / kw;
        ks = malloc(n * kw);
        vs = vw ? malloc(n * vw) : NULL;
        pl.hist = malloc(pl.passes * nb * sizeof *pl.hist);
        nomem = !ks || (vw && !vs) || !pl.hist;
        if (pl.wc) {
            pl.wck = aligned_alloc(HOST_LINE, nb * HOST_LINE);
            pl.wcv = vw ? aligned_alloc(HOST_LINE, nb * line_elems * vw) : NULL;
            pl.fill = malloc(nb * sizeof *pl.fill);
            nomem |= !pl.wck || (vw && !pl.wcv) || !pl.fill;
        }
    }
    if (nomem) {
        scratch_free(ks, vs, &pl);
        return gs_err_set(err, GS_ENOMEM, "host sort: out of memory for %zu "
                          "bytes of scratch", n * (kw + vw));
    }

    gs_keys_encode(req->dtype, req->descending, req->keys, n);
    if (argsort) {
        if (vw == 4) {
            uint32_t *ix = req->values;
            for (size_t i = 0; i < n; i++)
                ix[i] = (uint32_t)i;
        } else {
            uint64_t *ix = req->values;
            for (size_t i = 0; i < n; i++)
                ix[i] = i;
        }
    }

    void *k = req->keys, *v = req->values;
    if (n <= HOST_SMALL_N) {
        if (!k64)
            vw == 0 ? isort_k32(k, NULL, n) : vw == 4 ? isort_k32v32(k, v, n)
                                                       : isort_k32v64(k, v, n);
        else
            vw == 0 ? isort_k64(k, NULL, n) : vw == 4 ? isort_k64v32(k, v, n)
                                                       : isort_k64v64(k, v, n);
    } else {
        int moved;
        if (!k64)
            moved = vw == 0 ? radix_k32(k, NULL, ks, NULL, n, &pl, st)
                  : vw == 4 ? radix_k32v32(k, v, ks, vs, n, &pl, st)
                            : radix_k32v64(k, v, ks, vs, n, &pl, st);
        else
            moved = vw == 0 ? radix_k64(k, NULL, ks, NULL, n, &pl, st)
                  : vw == 4 ? radix_k64v32(k, v, ks, vs, n, &pl, st)
                            : radix_k64v64(k, v, ks, vs, n, &pl, st);
        if (moved) {
            memcpy(k, ks, n * kw);
            if (vw)
                memcpy(v, vs, n * vw);
        }
    }
    gs_keys_decode(req->dtype, req->descending, req->keys, n);
    scratch_free(ks, vs, &pl);
    return 0;
}

const gs_algo gs_algo_host = {
    .name = "host",
    .summary = "LSD radix sort on the host CPU (stable, every dtype and payload)",
    .stable = 1,
    .uses_device = 0,
    .params = NULL,
    .nparams = 0,
    .defaults = host_defaults,
    .check = host_check,
    .run = host_run,
};
