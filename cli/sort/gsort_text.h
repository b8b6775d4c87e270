/* The gsort command's text mode: numbers one per line in, one per line
 * out. Parsing is strict (decimal integers range-checked per type, floats
 * as strtod(3) reads them in the C locale, nothing else on the line but
 * blanks) and every error names the file, the line and the text. Floats
 * are printed so that reading them back gives the same value. */
#ifndef GSORT_TEXT_H
#define GSORT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "gs_err.h"
#include "gsort.h"
#include "gsort_io.h"
#include "gs_types.h"

/* Longest line accepted (a number with its blanks). */
#define GSC_TEXT_LINE_MAX (1u << 20)

/* A gsort_dtype's name and key size, from its row in lib/base/gs_types.c
 * (gsort_dtype and gs_dtype are the same numbers: libgsort/gsort.c
 * asserts it). */
static inline const char *gsc_type_name(gsort_dtype t)
{
    return gs_dtype_name((gs_dtype)t);
}

static inline size_t gsc_type_size(gsort_dtype t)
{
    return gs_dtype_size((gs_dtype)t);
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
 * for f32 and %.15g/%.17g for f64 that reads back the same) into buf
 * (at least 32 bytes), without a newline; returns its length. */
size_t gsc_text_format(gsort_dtype t, const void *v, char *buf);

/* Write n keys of type t, or n u64 indices, one per line. */
int gsc_text_write_keys(gsc_output *o, gsort_dtype t, const void *keys, size_t n, gs_err *err);
int gsc_text_write_indices(gsc_output *o, const uint64_t *idx, size_t n, gs_err *err);

#endif
