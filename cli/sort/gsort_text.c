/* The gsort command's text mode (see gsort_text.h): a streaming line
 * reader that parses straight into a chunk list, strict per-type number
 * parsing with messages that name file, line and text, and buffered
 * printing that round-trips floats. */
#include "config.h"
#include "gsort_text.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text forms follow from the key's kind and width (its row in
 * gs_types.c), not from a list of types. */
static int tfloat(gsort_dtype t)
{
    return gsc_type_kind(t) == GS_KIND_FLOAT;
}

/* ---- f16 and bf16: IEEE half (1 sign, 5 exponent, 10 mantissa bits) and
 * bfloat16 (1, 8, 7) ---- */

static void half_fmt(int nw, int *ebits, int *mbits)
{
    *ebits = nw == GS_NW_F16 ? 5 : 8;
    *mbits = nw == GS_NW_F16 ? 10 : 7;
}

/* v rounded to the nearest of type nw (ties to even); *over set when a
 * finite v rounds past the largest finite one (the result is then inf). */
static uint16_t half_from(int nw, double v, int *over)
{
    int eb, mb;
    half_fmt(nw, &eb, &mb);
    const int bias = (1 << (eb - 1)) - 1, emax = (1 << eb) - 1;
    uint32_t sign = signbit(v) ? 1u << 15 : 0;
    *over = 0;
    if (isnan(v))
        return (uint16_t)(sign | (uint32_t)emax << mb | 1u << (mb - 1));
    if (isinf(v))
        return (uint16_t)(sign | (uint32_t)emax << mb);
    double a = fabs(v);
    if (a == 0)
        return (uint16_t)sign;
    int e;
    frexp(a, &e);
    e -= 1;                                     /* a = 1.f * 2^e */
    if (e < 1 - bias) {                         /* subnormal: steps of 2^(1-bias-mb) */
        double q = rint(ldexp(a, mb - (1 - bias)));
        /* q == 2^mb is the smallest normal number: the same bits */
        return (uint16_t)(sign | (uint32_t)q);
    }
    double q = rint(ldexp(a, mb - e));          /* 2^mb .. 2^(mb+1) */
    if (q >= ldexp(1, mb + 1)) {
        q = ldexp(1, mb);
        e++;
    }
    if (e + bias >= emax) {
        *over = 1;
        return (uint16_t)(sign | (uint32_t)emax << mb);
    }
    return (uint16_t)(sign | (uint32_t)(e + bias) << mb | ((uint32_t)q - (1u << mb)));
}

/* The value of bits h of type nw, exactly. */
static double half_to(int nw, uint32_t h)
{
    int eb, mb;
    half_fmt(nw, &eb, &mb);
    const int bias = (1 << (eb - 1)) - 1, emax = (1 << eb) - 1;
    int ex = (int)(h >> mb & (uint32_t)emax);
    uint32_t m = h & ((1u << mb) - 1);
    double v;
    if (ex == emax)
        v = m ? NAN : INFINITY;
    else if (ex == 0)
        v = ldexp((double)m, 1 - bias - mb);
    else
        v = ldexp((double)(m | 1u << mb), ex - bias - mb);
    return h & 0x8000u ? -v : v;
}

/* ---- parsing ---- */

static int parse_int(const char *s, size_t len, gsort_dtype t, void *out, char *why,
                     size_t whylen)
{
    size_t i = 0;
    int neg = 0;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == len) {
        snprintf(why, whylen, "not a decimal integer (%s)", gsc_type_name(t));
        return GS_EINVAL;
    }
    uint64_t mag = 0;
    int over = 0;
    for (; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9) {
            snprintf(why, whylen, "not a decimal integer (%s)", gsc_type_name(t));
            return GS_EINVAL;
        }
        if (mag > (UINT64_MAX - d) / 10)
            over = 1;       /* keep scanning: "1e99999999999999999999" is no integer */
        else
            mag = mag * 10 + d;
    }
    /* The largest magnitude either side, from the key's width and sign. */
    size_t bytes = gsc_type_size(t);
    int sgn = gsc_type_kind(t) == GS_KIND_SIGNED;
    uint64_t pos_max = sgn ? gs_key_max(bytes) >> 1 : gs_key_max(bytes);
    uint64_t neg_max = sgn ? pos_max + 1 : 0;
    if (over || mag > (neg ? neg_max : pos_max)) {
        snprintf(why, whylen, "out of range for %s (%s%" PRIu64 " to %" PRIu64 ")", gsc_type_name(t),
                 sgn ? "-" : "", neg_max, pos_max);
        return GS_EINVAL;
    }
    /* Two's complement in unsigned arithmetic (-2^63 has no positive
     * counterpart), cut to the key's width. */
    uint64_t v = neg ? 0 - mag : mag;
    gs_key_put(out, 0, bytes, v);
    return 0;
}

