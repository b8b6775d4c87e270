/* Exact JSON integers (gs_jnum.h): finding a number item's token in the
 * text it was parsed from, reading the token's exact value (sign and
 * magnitude, whatever notation: 1e3, 2.0, -0), writing integers as raw
 * digits, and quoting values for messages. */
#include "config.h"
#include "gs_jnum.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gs_jnum_clip(const char *s, char buf[48])
{
    size_t i = 0;
    for (; s && s[i] && i < 40; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (s && s[i])
        buf[i - 1] = buf[i - 2] = buf[i - 3] = '.';
    buf[i] = '\0';
    return buf;
}

const char *gs_jnum_clip_json(const cJSON *v, char buf[48])
{
    char *t = cJSON_PrintUnformatted(v);
    gs_jnum_clip(t ? t : "?", buf);
    free(t);
    return buf;
}

/* Count the numbers before `target` in document order (pre-order). */
static int num_index(const cJSON *it, const cJSON *target, size_t *k)
{
    for (; it; it = it->next) {
        if (it == target)
            return 1;
        if (cJSON_IsNumber(it))
            (*k)++;
        if (it->child && num_index(it->child, target, k))
            return 1;
    }
    return 0;
}

static int num_char(char ch)
{
    return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' ||
           ch == 'E';
}

/* The text of number item `v`: 0, or -1 when it cannot be found. In text
 * cJSON accepted, outside strings a number is the only thing that starts
 * with '-' or a digit. */
static int num_token(const gs_jnum_doc *doc, const cJSON *v, const char **tok, size_t *tlen)
{
    size_t k = 0;
    if (!doc || !doc->text || !doc->root || !cJSON_IsNumber(v) ||
        !(v == doc->root || num_index(doc->root->child, v, &k)))
        return -1;
    const char *p = doc->text, *end = doc->text + doc->len;
    while (p < end) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
            p++;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            const char *t = p;
            while (p < end && num_char(*p))
                p++;
            if (k-- == 0) {
                *tok = t;
                *tlen = (size_t)(p - t);
                return 0;
            }
        } else {
            p++;
        }
    }
    return -1;
}

/* The exact value of a number token, -?D*[.D*][(e|E)[+-]D+] (what cJSON
 * accepts): GS_JNUM_OK with the sign and magnitude; GS_JNUM_FRAC when it
 * is not an integer (1.5, 1e-3); GS_JNUM_RANGE when its magnitude exceeds
 * 2^64 - 1; GS_JNUM_NAN when it is not such a token. */
static int token_int(const char *t, size_t n, int *neg, uint64_t *mag)
{
    size_t i = 0, nd = 0, nz = 0, digits = 0;   /* significant digits; zeros after the last */
    long frac = 0, exp = 0;
    int dot = 0;
    *neg = n > 0 && t[0] == '-';
    *mag = 0;
    i += (size_t)*neg;
    size_t m0 = i;
    for (; i < n && ((t[i] >= '0' && t[i] <= '9') || (t[i] == '.' && !dot)); i++) {
        if (t[i] == '.') {
            dot = 1;
            continue;
        }
        digits++;
        frac += dot;
        if (t[i] != '0') {
            nd += nz + 1;
            nz = 0;
        } else if (nd) {
            nz++;
        }
    }
    size_t m1 = i;
    if (!digits)
        return GS_JNUM_NAN;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        int eneg = 0, edig = 0;
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            eneg = t[i++] == '-';
        for (; i < n && t[i] >= '0' && t[i] <= '9'; i++, edig++)
            if (exp < 100000)
                exp = exp * 10 + (t[i] - '0');
        if (!edig)
            return GS_JNUM_NAN;
        if (eneg)
            exp = -exp;
    }
    if (i != n)
        return GS_JNUM_NAN;
    if (nd == 0)
        return GS_JNUM_OK;   /* zero, however written (-0, 0.000, 0e99) */
    /* value = (the nd significant digits) * 10^e10 */
    long e10 = exp - frac + (long)nz;
    if (e10 < 0)
        return GS_JNUM_FRAC;   /* the last non-zero digit is after the point */
    if ((long)nd + e10 > 20)
        return GS_JNUM_RANGE;
    uint64_t m = 0;
    size_t taken = 0;
    for (size_t j = m0; j < m1 && taken < nd; j++) {
        if (t[j] == '.' || (taken == 0 && t[j] == '0'))
            continue;
        if (__builtin_mul_overflow(m, 10, &m) ||
            __builtin_add_overflow(m, (uint64_t)(t[j] - '0'), &m))
            return GS_JNUM_RANGE;
        taken++;
    }
    for (long j = 0; j < e10; j++)
        if (__builtin_mul_overflow(m, 10, &m))
            return GS_JNUM_RANGE;
    *mag = m;
    return GS_JNUM_OK;
}

