/* Requests of equal rows through the radix sort (issue 38): where a tile
 * (wg_size x elems_per_thread, elems_per_thread lowered until it divides the
 * row) divides the row and a row has at most 256 tiles, radix sorts every
 * row in the same launches (radix_scan_rows in kernels/radix.cl), else row
 * by row. On the test device (PoCL in CI), each row against its own
 * reference (sortcheck's: np.sort(axis=-1) order, stable, NaN patterns
 * kept, argsort indices counted from 0 within the row): rows of one tile,
 * two, many, rows no tile divides and rows of too many tiles (row by row),
 * every dtype, payload, order and distribution (NaNs, +-0, many ties);
 * the pass count telling the two paths apart; pass skipping and argsort
 * without passes per row; NaN patterns kept on the device row by row and
 * on the host; 32-bit pairs as one word and apart, the warp ranking,
 * lookback=1 (rows take reduce-then-scan), kernels built for client pages,
 * top-k of rows, the defaults. A missing device is a failure, never a skip. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_clrun.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_keys.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static const gs_algo *const A = &gs_algo_radix;

/* radix_bits, wg_size, elems_per_thread (lookback 0 unless set) */
static void set(gs_params *p, long bits, long wg, long ept)
{
    sc_set3(A, p, bits, wg, ept);
}

/* One request of `rows` rows of `len` keys through radix with p, each row
 * checked against its own reference; *st gets the statistics. */
static int rows_run(gs_sort_ctx *ctx, const gs_params *p, gs_dtype t, gs_payload pl, int desc,
                    size_t rows, size_t len, int dist, gs_sort_stats *st, char *why, size_t wl)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl), n = rows * len;
    char *keys = malloc(n * ks + 1), *vals = malloc(n * vs + 1);
    if (!keys || !vals)
        tap_bail("out of memory");
    sc_case *c = sc_rows_init(t, pl, desc, rows, len, dist, 0xa11 + rows, keys, vals);
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .descending = desc, .stable = 1,
                                   .rows = rows },
                        .n = n, .keys = keys, .values = vs ? vals : NULL };
    gs_err err;
    gs_err_clear(&err);
    int ok = gs_sort_run(A, ctx, &req, p, st, &err) == 0;
    if (!ok)
        snprintf(why, wl, "sort failed: %.300s", err.msg);
    ok = sc_rows_verify(c, rows, len, 1, keys, vals, ok, why, wl);
    free(keys);
    free(vals);
    return ok;
}

static unsigned npos(gs_dtype t, long bits)
{
    return (unsigned)(((long)gs_dtype_size(t) * 8 + bits - 1) / bits);
}

/* Whole or row by row, as the pass count says: whole, one sequence of
 * passes (at most a key's digit positions); row by row, each row's. */
static void test_paths(gs_sort_ctx *ctx)
{
    gs_params p;
    char why[512] = "";
    gs_sort_stats st;
    set(&p, 8, 64, 4);   /* tile 256 */
    static const struct {
        size_t rows, len;
        int whole;
        const char *what;
    } cs[] = {
        { 5, 256, 1, "rows of one tile" },
        { 3, 512, 1, "rows of two tiles" },
        { 4, 256 * 37, 1, "rows of 37 tiles" },
        { 9, 192, 1, "rows of 192 keys: elems_per_thread 3 (tile 192)" },
        { 2, 256 * 256, 1, "rows of 256 tiles, the most taken whole" },
        { 2, 256 * 257, 0, "rows of 257 tiles: row by row" },
        { 7, 1000, 0, "rows of 1000 keys, no tile of 64 x e divides: row by row" },
        { 6, 32, 0, "rows shorter than a work-group: row by row" },
        { 300, 64, 1, "rows of 64 keys: elems_per_thread 1, a tile a row" },
        { 1, 4096, 1, "one row: the flat sort" },
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        memset(&st, 0, sizeof st);
        int ok = rows_run(ctx, &p, GS_DT_U32, GS_PL_IDX32, 0, cs[i].rows, cs[i].len, SC_RANDOM,
                          &st, why, sizeof why);
        unsigned want = npos(GS_DT_U32, 8) * (cs[i].whole ? 1u : (unsigned)cs[i].rows);
        tap_ok(ok && st.passes + st.passes_skipped == want,
               "%zu x %zu u32/idx32: %s (%u passes, %u skipped, want %u) (%s)", cs[i].rows,
               cs[i].len, cs[i].what, st.passes, st.passes_skipped, want, ok ? "ok" : why);
    }
}

/* Pass skipping over all rows at once (the OR and AND of every key), and
 * argsort when no pass runs: indices 0..len-1 in every row. */
