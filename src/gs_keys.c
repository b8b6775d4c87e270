/* Host implementation of the order-preserving key encoding (gs_keys.h):
 * the key kind the kernels take, scalar encode/decode per dtype and order,
 * the in-place array versions the host sort and the tests use, and the NaN
 * (bit pattern, payload) save and restore that gs_sort_run wraps around
 * every float sort. The formulas must stay identical to kernels/keys.cl.
 * The array loops work in fixed blocks of 16 so GCC's -O2 (very cheap)
 * vectoriser turns them into SIMD code. */
#include "config.h"
#include "gs_keys.h"

#include <stdlib.h>
#include <string.h>

#include "gs_err.h"

#define F32_SIGN UINT32_C(0x80000000)
#define F32_ABS UINT32_C(0x7fffffff)
#define F32_INF UINT32_C(0x7f800000)
#define F64_SIGN UINT64_C(0x8000000000000000)
#define F64_ABS UINT64_C(0x7fffffffffffffff)
#define F64_INF UINT64_C(0x7ff0000000000000)

/* Float encoding, branch-free in shifts, xors and subtractions only (so
 * the 64-bit loops vectorise with plain SSE2, which has no 64-bit compare):
 *   positive: set the sign bit; negative: complement every bit;
 *   NaN (|b| > inf, i.e. inf - |b| wraps): the top value.
 * The largest non-NaN, +inf, encodes below every NaN; decoding anything
 * that decodes to a NaN gives the canonical NaN. */
static inline uint32_t enc_f32(uint32_t b)
{
    uint32_t neg = 0u - (b >> 31);
    uint32_t nan = 0u - ((F32_INF - (b & F32_ABS)) >> 31);
    return (b ^ (neg | F32_SIGN)) | nan;
}

static inline uint32_t dec_f32(uint32_t e)
{
    uint32_t pos = 0u - (e >> 31);      /* encodings of non-negatives */
    uint32_t b = e ^ (~pos | F32_SIGN);
    uint32_t nan = 0u - ((F32_INF - (b & F32_ABS)) >> 31);
    return (b & ~nan) | (GS_F32_CANON_NAN & nan);
}

static inline uint64_t enc_f64(uint64_t b)
{
    uint64_t neg = 0u - (b >> 63);
    uint64_t nan = 0u - ((F64_INF - (b & F64_ABS)) >> 63);
    return (b ^ (neg | F64_SIGN)) | nan;
}

static inline uint64_t dec_f64(uint64_t e)
{
    uint64_t pos = 0u - (e >> 63);
    uint64_t b = e ^ (~pos | F64_SIGN);
    uint64_t nan = 0u - ((F64_INF - (b & F64_ABS)) >> 63);
    return (b & ~nan) | (GS_F64_CANON_NAN & nan);
}

unsigned gs_keys_kind(gs_dtype t)
{
    return t == GS_DT_F32 || t == GS_DT_F64 ? GS_KEYS_FLOAT
           : t == GS_DT_I32 || t == GS_DT_I64 ? GS_KEYS_SIGNED : GS_KEYS_UNSIGNED;
}

uint32_t gs_key32_encode(gs_dtype t, int descending, uint32_t bits)
{
    uint32_t e = t == GS_DT_I32 ? bits ^ F32_SIGN
               : t == GS_DT_F32 ? enc_f32(bits) : bits;
    return descending ? ~e : e;
}

uint32_t gs_key32_decode(gs_dtype t, int descending, uint32_t enc)
{
    uint32_t e = descending ? ~enc : enc;
    return t == GS_DT_I32 ? e ^ F32_SIGN : t == GS_DT_F32 ? dec_f32(e) : e;
}

uint64_t gs_key64_encode(gs_dtype t, int descending, uint64_t bits)
{
    uint64_t e = t == GS_DT_I64 ? bits ^ F64_SIGN
               : t == GS_DT_F64 ? enc_f64(bits) : bits;
    return descending ? ~e : e;
}

uint64_t gs_key64_decode(gs_dtype t, int descending, uint64_t enc)
{
    uint64_t e = descending ? ~enc : enc;
    return t == GS_DT_I64 ? e ^ F64_SIGN : t == GS_DT_F64 ? dec_f64(e) : e;
}

/* One loop per transform, with the transform inlined: a block of 16 has a
 * constant trip count (vectorised at -O2), the tail is scalar. */
#define GS_KEYS_LOOP(T, a, n, expr)                                  \
    do {                                                             \
        T *p_ = (a);                                                 \
        size_t i_ = 0, nb_ = (n) & ~(size_t)15;                      \
        for (; i_ < nb_; i_ += 16)                                   \
            for (size_t j_ = 0; j_ < 16; j_++) {                     \
                T x = p_[i_ + j_];                                   \
                p_[i_ + j_] = (expr);                                \
            }                                                        \
        for (; i_ < (n); i_++) {                                     \
            T x = p_[i_];                                            \
            p_[i_] = (expr);                                         \
        }                                                            \
    } while (0)

