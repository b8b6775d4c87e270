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

unsigned gs_keys_kind(gs_dtype t)
{
    const gs_dtype_info *d = gs_dtype_row(t);
    return d ? d->kind : GS_KIND_UNSIGNED;
}

uint32_t gs_key32_encode(gs_dtype t, int descending, uint32_t bits)
{
    unsigned k = gs_keys_kind(t);
    uint32_t e = k == GS_KIND_SIGNED ? bits ^ GS_F32_SIGN : k == GS_KIND_FLOAT ? gs_enc_f32(bits) : bits;
    return descending ? ~e : e;
}

uint32_t gs_key32_decode(gs_dtype t, int descending, uint32_t enc)
{
    unsigned k = gs_keys_kind(t);
    uint32_t e = descending ? ~enc : enc;
    return k == GS_KIND_SIGNED ? e ^ GS_F32_SIGN : k == GS_KIND_FLOAT ? gs_dec_f32(e) : e;
}

uint64_t gs_key64_encode(gs_dtype t, int descending, uint64_t bits)
{
    unsigned k = gs_keys_kind(t);
    uint64_t e = k == GS_KIND_SIGNED ? bits ^ GS_F64_SIGN : k == GS_KIND_FLOAT ? gs_enc_f64(bits) : bits;
    return descending ? ~e : e;
}

uint64_t gs_key64_decode(gs_dtype t, int descending, uint64_t enc)
{
    unsigned k = gs_keys_kind(t);
    uint64_t e = descending ? ~enc : enc;
    return k == GS_KIND_SIGNED ? e ^ GS_F64_SIGN : k == GS_KIND_FLOAT ? gs_dec_f64(e) : e;
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
        GS_KEYS_LOOP(uint32_t, keys, n, x ^ GS_F32_SIGN ^ m32);
        break;
    case GS_DT_CLASS(GS_KIND_FLOAT, 4):
        GS_KEYS_LOOP(uint32_t, keys, n, gs_enc_f32(x) ^ m32);
        break;
    case GS_DT_CLASS(GS_KIND_UNSIGNED, 8):
        if (descending)
            GS_KEYS_LOOP(uint64_t, keys, n, ~x);
        break;
    case GS_DT_CLASS(GS_KIND_SIGNED, 8):
        GS_KEYS_LOOP(uint64_t, keys, n, x ^ GS_F64_SIGN ^ m64);
        break;
    case GS_DT_CLASS(GS_KIND_FLOAT, 8):
        GS_KEYS_LOOP(uint64_t, keys, n, gs_enc_f64(x) ^ m64);
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
        GS_KEYS_LOOP(uint32_t, keys, n, gs_dec_f32(x ^ m32));
        break;
    case GS_DT_CLASS(GS_KIND_FLOAT, 8):
        GS_KEYS_LOOP(uint64_t, keys, n, gs_dec_f64(x ^ m64));
        break;
    default:
        gs_keys_encode(t, descending, keys, n);
        break;
    }
}
