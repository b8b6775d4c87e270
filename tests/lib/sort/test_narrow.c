/* 8- and 16-bit keys (lib/base/gs_narrow.h, lib/sort/gs_narrow_sort.c):
 * the encoding of every key of every narrow type, against a reference
 * order written from the formats (integers by value; f16 and bf16 by
 * value with -0.0 before +0.0 and every NaN after +inf), and its inverse;
 * then random arrays with the floats' edge values (NaNs of many patterns,
 * both signs, subnormals, infinities, zeros) and every payload, both
 * orders, stable or not, sorted through the host sort and a device's radix
 * against a stable reference sort by that order: the keys' bit patterns
 * exactly (NaNs' kept, in input order), the payload exactly when stable,
 * else as a permutation within each run of equal keys. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_narrow_sort.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* ---- the reference order, from the formats ---- */


static double bfloat(uint32_t b)
{
    int e = (b >> 7) & 255, m = b & 127;
    double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(m + 128, e - 134);
    return b & 0x8000 ? -v : v;
}

/* -1, 0, 1: keys a and b (bits) of type t in ascending order */
static int ref_cmp(int t, uint32_t a, uint32_t b)
{
    switch (t) {
    case GS_NW_U8: case GS_NW_U16:
        return (a > b) - (a < b);
    case GS_NW_I8:
        return ((int8_t)a > (int8_t)b) - ((int8_t)a < (int8_t)b);
    case GS_NW_I16:
        return ((int16_t)a > (int16_t)b) - ((int16_t)a < (int16_t)b);
    default: {
        double x = t == GS_NW_F16 ? sc_half(a) : bfloat(a), y = t == GS_NW_F16 ? sc_half(b) : bfloat(b);
        int nx = isnan(x), ny = isnan(y);
        if (nx || ny)
            return nx - ny;
        if (x == 0 && y == 0)       /* -0.0 before +0.0 */
            return !(a & 0x8000) - !(b & 0x8000);
        return (x > y) - (x < y);
    }
    }
}

static int g_t, g_desc;
static const uint32_t *g_keys;
/* one_case's parts: 0 (a flat sort), or that many rows (g_segments 0) or
 * segments, part p holding places [g_off[p], g_off[p + 1]) */
static size_t g_nparts;
static int g_segments;
static uint64_t g_off[66];
static size_t g_topk;       /* > 0: top-k of each row (k = g_topk), stable and sorted */


static size_t part_of(size_t i)
{
    size_t p = 0;
    while (p + 1 < g_nparts && g_off[p + 1] <= i)
        p++;
    return p;
}

/* whether place i is in the answer: a top-k's first k of each part */
static int in_answer(size_t i)
{
    if (!g_topk)
        return 1;
    size_t lo = g_nparts ? (size_t)g_off[part_of(i)] : 0;
    return i - lo < g_topk;
}

static int idx_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    if (g_nparts && part_of(a) != part_of(b))
        return part_of(a) < part_of(b) ? -1 : 1;
    int c = ref_cmp(g_t, g_keys[a], g_keys[b]);
    if (g_desc)
        c = -c;
    return c ? c : (a > b) - (a < b);      /* stable */
}

/* ---- the encoding, every key ---- */

static void encoding(int t)
{
    const gs_narrow_info *r = gs_narrow_row(t);
    const uint32_t top = r->bytes == 1 ? 0xff : 0xffff, nk = top + 1;
    uint32_t *keys = malloc(nk * sizeof *keys);
    size_t *ord = malloc(nk * sizeof *ord);
    if (!keys || !ord)
        tap_bail("out of memory");
    unsigned bad_inv = 0, bad_ord = 0, bad_desc = 0;
    for (uint32_t k = 0; k < nk; k++) {
        keys[k] = k;
        ord[k] = k;
        uint32_t d = gs_narrow_dec(t, 0, gs_narrow_enc(t, 0, k));
        int nan = gs_narrow_is_nan(t, k);
        bad_inv += nan ? !gs_narrow_is_nan(t, d) || d != gs_narrow_dec(t, 0, top) : d != k;
        bad_desc += gs_narrow_enc(t, 1, k) != top - gs_narrow_enc(t, 0, k) ||
                    gs_narrow_dec(t, 1, gs_narrow_enc(t, 1, k)) != d;
    }
    g_t = t;
    g_desc = 0;
    g_keys = keys;
    qsort(ord, nk, sizeof *ord, idx_cmp);
    for (uint32_t i = 1; i < nk; i++) {
        uint32_t a = (uint32_t)ord[i - 1], b = (uint32_t)ord[i];
        uint32_t ca = gs_narrow_enc(t, 0, a), cb = gs_narrow_enc(t, 0, b);
        int c = ref_cmp(t, a, b);
        bad_ord += c == 0 ? ca != cb : ca >= cb;
    }
    tap_ok(bad_inv == 0 && bad_ord == 0 && bad_desc == 0, "%s: all %u keys: the codes follow "
           "the reference order (equal keys one code), decode back (a NaN to the canonical "
           "one), descending the reverse (%u, %u, %u wrong)", r->name, nk, bad_inv, bad_ord,
           bad_desc);
    free(keys);
    free(ord);
}