int gsc_text_parse(char *s, size_t len, gsort_dtype t, void *out, char *why, size_t whylen)
{
    if (!tfloat(t))
        return parse_int(s, len, t, out, why, whylen);
    char save = s[len], *end;
    s[len] = '\0';
    errno = 0;
    int inf, nw = gsc_type_narrow(t), over = 0;
    if (nw) {
        double v = strtod(s, &end);
        inf = isinf(v);
        uint16_t h = half_from(nw, v, &over);
        memcpy(out, &h, 2);
    } else if (gsc_type_size(t) == 4) {
        float v = strtof(s, &end);
        inf = isinf(v);
        *(float *)out = v;
    } else {
        double v = strtod(s, &end);
        inf = isinf(v);
        *(double *)out = v;
    }
    int e = errno;
    s[len] = save;
    /* A NUL byte inside the token ends strtod early: end falls short. */
    if (end != s + len) {
        snprintf(why, whylen, "not a number (%s)", gsc_type_name(t));
        return GS_EINVAL;
    }
    /* Underflow (ERANGE with a tiny result) rounds like any other decimal;
     * overflow to infinity from a finite literal is an error. */
    if ((e == ERANGE && inf) || over) {
        snprintf(why, whylen, "out of range for %s (largest finite %s)", gsc_type_name(t),
                 nw == GS_NW_F16 ? "65504" : nw == GS_NW_BF16 ? "3.389531e+38"
                 : gsc_type_size(t) == 4 ? "3.40282347e+38" : "1.7976931348623157e+308");
        return GS_EINVAL;
    }
    return 0;
}

/* 'TEXT' for a message: at most 40 bytes, control and non-ASCII bytes as
 * \xHH so a binary file fed in text mode gives a readable message. */