static void test_skipping(gs_dev *dev)
{
    gs_sort_ctx ctx = { .dev = dev };
    gs_params p;
    set(&p, 8, 64, 4);
    size_t small = gs_radix_small_max(0);   /* the read-back at every size */
    const size_t rows = 6, len = 512, n = rows * len;
    uint32_t *k = malloc(n * 4), *v = malloc(n * 4);
    if (!k || !v)
        tap_bail("out of memory");
    /* only the low byte varies (rows in descending blocks, so a sort that
     * mixed rows would show) */
    for (size_t i = 0; i < n; i++)
        k[i] = 0x5a5a0000u | (uint32_t)((rows - i / len) << 8) |
               ((uint32_t)(i * 2654435761u) >> 24);
    uint32_t *in = malloc(n * 4);
    if (!in)
        tap_bail("out of memory");
    memcpy(in, k, n * 4);
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .rows = rows },
                        .n = n, .keys = k, .values = v };
    gs_sort_stats st;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(A, &ctx, &req, &p, &st, &err);
    int ok = rc == 0;
    for (size_t i = 0; ok && i < n; i++) {
        size_t r = i / len;
        ok = v[i] < len && in[r * len + v[i]] == k[i] &&
             (i % len == 0 || k[i - 1] < k[i] || (k[i - 1] == k[i] && v[i - 1] < v[i]));
    }
    tap_ok(ok && st.passes == 2 && st.passes_skipped == 2,
           "6 rows of 512 u32, bytes 0 and 1 varying: %u passes run, %u skipped, each row sorted "
           "with its own indices (%s)", st.passes, st.passes_skipped, rc ? err.msg : "ok");

    /* every key equal: no pass, the indices of each row 0..len-1 */
    uint64_t *k64 = malloc(n * 8), *v64 = malloc(n * 8);
    if (!k64 || !v64)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++) {
        k64[i] = UINT64_C(0xc000000000000000);   /* -2.0 */
        v64[i] = UINT64_C(0xdeadbeef);
    }
    gs_sort_req r2 = { .shape = { .dtype = GS_DT_F64, .payload = GS_PL_IDX64, .descending = 1,
                                  .rows = rows },
                       .n = n, .keys = k64, .values = v64 };
    gs_err_clear(&err);
    rc = gs_sort_run(A, &ctx, &r2, &p, &st, &err);
    ok = rc == 0 && st.passes == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = v64[i] == i % len && k64[i] == UINT64_C(0xc000000000000000);
    tap_ok(ok, "6 rows of 512 equal f64 keys with idx64: no pass, indices 0..511 in each row "
           "(%u run, %u skipped) (%s)", st.passes, st.passes_skipped, rc ? err.msg : "ok");
    gs_radix_small_max(small);
    free(k);
    free(v);
    free(in);
    free(k64);
    free(v64);
}

/* NaN patterns (every NaN a distinct pattern, values or indices beside
 * them) in each row's own NaN block: kept on the device (from
 * GS_NAN_DEVICE_MIN keys, rows a multiple of the NaN tile, wg_size x 16),
 * else on the host. */
static void test_nans(gs_sort_ctx *ctx)
{
    gs_params p;
    char why[512] = "";
    gs_sort_stats st;
    set(&p, 8, 64, 4);
    static const struct {
        gs_dtype t;
        gs_payload pl;
        int desc, dist;
        size_t rows, len;
        int device;
        const char *what;
    } cs[] = {
        { GS_DT_F32, GS_PL_NONE, 0, SC_NANMIX, 8, 65536, 1, "kept on the device" },
        { GS_DT_F64, GS_PL_IDX32, 1, SC_NANMIX, 128, 4096, 1, "kept on the device" },
        { GS_DT_F32, GS_PL_U64, 1, SC_FSPECIAL, 512, 1024, 1, "kept on the device" },
        { GS_DT_F32, GS_PL_U32, 0, SC_NANMIX, 683, 768, 0,
          "rows of 768: NaN tiles of 1024 span rows, kept on the host" },
        { GS_DT_F64, GS_PL_U32, 1, SC_NANMIX, 40, 1024, 0, "below the device's size: the host" },
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        memset(&st, 0, sizeof st);
        int ok = rows_run(ctx, &p, cs[i].t, cs[i].pl, cs[i].desc, cs[i].rows, cs[i].len,
                          cs[i].dist, &st, why, sizeof why);
        tap_ok(ok && st.passes <= npos(cs[i].t, 8) &&
                   (cs[i].device ? st.nans_on_device > 0 : st.nans_on_device == 0),
               "%zu x %zu %s/%s %s %s: NaN patterns %s (%zu on the device, %u passes) (%s)",
               cs[i].rows, cs[i].len, gs_dtype_name(cs[i].t), gs_payload_name(cs[i].pl),
               cs[i].desc ? "desc" : "asc", sc_dist_name(cs[i].dist), cs[i].what,
               st.nans_on_device, st.passes, ok ? "ok" : why);
    }
}

