/* The gsort command's text mode: numbers one per line in, one per line
 * out. Parsing is strict (decimal integers range-checked per type, floats
 * as strtod(3) reads them in the C locale, nothing else on the line but
 * blanks; f16 and bf16 read as a double and rounded to nearest even) and
 * every error names the file, the line and the text. Floats are printed
 * so that reading them back gives the same value. */
#ifndef GSORT_TEXT_H
#define GSORT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "gs_err.h"
#include "gsort.h"
#include "gsort_io.h"
#include "gs_narrow.h"
#include "gs_types.h"

/* Longest line accepted (a number with its blanks). */
#define GSC_TEXT_LINE_MAX (1u << 20)

/* A gsort_dtype's name, key size and kind, from its row in
 * lib/base/gs_types.c (the six wide types: gsort_dtype and gs_dtype are
 * the same numbers there) or lib/base/gs_narrow.c (GSORT_U8 .. GSORT_BF16,
 * in gs_narrow_dt's order from GS_NW_U8). */
_Static_assert((int)GSORT_U32 == GS_DT_U32 && (int)GSORT_F64 == GS_DT_F64 &&
               (int)GSORT_U8 == GS_DT_COUNT && GSORT_BF16 - GSORT_U8 == GS_NW_BF16 - GS_NW_U8,
               "gsort_dtype's numbers moved");
#define GSC_TYPES ((int)GSORT_BF16 + 1)

/* The gs_narrow_dt of t, GS_NW_NONE for a 4- or 8-byte type. */
static inline int gsc_type_narrow(gsort_dtype t)
{
    return t >= GSORT_U8 && t <= GSORT_BF16 ? GS_NW_U8 + (int)(t - GSORT_U8) : GS_NW_NONE;
}

static inline const char *gsc_type_name(gsort_dtype t)
{
    int nw = gsc_type_narrow(t);
    return nw ? gs_narrow_row(nw)->name : gs_dtype_name((gs_dtype)t);
}

static inline const char *gsc_type_np_name(gsort_dtype t)
{
    int nw = gsc_type_narrow(t);
    return nw ? gs_narrow_row(nw)->np_name : gs_dtype_row((gs_dtype)t)->np_name;
}

static inline size_t gsc_type_size(gsort_dtype t)
{
    int nw = gsc_type_narrow(t);
    return nw ? gs_narrow_row(nw)->bytes : gs_dtype_size((gs_dtype)t);
}

static inline enum gs_dtype_kind gsc_type_kind(gsort_dtype t)
{
    int nw = gsc_type_narrow(t);
    return nw ? gs_narrow_row(nw)->kind : gs_dtype_row((gs_dtype)t)->kind;
}

/* Parse one token (no surrounding blanks, len > 0) of type t into out.
 * s[len] must be writable (it is borrowed for a terminator and restored).
 * Returns 0, or GS_EINVAL with the reason (no file or line) in why. */
int gsc_text_parse(char *s, size_t len, gsort_dtype t, void *out, char *why, size_t whylen);

/* Read every input (npaths >= 1; "-" is standard input) as text, one
 * number of type t a line; blank lines (nothing but spaces, tabs and a CR)
 * are skipped. The numbers go into one array `out` followed by extra(count)
 * spare bytes. A bad line is GS_EINVAL: "FILE:LINE: 'TEXT': reason".
 * hint_f64 adds a hint to use -t f64 when a line that is no integer is a
 * float. */
int gsc_text_read(const char *const *paths, size_t npaths, gsort_dtype t, int hint_f64,
                  gsc_extra_fn extra, int want_shared, gsc_buf *out, size_t *count,
                  gs_err *err);

/* Format one value of type t (decimal integer; the shortest of %.6g/%.9g
 * for f32 and %.15g/%.17g for f64 that reads back the same; for f16 and
 * bf16 the shortest %g that reads back to the same bits; NaNs "nan" or
 * "-nan") into buf
 * (at least 32 bytes), without a newline; returns its length. */
size_t gsc_text_format(gsort_dtype t, const void *v, char *buf);

/* Write n keys of type t, or n u64 indices, one per line. */
int gsc_text_write_keys(gsc_output *o, gsort_dtype t, const void *keys, size_t n, gs_err *err);
int gsc_text_write_indices(gsc_output *o, const uint64_t *idx, size_t n, gs_err *err);

#endif