static void quote(const char *s, size_t len, char *buf, size_t cap)
{
    size_t o = 0, shown = len > 40 ? 40 : len;
    buf[o++] = '\'';
    for (size_t i = 0; i < shown && o + 8 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            buf[o++] = (char)ch;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
    }
    buf[o++] = '\'';
    if (shown < len && o + 4 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

typedef struct text_ctx {
    gsort_dtype t;
    size_t esize;
    int hint_f64;
    gsc_chunks ch;
    const char *display;
    uint64_t lineno;
} text_ctx;

static int text_line(text_ctx *x, char *p, size_t l, gs_err *err)
{
    while (l > 0 && is_blank(p[l - 1]))
        l--;
    while (l > 0 && is_blank(*p)) {
        p++;
        l--;
    }
    if (l == 0)
        return 0;
    size_t avail;
    void *room = gsc_chunks_room(&x->ch, x->esize, &avail, err);
    if (!room)
        return GS_ENOMEM;
    char why[160];
    if (gsc_text_parse(p, l, x->t, room, why, sizeof why) < 0) {
        char q[200];
        quote(p, l, q, sizeof q);
        double d;
        char dummy[8];
        if (x->hint_f64 && gsc_text_parse(p, l, GSORT_F64, &d, dummy, sizeof dummy) == 0)
            return gs_err_set(err, GS_EINVAL, "%s:%" PRIu64 ": %s: %s; for non-integers "
                              "give -t f64", x->display, x->lineno, q, why);
        return gs_err_set(err, GS_EINVAL, "%s:%" PRIu64 ": %s: %s", x->display, x->lineno, q,
                          why);
    }
    gsc_chunks_commit(&x->ch, x->esize);
    return 0;
}

static int text_file(text_ctx *x, gsc_input *in, char *buf, gs_err *err)
{
    size_t len = 0;
    x->lineno = 0;
    x->display = in->display;
    for (;;) {
        long r = gsc_input_read(in, buf + len, GSC_TEXT_LINE_MAX - len, err);
        if (r < 0)
            return (int)r;
        len += (size_t)r;
        char *p = buf, *end = buf + len, *nl;
        while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            x->lineno++;
            int rc = text_line(x, p, (size_t)(nl - p), err);
            if (rc < 0)
                return rc;
            p = nl + 1;
        }
        size_t rest = (size_t)(end - p);
        if (r == 0) {
            if (rest == 0)
                return 0;
            x->lineno++;    /* a last line without its newline */
            return text_line(x, p, rest, err);
        }
        if (rest == GSC_TEXT_LINE_MAX)
            return gs_err_set(err, GS_EINVAL, "%s:%" PRIu64 ": line longer than %u bytes",
                              in->display, x->lineno + 1, GSC_TEXT_LINE_MAX);
        memmove(buf, p, rest);
        len = rest;
    }
}

int gsc_text_read(const char *const *paths, size_t npaths, gsort_dtype t, int hint_f64,
                  gsc_extra_fn extra, int want_shared, gsc_buf *out, size_t *count,
                  gs_err *err)
{
    /* +1: the byte after a token at the very end is borrowed for a NUL. */
    char *buf = malloc(GSC_TEXT_LINE_MAX + 1);
    if (!buf)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    text_ctx x = { .t = t, .esize = gsc_type_size(t), .hint_f64 = hint_f64 };
    gsc_chunks_init(&x.ch);
    int rc = 0;
    for (size_t i = 0; i < npaths && rc == 0; i++) {
        gsc_input in;
        if ((rc = gsc_input_open(&in, paths[i], err)) < 0)
            break;
        rc = text_file(&x, &in, buf, err);
        gsc_input_close(&in);
    }
    free(buf);
    if (rc < 0) {
        gsc_chunks_free(&x.ch);
        return rc;
    }
    size_t n = x.ch.total / x.esize;
    if ((rc = gsc_chunks_gather(&x.ch, extra ? extra(n) : 0, want_shared, out, err)) < 0)
        return rc;
    *count = n;
    return 0;
}

/* ---- printing ---- */

static size_t fmt_u64(uint64_t v, char *buf)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

size_t gsc_text_format(gsort_dtype t, const void *v, char *buf)
{
    const enum gs_dtype_kind kind = gsc_type_kind(t);
    const size_t bytes = gsc_type_size(t);
    int n, nw = gsc_type_narrow(t);
    if (kind != GS_KIND_FLOAT) {
        /* integers of any width: the word, or for a negative signed one
         * a minus and its two's-complement magnitude */
        uint64_t w = gs_key_get(v, 0, bytes), sign = UINT64_C(1) << (8 * bytes - 1);
        if (kind == GS_KIND_UNSIGNED || !(w & sign))
            return fmt_u64(w, buf);
        buf[0] = '-';
        return 1 + fmt_u64((0 - w) & gs_key_max(bytes), buf + 1);
    }
    if (nw) {
        uint16_t h;
        memcpy(&h, v, 2);
        double x = half_to(nw, h);
        if (isnan(x))
            return (size_t)snprintf(buf, 32, "%s", h & 0x8000u ? "-nan" : "nan");
        /* the fewest digits that read back to the same bits (f16: at most 5) */
        for (int p = 1; p <= 17; p++) {
            int over;
            n = snprintf(buf, 32, "%.*g", p, x);
            if (half_from(nw, strtod(buf, NULL), &over) == h)
                break;
        }
        return (size_t)n;
    }
    if (bytes == 4) {
        float f = *(const float *)v;
        /* Six digits read back exactly for most values people type; nine
         * always do (likewise 15 and 17 for doubles). */
        n = snprintf(buf, 32, "%.6g", (double)f);
        if (isfinite(f) && strtof(buf, NULL) != f)
            n = snprintf(buf, 32, "%.9g", (double)f);
        return (size_t)n;
    }
    double x = *(const double *)v;
    n = snprintf(buf, 32, "%.15g", x);
    if (isfinite(x) && strtod(buf, NULL) != x)
        n = snprintf(buf, 32, "%.17g", x);
    return (size_t)n;
}

#define OUTBUF (1u << 20)

typedef struct text_out {
    gsc_output *o;
    char *buf;
    size_t len;
} text_out;

static int out_flush(text_out *w, gs_err *err)
{
    int rc = gsc_output_write(w->o, w->buf, w->len, err);
    w->len = 0;
    return rc;
}

static int write_lines(gsc_output *o, gsort_dtype t, const void *arr, size_t n, int indices,
                       gs_err *err)
{
    text_out w = { .o = o, .buf = malloc(OUTBUF) };
    if (!w.buf)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    size_t es = indices ? 8 : gsc_type_size(t);
    const unsigned char *p = arr;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (w.len > OUTBUF - 64)
            rc = out_flush(&w, err);
        size_t k = indices ? fmt_u64(((const uint64_t *)arr)[i], w.buf + w.len)
                           : gsc_text_format(t, p + i * es, w.buf + w.len);
        w.len += k;
        w.buf[w.len++] = '\n';
    }
    if (rc == 0 && w.len)
        rc = out_flush(&w, err);
    free(w.buf);
    return rc;
}

int gsc_text_write_keys(gsc_output *o, gsort_dtype t, const void *keys, size_t n, gs_err *err)
{
    return write_lines(o, t, keys, n, 0, err);
}

int gsc_text_write_indices(gsc_output *o, const uint64_t *idx, size_t n, gs_err *err)
{
    return write_lines(o, GSORT_U64, idx, n, 1, err);
}
