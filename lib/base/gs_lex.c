/* A lexsort request's vocabulary (gs_lex.h): its key types, the layout of
 * its key arrays and the grouping of its keys into composite words. */
#include "config.h"
#include "gs_lex.h"

static const gs_lex_dtinfo lex_rows[GS_LX_COUNT] = {
    [GS_LX_BOOL] = { "bool", 1, 1, GS_KIND_UNSIGNED },
    [GS_LX_U8] = { "u8", 1, 8, GS_KIND_UNSIGNED },
    [GS_LX_I8] = { "i8", 1, 8, GS_KIND_SIGNED },
    [GS_LX_U16] = { "u16", 2, 16, GS_KIND_UNSIGNED },
    [GS_LX_I16] = { "i16", 2, 16, GS_KIND_SIGNED },
    [GS_LX_F16] = { "f16", 2, 16, GS_KIND_FLOAT },
    [GS_LX_U32] = { "u32", 4, 32, GS_KIND_UNSIGNED },
    [GS_LX_I32] = { "i32", 4, 32, GS_KIND_SIGNED },
    [GS_LX_F32] = { "f32", 4, 32, GS_KIND_FLOAT },
    [GS_LX_U64] = { "u64", 8, 64, GS_KIND_UNSIGNED },
    [GS_LX_I64] = { "i64", 8, 64, GS_KIND_SIGNED },
    [GS_LX_F64] = { "f64", 8, 64, GS_KIND_FLOAT },
};

/* numpy's names, in the enum's order */
static const char *const np_names[GS_LX_COUNT] = {
    "bool", "uint8", "int8", "uint16", "int16", "float16",
    "uint32", "int32", "float32", "uint64", "int64", "float64",
};

const gs_lex_dtinfo *gs_lex_dt_row(int t)
{
    return t >= 0 && t < GS_LX_COUNT ? &lex_rows[t] : NULL;
}

int gs_lex_dt_find(const char *s)
{
    for (int t = 0; s && t < GS_LX_COUNT; t++)
        if (!strcmp(s, lex_rows[t].name) || !strcmp(s, np_names[t]))
            return t;
    return -1;
}

const char *gs_lex_dt_list(void)
{
    return "bool, u8, i8, u16, i16, f16, u32, i32, f32, u64, i64, f64";
}

int gs_lex_layout(gs_lex *lx, uint64_t n, uint64_t *bytes, gs_err *err)
{
    uint64_t at = 0;
    for (unsigned j = 0; j < lx->nkeys; j++) {
        const gs_lex_dtinfo *d = gs_lex_dt_row(lx->key[j].dt);
        uint64_t b;
        if (!d)
            return gs_err_set(err, GS_EINVAL, "lexsort: key %u has no type", j);
        lx->key[j].offset = at;
        if (__builtin_mul_overflow(n, (uint64_t)d->bytes, &b) ||
            __builtin_add_overflow(b, (uint64_t)7, &b) ||
            __builtin_add_overflow(at, b & ~(uint64_t)7, &at))
            return gs_err_set(err, GS_ETOOBIG, "lexsort: %llu rows of %u keys overflow "
                              "64 bits", (unsigned long long)n, lx->nkeys);
    }
    *bytes = at;
    return 0;
}

unsigned gs_lex_groups(const gs_lex *lx, unsigned first[GS_LEX_MAX_KEYS],
                       unsigned count[GS_LEX_MAX_KEYS], unsigned bits[GS_LEX_MAX_KEYS])
{
    /* greedy from the primary down, as few groups as the widths allow */
    unsigned f[GS_LEX_MAX_KEYS], c[GS_LEX_MAX_KEYS], b[GS_LEX_MAX_KEYS], ng = 0;
    for (unsigned j = 0; j < lx->nkeys; j++) {
        unsigned w = gs_lex_dt_row(lx->key[j].dt)->bits;
        if (ng == 0 || b[ng - 1] + w > 64) {
            f[ng] = j;
            c[ng] = 0;
            b[ng] = 0;
            ng++;
        }
        c[ng - 1]++;
        b[ng - 1] += w;
    }
    for (unsigned g = 0; g < ng; g++) {     /* least significant first */
        first[g] = f[ng - 1 - g];
        count[g] = c[ng - 1 - g];
        bits[g] = b[ng - 1 - g];
    }
    return ng;
}

unsigned gs_lex_word_bytes(const gs_lex *lx)
{
    unsigned first[GS_LEX_MAX_KEYS], count[GS_LEX_MAX_KEYS], bits[GS_LEX_MAX_KEYS];
    unsigned ng = gs_lex_groups(lx, first, count, bits);
    for (unsigned g = 0; g < ng; g++)
        if (bits[g] > 32)
            return 8;
    return 4;
}