/* ---- sorts ---- */

typedef struct run_arg { const gs_algo *a; gs_sort_ctx *ctx; unsigned calls; } run_arg;
static unsigned g_calls;    /* sorts of words the last case made */
static int run_one(void *arg, const gs_sort_req *req, gs_sort_stats *st, gs_err *err)
{
    run_arg *r = arg;
    r->calls++;
    g_calls++;
    return gs_sort_run(r->a, r->ctx, req, NULL, st, err);
}

static uint32_t edge_key(int t)
{
    static const uint16_t f16[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00,
                                    0xffff, 0x7fff, 0x0001, 0x8001, 0x03ff, 0x3c00, 0xbc00 };
    static const uint16_t bf[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc0,
                                   0xffff, 0x7fff, 0x0001, 0x8001, 0x007f, 0x3f80, 0xbf80 };
    size_t ne = sizeof f16 / sizeof f16[0];
    if (t == GS_NW_F16)
        return f16[rnd() % ne];
    return bf[rnd() % ne];
}

/* One random sort of n keys; 1 when right. */
static int g_counting;      /* keys alone counted (gs_narrow_job.counting) */
static int one_case(const gs_algo *a, gs_sort_ctx *ctx, int t, gs_payload pl, int desc,
                    int stable, size_t n, int edges, char *why, size_t wl)
{
    const gs_narrow_info *r = gs_narrow_row(t);
    const unsigned b = r->bytes;
    const size_t vs = gs_payload_size(pl);
    uint32_t *ref = malloc(n * sizeof *ref), *words = malloc(n * sizeof *words);
    size_t *ord = malloc(n * sizeof *ord);
    unsigned char *keys = malloc(n * b + 1), *vals = malloc(n * (vs ? vs : 1));
    int ok = 1;
    if (!ref || !words || !ord || !keys || !vals)
        tap_bail("out of memory");
    const uint32_t top = b == 1 ? 0xff : 0xffff;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)rnd() & top;
        if (r->kind == GS_KIND_FLOAT && edges && rnd() % 3 == 0)
            k = edge_key(t);
        else if (rnd() % 4 == 0)
            k = (uint32_t)(rnd() % 7) & top;      /* ties */
        ref[i] = k;
        ord[i] = i;
        if (b == 1)
            keys[i] = (unsigned char)k;
        else
            memcpy(keys + 2 * i, &(uint16_t){ (uint16_t)k }, 2);
        if (vs == 4)
            memcpy(vals + 4 * i, &(uint32_t){ (uint32_t)rnd() }, 4);
        else if (vs == 8)
            memcpy(vals + 8 * i, &(uint64_t){ rnd() }, 8);
    }
    unsigned char *vin = malloc(n * (vs ? vs : 1));
    if (!vin)
        tap_bail("out of memory");
    memcpy(vin, vals, n * vs);
    g_t = t;
    g_desc = desc;
    g_keys = ref;
    qsort(ord, n, sizeof *ord, idx_cmp);

    gs_shape sh = { .dtype = GS_DT_U32, .payload = pl, .descending = desc, .stable = stable };
    if (g_nparts && g_segments)
        sh.segments = g_nparts;
    else if (g_nparts)
        sh.rows = g_nparts;
    if (g_topk) {
        sh.topk = 1;
        sh.k = g_topk;
    }
    gs_narrow_job jb;
    gs_narrow_job_init(&jb, t, &sh, n, keys, pl == GS_PL_NONE ? NULL : vals, words);
    if (g_segments)
        jb.req.offsets = g_off;
    jb.counting = g_counting;
    run_arg ra = { a, ctx, 0 };
    gs_sort_stats st;
    memset(&st, 0, sizeof st);
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_narrow_run(&jb, run_one, &ra, &st, &e);
    if (rc) {
        snprintf(why, wl, "rc %d: %.200s", rc, e.msg);
        ok = 0;
    }
    /* the keys' bits exactly */
    for (size_t i = 0; ok && i < n; i++) {
        if (!in_answer(i))
            continue;
        uint32_t got = b == 1 ? keys[i] : (uint32_t)(keys[2 * i] | keys[2 * i + 1] << 8);
        if (got != ref[ord[i]]) {
            snprintf(why, wl, "key %zu: 0x%x, want 0x%x", i, got, ref[ord[i]]);
            ok = 0;
        }
    }
    /* the payload: exactly when stable; else each run of equal keys holds
     * its values (compared as sorted sets) */
    for (size_t i = 0; ok && vs && i < n;) {
        size_t j = i + 1;
        if (!stable)
            while (j < n && ref[ord[j]] == ref[ord[i]] &&
                   (!g_nparts || part_of(ord[j]) == part_of(ord[i])))
                j++;
        uint64_t want_sum = 0, got_sum = 0, want_x = 0, got_x = 0;
        for (size_t q = i; q < j; q++) {
            uint64_t w, g = 0;
            if (pl == GS_PL_IDX32 || pl == GS_PL_IDX64)
                w = ord[q] - (g_nparts ? g_off[part_of(ord[q])] : 0);    /* within its part */
            else if (vs == 4)
                w = ((const uint32_t *)(const void *)vin)[ord[q]];
            else
                w = ((const uint64_t *)(const void *)vin)[ord[q]];
            memcpy(&g, vals + q * vs, vs);
            want_sum += w * 0x9e3779b97f4a7c15ull + (w >> 7);
            got_sum += g * 0x9e3779b97f4a7c15ull + (g >> 7);
            want_x ^= w;
            got_x ^= g;
        }
        if (!in_answer(i))
            want_sum = got_sum = want_x = got_x = 0;    /* past a top-k's answer */
        if (want_sum != got_sum || want_x != got_x) {
            snprintf(why, wl, "values of places %zu..%zu are not the reference's", i, j - 1);
            ok = 0;
        }
        i = j;
    }
    free(ref);
    free(words);
    free(ord);
    free(keys);
    free(vals);
    free(vin);
    return ok;
}

