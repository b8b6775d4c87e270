/* Lexsort (lib/base/gs_lex.c, lib/sort/gs_lexsort.c): random keys of every
 * lexsort type and order, one to eight keys (one group, several, chained),
 * sorted through the host sort and a device's radix, against a stable
 * reference sort that compares the keys' values as numbers (floats as
 * np.lexsort orders them: -0.0 equal to +0.0, NaNs equal and after +inf),
 * never through gs_lex_enc; the encoding's own order on edge values; the
 * layout's alignment and overflow; the groups' widths. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_lexsort.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}


/* -1, 0, 1: key j of rows a and b by value */
typedef struct refk { int dt, desc; const void *p; } refk;

static int cmp_num(const refk *k, size_t a, size_t b)
{
    double x = 0, y = 0;
    int isf = 1;
    switch (k->dt) {
    case GS_LX_F16: x = sc_half(((const uint16_t *)k->p)[a]); y = sc_half(((const uint16_t *)k->p)[b]); break;
    case GS_LX_F32: x = ((const float *)k->p)[a]; y = ((const float *)k->p)[b]; break;
    case GS_LX_F64: x = ((const double *)k->p)[a]; y = ((const double *)k->p)[b]; break;
    default: isf = 0;
    }
    if (isf) {
        int nx = isnan(x), ny = isnan(y);
        if (nx || ny)
            return nx - ny;
        return (x > y) - (x < y);       /* -0.0 == +0.0 */
    }
    int64_t s = 0, t = 0;
    uint64_t u = 0, v = 0;
    int sig = 1;
    switch (k->dt) {
    case GS_LX_BOOL: u = ((const uint8_t *)k->p)[a] != 0; v = ((const uint8_t *)k->p)[b] != 0; sig = 0; break;
    case GS_LX_U8: u = ((const uint8_t *)k->p)[a]; v = ((const uint8_t *)k->p)[b]; sig = 0; break;
    case GS_LX_I8: s = ((const int8_t *)k->p)[a]; t = ((const int8_t *)k->p)[b]; break;
    case GS_LX_U16: u = ((const uint16_t *)k->p)[a]; v = ((const uint16_t *)k->p)[b]; sig = 0; break;
    case GS_LX_I16: s = ((const int16_t *)k->p)[a]; t = ((const int16_t *)k->p)[b]; break;
    case GS_LX_U32: u = ((const uint32_t *)k->p)[a]; v = ((const uint32_t *)k->p)[b]; sig = 0; break;
    case GS_LX_I32: s = ((const int32_t *)k->p)[a]; t = ((const int32_t *)k->p)[b]; break;
    case GS_LX_U64: u = ((const uint64_t *)k->p)[a]; v = ((const uint64_t *)k->p)[b]; sig = 0; break;
    default: s = ((const int64_t *)k->p)[a]; t = ((const int64_t *)k->p)[b]; break;
    }
    return sig ? (s > t) - (s < t) : (u > v) - (u < v);
}

static refk *g_keys;
static unsigned g_nk;
static int cmp_rows(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    for (unsigned j = 0; j < g_nk; j++) {
        int c = cmp_num(&g_keys[j], a, b);
        if (c)
            return g_keys[j].desc ? -c : c;
    }
    return (a > b) - (a < b);           /* stable: row order */
}

/* A random value of type t, drawn from few distinct values (ties) with the
 * float edges (NaNs of several patterns, +-0, +-inf, subnormals). */
static void fill(int t, void *p, size_t n)
{
    static const uint16_t h16[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x0001,
                                    0x8001, 0x3c00, 0xbc00, 0x7bff, 0x03ff };
    static const float f32[] = { 0.0f, -0.0f, INFINITY, -INFINITY, 1.5f, -1.5f, 1e-40f,
                                 -1e-40f, 3.0f };
    static const double f64[] = { 0.0, -0.0, INFINITY, -INFINITY, 2.5, -2.5, 5e-320, -5e-320,
                                  7.0 };
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd(), few = r % 7;
        switch (t) {
        case GS_LX_BOOL: ((uint8_t *)p)[i] = (uint8_t)(r % 3 == 0 ? 0 : r % 3 == 1 ? 1 : 2 + r % 200); break;
        case GS_LX_U8: case GS_LX_I8: ((uint8_t *)p)[i] = (uint8_t)(few * 37); break;
        case GS_LX_U16: case GS_LX_I16: ((uint16_t *)p)[i] = (uint16_t)(few * 9001); break;
        case GS_LX_F16: ((uint16_t *)p)[i] = h16[r % 12]; break;
        case GS_LX_U32: case GS_LX_I32: ((uint32_t *)p)[i] = (uint32_t)(few * 613566756u); break;
        case GS_LX_F32:
            if (r % 10 == 0) {
                uint32_t nan = 0x7fc00000u | (uint32_t)(r >> 40 & 0xffff) | (r & 1u) << 31;
                memcpy((float *)p + i, &nan, 4);
            } else {
                ((float *)p)[i] = f32[r % 9];
            }
            break;
        case GS_LX_F64:
            ((double *)p)[i] = r % 10 == 0 ? -NAN : f64[r % 9];
            break;
        default: ((uint64_t *)p)[i] = few * UINT64_C(2635249153387078802); break;
        }
    }
}

