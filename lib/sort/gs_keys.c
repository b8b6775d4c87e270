/* Host implementation of the order-preserving key encoding (gs_keys.h):
 * the key kind the kernels take, scalar encode/decode per dtype and order,
 * and the in-place array versions the host sort and the tests use (the NaN
 * save and restore around every float sort is gs_keys_nan.c). The formulas
 * must stay identical to kernels/keys.cl.
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
    const gs_dtype_info *d = gs_dtype_row(t);
    return d ? d->kind : GS_KIND_UNSIGNED;
}

uint32_t gs_key32_encode(gs_dtype t, int descending, uint32_t bits)
{
    unsigned k = gs_keys_kind(t);
    uint32_t e = k == GS_KIND_SIGNED ? bits ^ F32_SIGN : k == GS_KIND_FLOAT ? enc_f32(bits) : bits;
    return descending ? ~e : e;
}

uint32_t gs_key32_decode(gs_dtype t, int descending, uint32_t enc)
{
    unsigned k = gs_keys_kind(t);
    uint32_t e = descending ? ~enc : enc;
    return k == GS_KIND_SIGNED ? e ^ F32_SIGN : k == GS_KIND_FLOAT ? dec_f32(e) : e;
}

uint64_t gs_key64_encode(gs_dtype t, int descending, uint64_t bits)
{
    unsigned k = gs_keys_kind(t);
    uint64_t e = k == GS_KIND_SIGNED ? bits ^ F64_SIGN : k == GS_KIND_FLOAT ? enc_f64(bits) : bits;
    return descending ? ~e : e;
}

uint64_t gs_key64_decode(gs_dtype t, int descending, uint64_t enc)
{
    unsigned k = gs_keys_kind(t);
    uint64_t e = descending ? ~enc : enc;
    return k == GS_KIND_SIGNED ? e ^ F64_SIGN : k == GS_KIND_FLOAT ? dec_f64(e) : e;
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
    switch (gs_dtype_class(t)) {
    case GS_DT_CLASS(GS_KIND_UNSIGNED, 4):
        if (descending)
            GS_KEYS_LOOP(uint32_t, keys, n, ~x);
        break;
    case GS_DT_CLASS(GS_KIND_SIGNED, 4):
        GS_KEYS_LOOP(uint32_t, keys, n, x ^ F32_SIGN ^ m32);
        break;
    case GS_DT_CLASS(GS_KIND_FLOAT, 4):
        GS_KEYS_LOOP(uint32_t, keys, n, enc_f32(x) ^ m32);
        break;
    case GS_DT_CLASS(GS_KIND_UNSIGNED, 8):
        if (descending)
            GS_KEYS_LOOP(uint64_t, keys, n, ~x);
        break;
    case GS_DT_CLASS(GS_KIND_SIGNED, 8):
        GS_KEYS_LOOP(uint64_t, keys, n, x ^ F64_SIGN ^ m64);
        break;
    case GS_DT_CLASS(GS_KIND_FLOAT, 8):
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
    switch (gs_dtype_class(t)) {
    case GS_DT_CLASS(GS_KIND_FLOAT, 4):
        GS_KEYS_LOOP(uint32_t, keys, n, dec_f32(x ^ m32));
        break;
    case GS_DT_CLASS(GS_KIND_FLOAT, 8):
        GS_KEYS_LOOP(uint64_t, keys, n, dec_f64(x ^ m64));
        break;
    default:
        gs_keys_encode(t, descending, keys, n);
        break;
    }
}
