/* Order-preserving key encoding shared by every algorithm. A key of any
 * dtype maps to an unsigned integer of the same width whose plain unsigned
 * ascending order is the requested order:
 *   - u32/u64: identity; i32/i64: flip the sign bit;
 *   - f32/f64: total order -inf < ... < -0.0 < +0.0 < ... < +inf < NaN;
 *     every NaN (any sign or payload) encodes to the one top value, so NaNs
 *     compare equal and a stable sort keeps them in input order (as numpy);
 *     decoding gives the canonical quiet NaN (0x7fc00000 / 0x7ff8...);
 *   - descending: the bitwise complement of the ascending encoding, which
 *     keeps equal keys in input order.
 * Because NaN payloads are lost by encoding, gs_keys_nan_save records the
 * exact NaN bit patterns with the payload element beside each (only when
 * some NaN is not canonical) and gs_keys_nan_restore writes both back into
 * the sorted NaN block in input order, so every (key bits, value) pair
 * survives whatever order the algorithm left among the NaNs; stable device
 * algorithms do the same on the device for large arrays (gs_clnan.h). The
 * same formulas exist in OpenCL C in kernels/keys.cl. */
#ifndef GS_KEYS_H
#define GS_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "gs_types.h"

#define GS_F32_CANON_NAN UINT32_C(0x7fc00000)
#define GS_F64_CANON_NAN UINT64_C(0x7ff8000000000000)

#define GS_F32_SIGN UINT32_C(0x80000000)
#define GS_F32_ABS UINT32_C(0x7fffffff)
#define GS_F32_INF UINT32_C(0x7f800000)
#define GS_F64_SIGN UINT64_C(0x8000000000000000)
#define GS_F64_ABS UINT64_C(0x7fffffffffffffff)
#define GS_F64_INF UINT64_C(0x7ff0000000000000)

/* Float encoding, branch-free in shifts, xors and subtractions only (so
 * the 64-bit loops vectorise with plain SSE2, which has no 64-bit compare):
 *   positive: set the sign bit; negative: complement every bit;
 *   NaN (|b| > inf, i.e. inf - |b| wraps): the top value.
 * The largest non-NaN, +inf, encodes below every NaN; decoding anything
 * that decodes to a NaN gives the canonical NaN. Inline, so that array
 * loops (gs_keys.c, lib/algos/host_rows.c) vectorise them. */
static inline uint32_t gs_enc_f32(uint32_t b)
{
    uint32_t neg = 0u - (b >> 31);
    uint32_t nan = 0u - ((GS_F32_INF - (b & GS_F32_ABS)) >> 31);
    return (b ^ (neg | GS_F32_SIGN)) | nan;
}

static inline uint32_t gs_dec_f32(uint32_t e)
{
    uint32_t pos = 0u - (e >> 31);      /* encodings of non-negatives */
    uint32_t b = e ^ (~pos | GS_F32_SIGN);
    uint32_t nan = 0u - ((GS_F32_INF - (b & GS_F32_ABS)) >> 31);
    return (b & ~nan) | (GS_F32_CANON_NAN & nan);
}

static inline uint64_t gs_enc_f64(uint64_t b)
{
    uint64_t neg = 0u - (b >> 63);
    uint64_t nan = 0u - ((GS_F64_INF - (b & GS_F64_ABS)) >> 63);
    return (b ^ (neg | GS_F64_SIGN)) | nan;
}

static inline uint64_t gs_dec_f64(uint64_t e)
{
    uint64_t pos = 0u - (e >> 63);
    uint64_t b = e ^ (~pos | GS_F64_SIGN);
    uint64_t nan = 0u - ((GS_F64_INF - (b & GS_F64_ABS)) >> 63);
    return (b & ~nan) | (GS_F64_CANON_NAN & nan);
}

/* The encoding's key kind (enum gs_dtype_kind, the dtype's row in
 * gs_types.c), as kernels/keys.cl takes it (its `kind` argument, the same
 * GS_KIND_* values there): the device algorithms pass it to their kernels. */
unsigned gs_keys_kind(gs_dtype t);

uint32_t gs_key32_encode(gs_dtype t, int descending, uint32_t bits);
uint32_t gs_key32_decode(gs_dtype t, int descending, uint32_t enc);
uint64_t gs_key64_encode(gs_dtype t, int descending, uint64_t bits);
uint64_t gs_key64_decode(gs_dtype t, int descending, uint64_t enc);
/* Key i of an array of t, encoded (of t's width, in a 64-bit word): two
 * keys compare as their encodings do, whatever the width. Inline, as the
 * width-typed encoders it calls are used by comparators and checks. */
