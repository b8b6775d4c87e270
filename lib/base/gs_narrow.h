/* 8- and 16-bit keys (issue 39): u8, i8, u16, i16, f16 (IEEE half) and
 * bf16 (bfloat16, raw 2-byte words), the narrow key types a sort request
 * may name besides the 4- and 8-byte ones of gs_types.h. The algorithms
 * never see them: the daemon encodes each key into a u32 word whose plain
 * order is the key order (gs_narrow_enc), sorts the words with the
 * request's payload like any u32 request, and decodes the words back into
 * the client's keys (lib/sort/gs_narrow_sort.h). An algorithm that sorts
 * 16-bit keys itself (radix on a device: gs_shape.narrow) takes 16-bit keys
 * as they are and 8-bit ones as 16-bit codes. The order is a sort's,
 * not a lexsort's: -0.0 before +0.0, every NaN one key after +inf (their
 * bit patterns kept by the run), descending the exact reverse. A radix
 * sort skips the word's constant high digits, so 16-bit keys take two
 * 8-bit passes. */
#ifndef GS_NARROW_H
#define GS_NARROW_H

#include <stdint.h>

#include "gs_types.h"

typedef enum gs_narrow_dt {
    GS_NW_NONE = 0,     /* not a narrow key: shape.dtype says */
    GS_NW_U8, GS_NW_I8, GS_NW_U16, GS_NW_I16, GS_NW_F16, GS_NW_BF16,
    GS_NW_COUNT
} gs_narrow_dt;

typedef struct gs_narrow_info {
    const char *name;           /* "f16": the protocol's word */
    const char *np_name;        /* "float16" (bf16: "bfloat16", ml_dtypes' name) */
    unsigned bytes;             /* 1 or 2 */
    enum gs_dtype_kind kind;
} gs_narrow_info;

/* The row of t, or NULL for GS_NW_NONE and values outside the enum. */
const gs_narrow_info *gs_narrow_row(int t);
/* The narrow type named s (a protocol word or numpy's name), or GS_NW_NONE. */
int gs_narrow_find(const char *s);
/* "u8, i8, u16, i16, f16, bf16" for messages (a static string). */
const char *gs_narrow_list(void);

/* The code of key bits `raw` of type t: a number below 2^(8 * bytes) whose
 * plain order is the key order (desc: reversed). Floats: -0.0 below +0.0,
 * every NaN the all-ones code. Inline: the encoding loop runs it per key. */
static inline uint32_t gs_narrow_enc(int t, int desc, uint32_t raw)
{
    uint32_t top = t == GS_NW_U8 || t == GS_NW_I8 ? 0xffu : 0xffffu, c;
    raw &= top;
    switch (t) {
    case GS_NW_I8: c = raw ^ 0x80u; break;
    case GS_NW_I16: c = raw ^ 0x8000u; break;
    case GS_NW_F16: case GS_NW_BF16: {
        /* without branches: random signs would mispredict half the time */
        uint32_t inf = t == GS_NW_F16 ? 0x7c00u : 0x7f80u;
        uint32_t neg = 0u - (raw >> 15);                /* all ones when negative */
        c = raw ^ ((neg & 0xffffu) | 0x8000u);
        c = (raw & 0x7fffu) > inf ? 0xffffu : c;
        break;
    }
    default: c = raw; break;
    }
    return desc ? top - c : c;
}

/* The key bits of code c (gs_narrow_enc's inverse; the NaN code gives the
 * canonical NaN: f16 0x7e00, bf16 0x7fc0). */
static inline uint32_t gs_narrow_dec(int t, int desc, uint32_t c)
{
    uint32_t top = t == GS_NW_U8 || t == GS_NW_I8 ? 0xffu : 0xffffu;
    c &= top;
    if (desc)
        c = top - c;
    switch (t) {
    case GS_NW_I8: return c ^ 0x80u;
    case GS_NW_I16: return c ^ 0x8000u;
    case GS_NW_F16: case GS_NW_BF16:
        if (c == 0xffffu)
            return t == GS_NW_F16 ? 0x7e00u : 0x7fc0u;
        return c & 0x8000u ? c & 0x7fffu : ~c & 0xffffu;
    default: return c;
    }
}

/* Whether key bits raw of type t are a NaN. */
static inline int gs_narrow_is_nan(int t, uint32_t raw)
{
    if (t == GS_NW_F16)
        return (raw & 0x7fffu) > 0x7c00u;
    if (t == GS_NW_BF16)
        return (raw & 0x7fffu) > 0x7f80u;
    return 0;
}

#endif