static void cases(const gs_algo *a, gs_sort_ctx *ctx, const char *who, int per, size_t maxn)
{
    static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                      GS_PL_IDX64 };
    for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++) {
        unsigned runs = 0, bad = 0;
        char why[300] = "", first[400] = "";
        for (int c = 0; c < per; c++) {
            gs_payload pl = pls[c % 5];
            int desc = c / 5 % 2, stable = a->stable || c / 10 % 2;
            size_t n = 1 + rnd() % maxn;
            runs++;
            if (!one_case(a, ctx, t, pl, desc, stable, n, c % 3 != 2, why, sizeof why) &&
                !bad++)
                snprintf(first, sizeof first, " (n=%zu %s %s%s: %s)", n, gs_payload_name(pl),
                         desc ? "desc" : "asc", stable ? " stable" : "", why);
        }
        tap_ok(bad == 0, "%s: %s: %u sorts of random keys with edge values, every payload, "
               "both orders: the keys' bits and the payloads right%s", who,
               gs_narrow_row(t)->name, runs, first);
    }
}

int main(void)
{
    for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++)
        encoding(t);
    tap_ok(gs_narrow_find("u16") == GS_NW_U16 && gs_narrow_find("float16") == GS_NW_F16 &&
           gs_narrow_find("bfloat16") == GS_NW_BF16 && gs_narrow_find("bf16") == GS_NW_BF16 &&
           gs_narrow_find("int8") == GS_NW_I8 && gs_narrow_find("u32") == GS_NW_NONE &&
           gs_narrow_find("bool") == GS_NW_NONE && gs_narrow_find(NULL) == GS_NW_NONE &&
           !gs_narrow_row(GS_NW_NONE) && !gs_narrow_row(GS_NW_COUNT),
           "type names: protocol words and numpy's; none for wider or unknown types");

    gs_sort_ctx host = { 0 };
    cases(&gs_algo_host, &host, "host", 40, 3000);
    /* several encoding tasks (64 Ki keys each) on the host pool */
    char why[300] = "";
    int big = one_case(&gs_algo_host, &host, GS_NW_F16, GS_PL_IDX32, 0, 1, 300000, 1, why,
                       sizeof why) &&
              one_case(&gs_algo_host, &host, GS_NW_BF16, GS_PL_U64, 1, 0, 200001, 1, why,
                       sizeof why);
    tap_ok(big, "host: 300000 f16 keys with indices and 200001 bf16 with u64 values, "
           "descending: encoded and decoded in parallel tasks, right%s%s", big ? "" : ": ",
           big ? "" : why);

    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "test_narrow");
    gs_sort_ctx dctx = { .dev = dev };
    char who[160];
    snprintf(who, sizeof who, "radix on %.100s", dev->info.name);
    cases(&gs_algo_radix, &dctx, who, 10, 20000);

    /* rows and segments (empty ones too): each part sorted on its own,
     * its NaNs' bits and payload put back in it, indices counted from its
     * start; keys alone too (counted only when flat) */
    static const gs_payload ppl[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                      GS_PL_IDX64 };
    for (int ondev = 0; ondev < 2; ondev++) {
        unsigned pbad = 0, pruns = 0;
        char pwhy[400] = "";
        for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++)
            for (int c = 0; c < 10; c++) {
                g_segments = c % 2;
                g_nparts = 1 + rnd() % 64;
                size_t len = 1 + rnd() % (ondev ? 300 : 2000);
                g_off[0] = 0;
                for (size_t q = 1; q <= g_nparts; q++)
                    g_off[q] = g_off[q - 1] + (g_segments ? rnd() % (2 * len) : len);
                size_t n = (size_t)g_off[g_nparts];
                gs_payload pl = ppl[c / 2 % 5];
                g_counting = c % 5 == 0 && pl == GS_PL_NONE;
                pruns++;
                if (n && !one_case(ondev ? &gs_algo_radix : &gs_algo_host, ondev ? &dctx : &host, t,
                                   pl, c / 3 % 2, 1, n, 1, why, sizeof why) && !pbad++)
                    snprintf(pwhy, sizeof pwhy, " (%s, %zu %s, n=%zu %s: %.300s)",
                             gs_narrow_row(t)->name, g_nparts, g_segments ? "segments" : "rows",
                             n, gs_payload_name(pl), why);
            }
        g_nparts = 0;
        g_segments = 0;
        g_counting = 0;
        tap_ok(pbad == 0, "%s: %u sorts of rows and segments of every type with edge values, "
               "every payload, both orders: each part's keys' bits and payload right%s",
               ondev ? who : "host", pruns, pwhy);
    }
    /* top-k, flat and of rows, k past the non-NaN keys too: each row's first
     * k as the stable sort's, NaN patterns and payload included */
    unsigned tbad = 0, truns = 0;
    char twhy[400] = "";
    for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++)
        for (int c = 0; c < 10; c++) {
            g_nparts = c % 2 ? 1 + rnd() % 20 : 0;
            size_t len = 1 + rnd() % 1500;
            for (size_t q = 0; q <= g_nparts; q++)
                g_off[q] = q * len;
            size_t n = g_nparts ? g_nparts * len : len;
            g_topk = c % 3 == 0 ? len : 1 + rnd() % len;
            gs_payload pl = ppl[c / 2 % 5];
            g_counting = pl == GS_PL_NONE;
            truns++;
            if (!one_case(&gs_algo_host, &host, t, pl, c / 3 % 2, 1, n, 1, why, sizeof why) &&
                !tbad++)
                snprintf(twhy, sizeof twhy, " (%s, %zu rows, n=%zu k=%zu %s: %.300s)",
                         gs_narrow_row(t)->name, g_nparts, n, g_topk, gs_payload_name(pl), why);
        }
    g_nparts = 0;
    g_topk = 0;
    g_counting = 0;
    tap_ok(tbad == 0, "host: %u top-k of every type with edge values (flat and rows, k up to "
           "the row), every payload, both orders: each row's first k right%s", truns, twhy);

    /* keys alone, counted: every type, both orders, edge values; then
     * several workers' counts and parts, NaN patterns among them */
    g_counting = 1;
    g_calls = 0;
    unsigned cbad = 0, cruns = 0;
    char cwhy[400] = "";
    for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++)
        for (int c = 0; c < 12; c++) {
            size_t n = 1 + rnd() % 5000;
            cruns++;
            if (!one_case(&gs_algo_host, &host, t, GS_PL_NONE, c % 2, c / 2 % 2, n, c % 3 != 2,
                          why, sizeof why) && !cbad++)
                snprintf(cwhy, sizeof cwhy, " (%s n=%zu: %.300s)", gs_narrow_row(t)->name, n,
                         why);
        }
    /* several workers' tables and parts (by default 16-bit keys take a
     * worker per 512 Ki keys): one per key per code */
    size_t kpc = gs_narrow_count_keys_per_code(1);
    int cbig = one_case(&gs_algo_host, &host, GS_NW_F16, GS_PL_NONE, 1, 0, 300000, 1, why,
                        sizeof why) &&
               one_case(&gs_algo_host, &host, GS_NW_U8, GS_PL_NONE, 0, 0, 200001, 0, why,
                        sizeof why) &&
               one_case(&gs_algo_host, &host, GS_NW_BF16, GS_PL_NONE, 0, 0, 250000, 1, why,
                        sizeof why);
    /* one worker (the default's below 2^19 keys), and either side of the
     * codes' count: 65535 keys sorted by their codes' digits, 65536 counted */
    int cdflt = one_case(&gs_algo_host, &host, GS_NW_I16, GS_PL_NONE, 0, 0, 300000, 0, why,
                         sizeof why) &&
                one_case(&gs_algo_host, &host, GS_NW_F16, GS_PL_NONE, 1, 0, 65535, 1, why,
                         sizeof why) &&
                one_case(&gs_algo_host, &host, GS_NW_BF16, GS_PL_NONE, 0, 0, 65536, 1, why,
                         sizeof why) &&
                one_case(&gs_algo_host, &host, GS_NW_U8, GS_PL_NONE, 1, 0, 255, 0, why,
                         sizeof why);
    gs_narrow_count_keys_per_code(kpc);
    cbig = cbig && cdflt && one_case(&gs_algo_host, &host, GS_NW_I16, GS_PL_NONE, 1, 0, 300000,
                                     0, why, sizeof why);
    tap_ok(cbad == 0 && cbig && g_calls == 0, "keys alone, counted: %u sorts of every type "
           "and 300000 f16 descending, 200001 u8, 250000 bf16 with NaN patterns, 300000 i16 "
           "(several workers; then one, as the default gives them), 65535 f16 and 255 u8 "
           "(fewer keys than codes: by digits), 65536 bf16: the keys' bits right, no words "
           "sorted (%u sorts)%s%s%s", cruns, g_calls, cwhy,
           cbig ? "" : ": ", cbig ? "" : why);
    g_counting = 0;

    /* a failing sort (radix without a device): its error, the keys as they were */
    uint16_t k[4] = { 3, 1, 0x7c01, 2 }, k0[4];
    uint32_t w[4];
    memcpy(k0, k, sizeof k);
    gs_shape sh = { .dtype = GS_DT_U32 };
    gs_narrow_job jb;
    gs_narrow_job_init(&jb, GS_NW_F16, &sh, 4, k, NULL, w);
    gs_sort_ctx nodev = { 0 };
    run_arg ra = { &gs_algo_radix, &nodev, 0 };
    gs_sort_stats st;
    memset(&st, 0, sizeof st);
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_narrow_run(&jb, run_one, &ra, &st, &e);
    tap_ok(rc < 0 && !memcmp(k, k0, sizeof k) && !st.output_touched && e.msg[0],
           "a sort that fails (radix without a device): its error (%s), the keys untouched",
           e.msg);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
