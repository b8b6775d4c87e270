/* Key dtypes, payload kinds and parameter sets: names, sizes, parsing and
 * the "name=value,..." text form (see gs_types.h). */
#include "config.h"
#include "gs_types.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes and payloads ---- */

static const gs_dtype_info dtypes[GS_DT_COUNT] = {
    [GS_DT_U32] = { "u32", "uint32", 4, GS_KIND_UNSIGNED },
    [GS_DT_I32] = { "i32", "int32", 4, GS_KIND_SIGNED },
    [GS_DT_F32] = { "f32", "float32", 4, GS_KIND_FLOAT },
    [GS_DT_U64] = { "u64", "uint64", 8, GS_KIND_UNSIGNED },
    [GS_DT_I64] = { "i64", "int64", 8, GS_KIND_SIGNED },
    [GS_DT_F64] = { "f64", "float64", 8, GS_KIND_FLOAT },
};
static const char *const payload_names[GS_PL_COUNT] = {
    "none", "u32", "u64", "idx32", "idx64"
};

const gs_dtype_info *gs_dtype_row(gs_dtype t)
{
    return (int)t >= 0 && t < GS_DT_COUNT ? &dtypes[t] : NULL;
}

unsigned gs_dtype_class(gs_dtype t)
{
    const gs_dtype_info *d = gs_dtype_row(t);
    return d ? GS_DT_CLASS(d->kind, d->bytes) : 0;
}

size_t gs_dtype_size(gs_dtype t)
{
    const gs_dtype_info *d = gs_dtype_row(t);
    return d ? d->bytes : 0;
}

unsigned gs_shape_bit_width(const gs_shape *s)
{
    return s->end_bit ? s->end_bit - s->begin_bit : (unsigned)gs_shape_key_bytes(s) * 8;
}

size_t gs_shape_key_bytes(const gs_shape *s)
{
    return s->narrow ? 2 : gs_dtype_size(s->dtype);
}

/* ---- key widths ---- */

static const int kw_bits[GS_KW_COUNT] = { [GS_KW_32] = 32, [GS_KW_64] = 64, [GS_KW_16] = 16 };

int gs_kw_bits(int kw)
{
    return kw >= 0 && kw < GS_KW_COUNT ? kw_bits[kw] : 0;
}

int gs_kw_find(int key_bits)
{
    for (int i = 0; i < GS_KW_COUNT; i++)
        if (kw_bits[i] == key_bits)
            return i;
    return -1;
}

/* beside the table it names (tests/lib/base/test_types checks each width is in it) */
const char *gs_kw_list(void) { return "16, 32 or 64"; }

const char *gs_kw_name(int key_bits)
{
    return key_bits == 16 ? "u16" : gs_dtype_name(gs_dtype_unsigned(key_bits));
}

gs_dtype gs_dtype_unsigned(int key_bits)
{
    gs_dtype best = GS_DT_COUNT;
    for (int t = 0; t < GS_DT_COUNT; t++) {
        if (dtypes[t].kind != GS_KIND_UNSIGNED)
            continue;
        if ((int)dtypes[t].bytes * 8 == key_bits)
            return (gs_dtype)t;
        if (best == GS_DT_COUNT || dtypes[t].bytes < dtypes[best].bytes)
            best = (gs_dtype)t;
    }
    return best;
}


const char *gs_dtype_name(gs_dtype t)
{
    const gs_dtype_info *d = gs_dtype_row(t);
    return d ? d->name : "?";
}

int gs_dtype_parse(const char *s, gs_dtype *out)
{
    for (int i = 0; s && i < GS_DT_COUNT; i++)
        if (!strcmp(s, dtypes[i].name)) {
            *out = (gs_dtype)i;
            return 0;
        }
    return GS_EINVAL;
}

size_t gs_payload_size(gs_payload p)
{
    switch (p) {
    case GS_PL_NONE: return 0;
    case GS_PL_U32: case GS_PL_IDX32: return 4;
    case GS_PL_U64: case GS_PL_IDX64: return 8;
    default: return 0;
    }
}

const char *gs_payload_name(gs_payload p)
{
    return (int)p >= 0 && p < GS_PL_COUNT ? payload_names[p] : "?";
}

int gs_payload_parse(const char *s, gs_payload *out)
{
    for (int i = 0; s && i < GS_PL_COUNT; i++)
        if (!strcmp(s, payload_names[i])) {
            *out = (gs_payload)i;
            return 0;
        }
    return GS_EINVAL;
}