typedef struct run_arg { const gs_algo *a; gs_sort_ctx *ctx; unsigned calls; } run_arg;
static int run_one(void *arg, const gs_sort_req *req, gs_sort_stats *st, gs_err *err)
{
    run_arg *r = arg;
    r->calls++;
    return gs_sort_run(r->a, r->ctx, req, NULL, st, err);
}

/* One random lexsort of n rows and nk keys through algorithm a; 1 when
 * its answer is the reference's. *groups gets the number of sorts. */
static int one_case(const gs_algo *a, gs_sort_ctx *ctx, size_t n, unsigned nk, const int *dts,
                    gs_payload idx, unsigned *groups, char *why, size_t wl)
{
    gs_lex lx = { .nkeys = nk };
    for (unsigned j = 0; j < nk; j++) {
        lx.key[j].dt = dts[j];
        lx.key[j].desc = (int)(rnd() & 1);
    }
    uint64_t bytes;
    gs_err err;
    gs_err_clear(&err);
    if (gs_lex_layout(&lx, n, &bytes, &err) < 0) {
        snprintf(why, wl, "layout: %.200s", err.msg);
        return 0;
    }
    char *keys = malloc(bytes + 8);
    size_t wb = gs_lex_word_bytes(&lx), scr = gs_lexsort_scratch(&lx, n);
    void *words = malloc(n * wb + 1), *scratch = scr ? malloc(scr) : NULL;
    void *out = malloc(n * 8 + 1);
    size_t *ref = malloc(n * sizeof *ref + 1);
    refk rk[GS_LEX_MAX_KEYS];
    for (unsigned j = 0; j < nk; j++) {
        fill(dts[j], keys + lx.key[j].offset, n);
        rk[j] = (refk){ dts[j], lx.key[j].desc, keys + lx.key[j].offset };
    }
    for (size_t i = 0; i < n; i++)
        ref[i] = i;
    g_keys = rk;
    g_nk = nk;
    qsort(ref, n, sizeof *ref, cmp_rows);
    gs_lexsort_job jb = { .lx = &lx, .n = n, .words = words, .scratch = scratch, .out = out,
                          .idx = idx, .one_thread = (int)(rnd() & 1) };
    for (unsigned j = 0; j < nk; j++)
        jb.key[j] = keys + lx.key[j].offset;
    gs_sort_stats st = { 0 };
    run_arg ra = { a, ctx, 0 };
    int rc = gs_lexsort_run(&jb, run_one, &ra, &st, &err), ok = rc == 0;
    if (!ok)
        snprintf(why, wl, "rc %d: %.200s", rc, err.msg);
    for (size_t i = 0; ok && i < n; i++) {
        uint64_t got = idx == GS_PL_IDX32 ? ((uint32_t *)out)[i] : ((uint64_t *)out)[i];
        if (got != ref[i]) {
            snprintf(why, wl, "place %zu holds row %llu, the reference row %zu", i,
                     (unsigned long long)got, ref[i]);
            ok = 0;
        }
    }
    *groups = ra.calls;
    free(keys);
    free(words);
    free(scratch);
    free(out);
    free(ref);
    return ok;
}

static void random_cases(const gs_algo *a, gs_sort_ctx *ctx, const char *who, int cases,
                         size_t maxn)
{
    int bad = 0;
    unsigned chained = 0, most = 0;
    char why[256] = "";
    for (int c = 0; c < cases && !bad; c++) {
        unsigned nk = 1 + (unsigned)(rnd() % GS_LEX_MAX_KEYS), groups;
        int dts[GS_LEX_MAX_KEYS];
        for (unsigned j = 0; j < nk; j++)
            dts[j] = (int)(rnd() % GS_LX_COUNT);
        size_t n = c < 3 ? (size_t)c : (size_t)(rnd() % maxn);
        gs_payload idx = rnd() & 1 ? GS_PL_IDX32 : GS_PL_IDX64;
        if (!one_case(a, ctx, n, nk, dts, idx, &groups, why, sizeof why)) {
            bad = 1;
            tap_diag("case %d: %zu rows, %u keys", c, n, nk);
        }
        chained += groups > 1;
        if (groups > most)
            most = groups;
    }
    tap_ok(!bad, "%s: %d random lexsorts of 1 to 8 keys of every type and order match the "
           "reference%s%s", who, cases, bad ? ": " : "", why);
    tap_ok(bad || (chained > 0 && most >= 3), "%s: some of them chained groups (%u, at most "
           "%u sorts)", who, chained, most);
}