/* Variants of the kernels a rows sort may take, on a short matrix */
static void test_variants(gs_dev *dev)
{
    gs_sort_ctx ctx = { .dev = dev };
    gs_params p;
    char why[512] = "";
    /* 32-bit pairs ranked as one word and apart (argsort's indices in the
     * pair kernel count from the row's start too) */
    set(&p, 8, 64, 4);
    for (int pairs = 0; pairs < 2; pairs++) {
        gs_radix_force_pairs(pairs);
        int ok = 1;
        for (int dist = 0; dist < SC_DIST_COUNT && ok; dist++)
            for (int pl = 0; pl < 2 && ok; pl++)
                ok = sc_rows_check(A, &ctx, &p, dist >= SC_FSPECIAL ? GS_DT_F32 : GS_DT_I32,
                                   pl ? GS_PL_IDX32 : GS_PL_U32, dist & 1, 5, 768, dist, why,
                                   sizeof why);
        tap_ok(ok, "5 rows of 768, 32-bit keys with 32-bit values and indices, pairs %s (%s)",
               pairs ? "as one word" : "apart", ok ? "ok" : why);
    }
    gs_radix_force_pairs(-1);
    /* the warp multisplit ranking (emulated here) */
    gs_radix_force_rank(1);
    set(&p, 8, 64, 5);
    sc_rows_matrix(A, &ctx, &p, 3, 640, 0, "radix rows, warp-ranked, 64 x 5");
    gs_radix_force_rank(-1);
    /* lookback=1 asked: rows whole take reduce-then-scan */
    set(&p, 4, 32, 8);
    gs_params_set(&p, "lookback", 1);
    sc_rows_matrix(A, &ctx, &p, 4, 512, 0, "radix rows, lookback=1 asked, 4-bit digits");
    /* small digits, many passes, RADIX < WG; and RADIX > WG (several
     * digits a work-item in radix_scan_rows) */
    set(&p, 3, 32, 2);
    sc_rows_matrix(A, &ctx, &p, 3, 128, 1, "radix rows, 3-bit digits, 32 x 2");
    set(&p, 8, 16, 2);
    sc_rows_matrix(A, &ctx, &p, 5, 96, 1, "radix rows, 8-bit digits, 16 x 2 (tile 32, 3 a row)");
    /* kernels built for client pages (every store bounded, the race flag) */
    gs_clrun_force_hostile(1);
    set(&p, 8, 64, 4);
    sc_rows_matrix(A, &ctx, &p, 3, 512, 1, "radix rows, built for client pages");
    gs_clrun_force_hostile(-1);
    /* copied arrays, lean (one wait; NaN patterns put back before it) */
    gs_clrun_no_adopt(1);
    gs_sort_ctx lean = { .dev = dev, .lean = 1 };
    tap_ok(sc_rows_check(A, &lean, &p, GS_DT_F32, GS_PL_IDX32, 1, 8, 65536, SC_NANMIX, why,
                         sizeof why), "8 rows of 65536 f32/idx32 desc, copied, lean (%s)", why);
    gs_clrun_no_adopt(0);
    /* top-k of rows: the rows sorted whole, their first k */
    int ok = 1;
    for (int sorted = 0; sorted < 2 && ok; sorted++)
        ok = sc_topk_check(A, &ctx, &p, GS_DT_F32, GS_PL_IDX32, sorted, 7, 1024, 100, sorted,
                           SC_FSPECIAL, why, sizeof why);
    tap_ok(ok, "top-100 of 7 rows of 1024 f32 (%s)", ok ? "ok" : why);
}

int main(void)
{
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "radix rows");
    gs_sort_ctx ctx = { .dev = dev };

    tap_ok(A->rows && A->stable && A->keeps_bits && A->keeps_nan,
           "radix: takes rows itself, stable, keeps NaN patterns (device and host)");
    test_paths(&ctx);
    test_skipping(dev);
    test_nans(&ctx);

    /* The matrix (every dtype, payload, order and distribution) on rows of
     * one tile, two tiles, many tiles, and rows that go one by one */
    gs_params p;
    set(&p, 8, 64, 4);
    sc_rows_matrix(A, &ctx, &p, 4, 256, 0, "radix rows of one tile (64 x 4)");
    sc_rows_matrix(A, &ctx, &p, 3, 512, 0, "radix rows of two tiles");
    sc_rows_matrix(A, &ctx, &p, 2, 256 * 13, 0, "radix rows of 13 tiles");
    sc_rows_matrix(A, &ctx, &p, 3, 300, 0, "radix rows of 300 keys (row by row)");
    /* the defaults on this device, rows of 65536 keys (whole: tiles of
     * at most 32768 keys divide them) */
    {
        gs_params d;
        gs_sort_stats st;
        char why[512] = "";
        A->defaults(&dev->info, &d);
        memset(&st, 0, sizeof st);
        int ok = rows_run(&ctx, &d, GS_DT_F32, GS_PL_NONE, 0, 16, 65536, SC_RANDOM, &st, why,
                          sizeof why);
        tap_ok(ok && st.passes + st.passes_skipped == npos(GS_DT_F32,
                                                           gs_params_get(&d, "radix_bits", 8)),
               "16 rows of 65536 f32 with this device's defaults: whole, %u passes (%s)",
               st.passes, ok ? "ok" : why);
    }
    test_variants(dev);

    gs_dev_free_list(devs, ndev);
    return tap_done();
}