/* ---- parameter sets ---- */

void gs_params_clear(gs_params *ps)
{
    memset(ps, 0, sizeof *ps);
}

static int param_name_ok(const char *s, size_t len)
{
    if (len == 0 || len >= GS_PARAM_NAME_MAX)
        return 0;
    if (!isalpha((unsigned char)s[0]) && s[0] != '_')
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return 0;
    return 1;
}

static int param_find(const gs_params *ps, const char *name)
{
    for (int i = 0; i < ps->count; i++)
        if (!strcmp(ps->p[i].name, name))
            return i;
    return -1;
}

int gs_params_set(gs_params *ps, const char *name, long value)
{
    if (!name || !param_name_ok(name, strlen(name)))
        return GS_EINVAL;
    int i = param_find(ps, name);
    if (i < 0) {
        if (ps->count >= GS_MAX_PARAMS)
            return GS_ETOOBIG;
        i = ps->count++;
        strcpy(ps->p[i].name, name);
    }
    ps->p[i].value = value;
    return 0;
}

int gs_params_has(const gs_params *ps, const char *name)
{
    return ps && name && param_find(ps, name) >= 0;
}

long gs_params_get(const gs_params *ps, const char *name, long dflt)
{
    int i = ps && name ? param_find(ps, name) : -1;
    return i < 0 ? dflt : ps->p[i].value;
}

int gs_params_format(const gs_params *ps, char *buf, size_t len)
{
    if (!buf || !len)
        return GS_ETOOBIG;
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; ps && i < ps->count; i++) {
        int w = snprintf(buf + off, len - off, "%s%s=%ld", i ? "," : "",
                         ps->p[i].name, ps->p[i].value);
        if (w < 0 || (size_t)w >= len - off) {
            buf[off] = '\0';    /* whole items only */
            return GS_ETOOBIG;
        }
        off += (size_t)w;
    }
    return 0;
}

int gs_params_parse(const char *s, gs_params *ps, gs_err *err)
{
    gs_params tmp;
    gs_params_clear(&tmp);
    if (!s)
        return gs_err_set(err, GS_EINVAL, "parameters: NULL text");
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    if (*p) {
        for (;;) {
            while (isspace((unsigned char)*p))
                p++;
            const char *name = p;
            while (*p && *p != '=' && *p != ',' && !isspace((unsigned char)*p))
                p++;
            size_t nlen = (size_t)(p - name);
            while (isspace((unsigned char)*p))
                p++;
            size_t at = (size_t)(name - s);
            if (nlen == 0)
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": %s at offset %zu",
                                  s, *p == '=' ? "missing name" : "empty item", at);
            if (*p != '=')
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": '%.*s' at offset "
                                  "%zu has no '=value'", s, (int)nlen, name, at);
            if (!param_name_ok(name, nlen))
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": bad name '%.*s' "
                                  "(letters, digits, '_', at most %d chars, not "
                                  "starting with a digit)", s, (int)nlen, name,
                                  GS_PARAM_NAME_MAX - 1);
            char nbuf[GS_PARAM_NAME_MAX];
            memcpy(nbuf, name, nlen);
            nbuf[nlen] = '\0';
            p++;    /* '=' */
            while (isspace((unsigned char)*p))
                p++;
            const char *val = p;
            char *end = (char *)p;
            long v = 0;
            errno = 0;
            if (*p == '+' || *p == '-' || isdigit((unsigned char)*p))
                v = strtol(p, &end, 10);
            if (end == val || !isdigit((unsigned char)end[-1]))
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": %s needs a decimal "
                                  "integer value at offset %zu", s, nbuf,
                                  (size_t)(val - s));
            if (errno == ERANGE)
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": value of %s out "
                                  "of range", s, nbuf);
            p = end;
            while (isspace((unsigned char)*p))
                p++;
            if (*p && *p != ',')
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": unexpected '%c' "
                                  "after the value of %s at offset %zu", s, *p, nbuf,
                                  (size_t)(p - s));
            if (param_find(&tmp, nbuf) >= 0)
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": %s given twice",
                                  s, nbuf);
            if (gs_params_set(&tmp, nbuf, v) < 0)
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": more than %d "
                                  "parameters", s, GS_MAX_PARAMS);
            if (!*p)
                break;
            p++;    /* ',' */
            while (isspace((unsigned char)*p))
                p++;
            if (!*p)
                return gs_err_set(err, GS_EINVAL, "parameters \"%s\": trailing ','", s);
        }
    }
    *ps = tmp;
    return 0;
}