int main(void)
{
    /* the encoding: strictly increasing over values in order, equal for
     * equal ones */
    static const uint16_t h[] = { 0xfc00, 0xbc00, 0x8001, 0x8000, 0x0000, 0x0001, 0x3c00,
                                  0x7bff, 0x7c00, 0x7e00 };
    int mono = 1;
    for (size_t i = 1; i < sizeof h / sizeof h[0]; i++) {
        uint64_t a = gs_lex_enc(GS_LX_F16, 0, h, i - 1), b = gs_lex_enc(GS_LX_F16, 0, h, i);
        int equal = (h[i - 1] | h[i]) == 0x8000;     /* -0.0 then +0.0 */
        mono &= equal ? a == b : a < b;
        mono &= gs_lex_enc(GS_LX_F16, 1, h, i - 1) > gs_lex_enc(GS_LX_F16, 1, h, i) || equal;
    }
    uint16_t nans[] = { 0x7e00, 0xfe01, 0x7c01, 0xffff };
    for (size_t i = 1; i < 4; i++)
        mono &= gs_lex_enc(GS_LX_F16, 0, nans, i) == gs_lex_enc(GS_LX_F16, 0, nans, 0);
    tap_ok(mono, "f16 encoding: -inf < -1 < -subnormal < -0 == +0 < subnormal < 1 < max < "
           "+inf < NaN, every NaN one key, reversed descending");
    int8_t i8[] = { -128, -1, 0, 1, 127 };
    int iok = 1;
    for (size_t i = 1; i < 5; i++)
        iok &= gs_lex_enc(GS_LX_I8, 0, i8, i - 1) < gs_lex_enc(GS_LX_I8, 0, i8, i) &&
               gs_lex_enc(GS_LX_I8, 0, i8, i) <= 0xff;
    uint8_t b[] = { 0, 1, 7 };
    iok &= gs_lex_enc(GS_LX_BOOL, 0, b, 1) == 1 && gs_lex_enc(GS_LX_BOOL, 0, b, 2) == 1 &&
           gs_lex_enc(GS_LX_BOOL, 1, b, 0) == 1 && gs_lex_enc(GS_LX_BOOL, 1, b, 2) == 0;
    tap_ok(iok, "i8 and bool encodings: in order, in their bits; any nonzero byte is true");

    /* layout and groups */
    gs_lex lx = { .nkeys = 3, .key = { { GS_LX_U8, 0, 0 }, { GS_LX_F64, 1, 0 },
                                       { GS_LX_U16, 0, 0 } } };
    uint64_t bytes;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_lex_layout(&lx, 5, &bytes, &err);
    tap_ok(rc == 0 && lx.key[1].offset == 8 && lx.key[2].offset == 48 && bytes == 64,
           "layout: 5 u8 at 0, 5 f64 at 8, 5 u16 at 48, 64 bytes (%llu %llu %llu)",
           (unsigned long long)lx.key[1].offset, (unsigned long long)lx.key[2].offset,
           (unsigned long long)bytes);
    rc = gs_lex_layout(&lx, UINT64_C(1) << 62, &bytes, &err);
    tap_ok(rc == GS_ETOOBIG, "layout: 2^62 rows overflow: %s", err.msg);
    unsigned first[GS_LEX_MAX_KEYS], count[GS_LEX_MAX_KEYS], bits[GS_LEX_MAX_KEYS];
    unsigned ng = gs_lex_groups(&lx, first, count, bits);
    /* u8 + f64 = 72 bits and f64 + u16 = 80: three groups, least significant first */
    tap_ok(ng == 3 && first[0] == 2 && count[0] == 1 && bits[0] == 16 && first[1] == 1 &&
           bits[1] == 64 && first[2] == 0 && bits[2] == 8,
           "groups of (u8, f64, u16): u16, then f64, then u8 (%u groups)", ng);
    gs_lex two = { .nkeys = 2, .key = { { GS_LX_U16, 0, 0 }, { GS_LX_I16, 0, 0 } } };
    gs_lex wide = { .nkeys = 2, .key = { { GS_LX_U32, 0, 0 }, { GS_LX_BOOL, 0, 0 } } };
    tap_ok(gs_lex_word_bytes(&two) == 4 && gs_lex_word_bytes(&wide) == 8 &&
           gs_lex_dt_find("float16") == GS_LX_F16 && gs_lex_dt_find("u8") == GS_LX_U8 &&
           gs_lex_dt_find("f128") < 0, "word widths: 32 bits in u32 words, 33 in u64; "
           "type names");

    gs_sort_ctx host = { 0 };
    random_cases(&gs_algo_host, &host, "host", 300, 3000);

    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "test_lexsort");
    gs_sort_ctx dctx = { .dev = dev };
    char who[160];
    snprintf(who, sizeof who, "radix on %.100s", dev->info.name);
    random_cases(&gs_algo_radix, &dctx, who, 12, 40000);
    snprintf(who, sizeof who, "mergepath on %.100s", dev->info.name);
    random_cases(&gs_algo_mergepath, &dctx, who, 8, 20000);

    /* a failing sort: its error, and the input's promise */
    int dts[2] = { GS_LX_U32, GS_LX_U32 };
    unsigned groups;
    char why[256] = "";
    gs_sort_ctx nodev = { 0 };
    int ok = one_case(&gs_algo_radix, &nodev, 1000, 2, dts, GS_PL_IDX32, &groups, why,
                      sizeof why);
    tap_ok(!ok && strstr(why, "rc ") == why, "a sort that fails (radix without a device) "
           "fails the lexsort with its error: %s", why);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