static inline uint64_t gs_key_encoded(gs_dtype t, int descending, const void *keys, size_t i)
{
    size_t ks = gs_dtype_size(t);
    uint64_t bits = gs_key_get(keys, i, ks);
    return ks == 8 ? gs_key64_encode(t, descending, bits)
                   : gs_key32_encode(t, descending, (uint32_t)bits);
}

/* Encode / decode n keys in place (dtype width). */
void gs_keys_encode(gs_dtype t, int descending, void *keys, size_t n);
void gs_keys_decode(gs_dtype t, int descending, void *keys, size_t n);

/* A radix pass over the encodings' bytes: the 256 digit counts c[] into
 * where each digit's keys start (the exclusive prefix sum, in place: c[d]
 * becomes the count of the digits below d). Written once for the host's
 * LSD passes (lib/algos/host_rows.c, algo_host.c's lsd_small: 32-bit
 * counts) and the host select's sort of its k (gs_select.c: counts up to
 * k, which may pass 2^32); inline, so the loop stays in theirs. */
#define GS_DIGIT_STARTS(T, SUF)                                                 \
    static inline void gs_digit_starts_##SUF(T c[256])                          \
    {                                                                           \
        T s = 0;                                                                \
        for (unsigned d = 0; d < 256; d++) {                                    \
            T x = c[d];                                                         \
            c[d] = s;                                                           \
            s += x;                                                             \
        }                                                                       \
    }
GS_DIGIT_STARTS(uint32_t, u32)
GS_DIGIT_STARTS(size_t, sz)
#undef GS_DIGIT_STARTS

typedef struct gs_nan_save {
    size_t count;   /* NaNs in the input (0 if none saved) */
    void *bits;     /* their bit patterns in input order (malloc'ed), NULL if all canonical */
    void *vals;     /* beside them their payload elements: the values (u32/u64), or the
                       input indices (idx32/idx64); NULL for GS_PL_NONE. In bits'
                       allocation: not freed on its own. */
} gs_nan_save;

/* Before a sort of req (a no-op for non-float keys): if any NaN key is not
 * the canonical one, save every NaN's bits and payload element in input
 * order. GS_EINVAL (gs_err_raced) when the keys' NaNs changed between its
 * count and its copy (a client rewriting its shared memory, issue 32). */
int gs_keys_nan_save(const gs_sort_req *req, gs_nan_save *s, gs_err *err);
/* After a sort of req by any algorithm, stable or not: overwrite the NaN
 * block (the last s->count elements ascending, the first descending), keys
 * and payload, with the saved pairs, which is the stable result. */
void gs_keys_nan_restore(const gs_sort_req *req, const gs_nan_save *s);
void gs_keys_nan_free(gs_nan_save *s);
/* The same for a request of equal rows (shape.rows > 1): each row's NaNs
 * go back to its own NaN block, so an algorithm that sorts the rows whole
 * (radix) keeps them where the device does not; a flat request is one
 * save. Nothing is kept where no NaN is non-canonical. On failure what was
 * saved stays for gs_keys_nan_rows_free. */
typedef struct gs_nan_rows {
    size_t n;               /* saves in s: 0, 1 (flat) or the rows */
    gs_nan_save *s;
} gs_nan_rows;
int gs_keys_nan_rows_save(const gs_sort_req *req, gs_nan_rows *h, gs_err *err);
void gs_keys_nan_rows_restore(const gs_sort_req *req, const gs_nan_rows *h);
void gs_keys_nan_rows_free(gs_nan_rows *h);
/* Test hook (issue 32): fn(arg, req) runs between gs_keys_nan_save's
 * counting pass and its copying pass (only when something is saved), where
 * a client that rewrites its shared keys could; NULL turns it off. */
void gs_keys_nan_force_race(void (*fn)(void *arg, const gs_sort_req *req), void *arg);

/* From this many float keys a stable device algorithm that keeps NaN
 * payloads itself (gs_algo.keeps_nan; gs_clnan.h) does so on the device and
 * gs_sort_run skips the host scan: below it a host pass costs less than a
 * kernel launch and a read-back. */
#define GS_NAN_DEVICE_MIN ((size_t)1 << 19)
int gs_keys_nan_on_device(const gs_sort_req *req);
/* Test hook: the size from which NaNs are kept on the device (0: the
 * default, GS_NAN_DEVICE_MIN), so Oclgrind can check those kernels on a
 * few keys. */
void gs_keys_nan_device_min(size_t n);

#endif