/* Without the text: the double, exact up to 2^53. */
static int double_int(const cJSON *v, int *neg, uint64_t *mag)
{
    *neg = 0;
    *mag = 0;
    if (!cJSON_IsNumber(v))
        return GS_JNUM_NAN;
    double d = v->valuedouble;
    if (!isfinite(d) || fabs(d) >= 18446744073709551616.0)
        return isnan(d) ? GS_JNUM_NAN : GS_JNUM_RANGE;
    if (d != floor(d))
        return GS_JNUM_FRAC;
    *neg = d < 0;
    *mag = (uint64_t)fabs(d);
    return GS_JNUM_OK;
}

int gs_jnum_int(const gs_jnum_doc *doc, const cJSON *v, int *neg, uint64_t *mag)
{
    if (!doc)
        return double_int(v, neg, mag);
    const char *t;
    size_t n;
    *neg = 0;
    *mag = 0;
    if (num_token(doc, v, &t, &n) < 0)
        return GS_JNUM_NAN;
    return token_int(t, n, neg, mag);
}

int gs_jnum_u64(const gs_jnum_doc *doc, const cJSON *v, uint64_t max, uint64_t *out)
{
    int neg;
    uint64_t m;
    int rc = gs_jnum_int(doc, v, &neg, &m);
    if (rc != GS_JNUM_OK)
        return rc;
    if ((neg && m) || m > max)
        return GS_JNUM_RANGE;
    *out = m;
    return GS_JNUM_OK;
}

int gs_jnum_long(const gs_jnum_doc *doc, const cJSON *v, long *out)
{
    int neg;
    uint64_t m;
    int rc = gs_jnum_int(doc, v, &neg, &m);
    if (rc != GS_JNUM_OK)
        return rc;
    if (neg ? m > (uint64_t)LONG_MAX + 1 : m > (uint64_t)LONG_MAX)
        return GS_JNUM_RANGE;
    *out = neg ? (m == (uint64_t)LONG_MAX + 1 ? LONG_MIN : -(long)m) : (long)m;
    return GS_JNUM_OK;
}

static int add_int(cJSON *obj, const char *name, int neg, uint64_t mag)
{
    char t[32];
    snprintf(t, sizeof t, "%s%llu", neg ? "-" : "", (unsigned long long)mag);
    return cJSON_AddRawToObject(obj, name, t) != NULL;
}

int gs_jnum_add_u64(cJSON *obj, const char *name, uint64_t x)
{
    return add_int(obj, name, 0, x);
}

int gs_jnum_add_long(cJSON *obj, const char *name, long x)
{
    return add_int(obj, name, x < 0, x < 0 ? -(uint64_t)x : (uint64_t)x);
}

int gs_jnum_add_ms(cJSON *obj, const char *name, double ms)
{
    if (!(ms > -1e12 && ms < 1e12))     /* NaN, or years: cJSON's way */
        return cJSON_AddNumberToObject(obj, name, ms) != NULL;
    int neg = ms < 0;
    uint64_t ns = (uint64_t)((neg ? -ms : ms) * 1e6 + 0.5);
    uint64_t whole = ns / 1000000;
    unsigned frac = (unsigned)(ns % 1000000);
    char t[48], *p = t + sizeof t;
    *--p = '\0';
    int digits = 6;
    while (digits && frac % 10 == 0) {   /* drop trailing zeros */
        frac /= 10;
        digits--;
    }
    if (digits) {
        for (int i = 0; i < digits; i++, frac /= 10)
            *--p = (char)('0' + frac % 10);
        *--p = '.';
    }
    do {
        *--p = (char)('0' + whole % 10);
        whole /= 10;
    } while (whole);
    if (neg && (p[0] != '0' || p[1]))
        *--p = '-';
    return cJSON_AddRawToObject(obj, name, p) != NULL;
}

const char *gs_jnum_quote(const gs_jnum_doc *doc, const cJSON *v, char buf[48])
{
    const char *t;
    size_t n;
    if (num_token(doc, v, &t, &n) == 0) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(n < 63 ? n : 63), t);
        return gs_jnum_clip(tmp, buf);
    }
    return gs_jnum_clip_json(v, buf);
}