void gs_keys_encode(gs_dtype t, int descending, void *keys, size_t n)
{
    uint32_t m32 = descending ? UINT32_MAX : 0;
    uint64_t m64 = descending ? UINT64_MAX : 0;
    switch (t) {
    case GS_DT_U32:
        if (descending)
            GS_KEYS_LOOP(uint32_t, keys, n, ~x);
        break;
    case GS_DT_I32:
        GS_KEYS_LOOP(uint32_t, keys, n, x ^ F32_SIGN ^ m32);
        break;
    case GS_DT_F32:
        GS_KEYS_LOOP(uint32_t, keys, n, enc_f32(x) ^ m32);
        break;
    case GS_DT_U64:
        if (descending)
            GS_KEYS_LOOP(uint64_t, keys, n, ~x);
        break;
    case GS_DT_I64:
        GS_KEYS_LOOP(uint64_t, keys, n, x ^ F64_SIGN ^ m64);
        break;
    case GS_DT_F64:
        GS_KEYS_LOOP(uint64_t, keys, n, enc_f64(x) ^ m64);
        break;
    default:
        break;
    }
}

void gs_keys_decode(gs_dtype t, int descending, void *keys, size_t n)
{
    /* The integer encodings (a complement, a sign flip) are their own
     * inverses; only the float ones need a decoder. */
    uint32_t m32 = descending ? UINT32_MAX : 0;
    uint64_t m64 = descending ? UINT64_MAX : 0;
    switch (t) {
    case GS_DT_F32:
        GS_KEYS_LOOP(uint32_t, keys, n, dec_f32(x ^ m32));
        break;
    case GS_DT_F64:
        GS_KEYS_LOOP(uint64_t, keys, n, dec_f64(x ^ m64));
        break;
    default:
        gs_keys_encode(t, descending, keys, n);
        break;
    }
}

/* ---- NaN payload preservation ----
 *
 * Every NaN encodes to one key, so the sort leaves the NaNs as one block
 * of canonical NaNs, in input order for a stable algorithm and in any order
 * for an unstable one. Writing back only the key patterns in input order
 * would pair them with the wrong values after an unstable sort (issue 14:
 * shellsort). Saving each NaN's payload element with its bits and writing
 * both back is the cheapest fix that holds for every algorithm: nothing is
 * done unless some NaN is not canonical (canonical NaNs are bit-equal, so
 * any order among them is a right answer); then it costs one more pass and
 * count * (key + value) bytes; and the NaN block comes out as a stable sort
 * leaves it. Keeping payloads apart in the encoding instead would order
 * NaNs by payload, breaking the input order a stable sort must keep (as
 * numpy) and needing a second encoding in every kernel. For idx payloads
 * the saved element is the input index, which is what belongs there. */

static int is_nan32(uint32_t b)
{
    return (b & F32_ABS) > F32_INF;
}

static int is_nan64(uint64_t b)
{
    return (b & F64_ABS) > F64_INF;
}

int gs_keys_nan_save(const gs_sort_req *req, gs_nan_save *s, gs_err *err)
{
    s->count = 0;
    s->bits = NULL;
    s->vals = NULL;
    gs_dtype t = req->dtype;
    size_t n = req->n;
    if ((t != GS_DT_F32 && t != GS_DT_F64) || !n)
        return 0;
    /* First pass: count NaNs and see whether any is not canonical; the
     * common case (no NaN, or only canonical ones) saves nothing. */
    size_t count = 0, odd = 0;
    if (t == GS_DT_F32) {
        const uint32_t *k = req->keys;
        for (size_t i = 0; i < n; i++) {
            int nan = is_nan32(k[i]);
            count += nan;
            odd += nan & (k[i] != GS_F32_CANON_NAN);
        }
    } else {
        const uint64_t *k = req->keys;
        for (size_t i = 0; i < n; i++) {
            int nan = is_nan64(k[i]);
            count += nan;
            odd += nan & (k[i] != GS_F64_CANON_NAN);
        }
    }
    if (!odd)
        return 0;
    gs_payload pl = req->payload;
    size_t kw = t == GS_DT_F32 ? 4 : 8, vw = gs_payload_size(pl);
    int idx = pl == GS_PL_IDX32 || pl == GS_PL_IDX64;
    size_t voff = (count * kw + 7) & ~(size_t)7;      /* values 8-byte aligned */
    unsigned char *buf = malloc(voff + count * vw);
    if (!buf)
        return gs_err_set(err, GS_ENOMEM, "saving %zu NaN bit patterns: out of memory",
                          count);
    void *vals = vw ? buf + voff : NULL;
    /* Second pass: the NaNs' bits and payload elements, in input order. */
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (t == GS_DT_F32) {
            uint32_t b = ((const uint32_t *)req->keys)[i];
            if (!is_nan32(b))
                continue;
            ((uint32_t *)(void *)buf)[j] = b;
        } else {
            uint64_t b = ((const uint64_t *)req->keys)[i];
            if (!is_nan64(b))
                continue;
            ((uint64_t *)(void *)buf)[j] = b;
        }
        if (vw == 4)
            ((uint32_t *)vals)[j] = idx ? (uint32_t)i : ((const uint32_t *)req->values)[i];
        else if (vw == 8)
            ((uint64_t *)vals)[j] = idx ? (uint64_t)i : ((const uint64_t *)req->values)[i];
        j++;
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
    gs_dtype t = req->dtype;
    size_t kw = t == GS_DT_F32 ? 4 : t == GS_DT_F64 ? 8 : 0;
    if (!kw)
        return;
    size_t first = req->descending ? 0 : req->n - s->count;
    memcpy((unsigned char *)req->keys + first * kw, s->bits, s->count * kw);
    size_t vw = gs_payload_size(req->payload);
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
