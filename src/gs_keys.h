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
 * exact NaN bit patterns (only when some NaN is not canonical) and
 * gs_keys_nan_restore writes them back into the sorted NaN block in input
 * order. The same formulas exist in OpenCL C in kernels/keys.cl. */
#ifndef GS_KEYS_H
#define GS_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "gs_sort.h"

#define GS_F32_CANON_NAN UINT32_C(0x7fc00000)
#define GS_F64_CANON_NAN UINT64_C(0x7ff8000000000000)

uint32_t gs_key32_encode(gs_dtype t, int descending, uint32_t bits);
uint32_t gs_key32_decode(gs_dtype t, int descending, uint32_t enc);
uint64_t gs_key64_encode(gs_dtype t, int descending, uint64_t bits);
uint64_t gs_key64_decode(gs_dtype t, int descending, uint64_t enc);

/* Encode / decode n keys in place (dtype width). */
void gs_keys_encode(gs_dtype t, int descending, void *keys, size_t n);
void gs_keys_decode(gs_dtype t, int descending, void *keys, size_t n);

typedef struct gs_nan_save {
    size_t count;   /* NaNs in the input (0 if none saved) */
    void *bits;     /* their bit patterns in input order (malloc'ed), NULL if all canonical */
} gs_nan_save;

/* For f32/f64 keys (a no-op for others): if any NaN in keys is not the
 * canonical one, save every NaN's bits in input order. */
int gs_keys_nan_save(gs_dtype t, const void *keys, size_t n, gs_nan_save *s, gs_err *err);
/* After a stable sort: overwrite the NaN block (the last s->count keys
 * ascending, the first descending) with the saved patterns. */
void gs_keys_nan_restore(gs_dtype t, int descending, void *keys, size_t n, const gs_nan_save *s);
void gs_keys_nan_free(gs_nan_save *s);

#endif
