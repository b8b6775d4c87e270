/* Rows (lib/sort/gs_sort.c, sort_rows): a request of `rows` equal rows sorts each row
 * on its own, for the host sort (rows side by side on the host pool) and a
 * device algorithm (radix on the test device, rows one after another):
 * every dtype, payload and order, each row against its own reference
 * (sortcheck's: stable, NaN patterns kept), argsort indices counted from 0
 * within the row; rows of one key, one row, empty rows; rows that do not
 * divide n refused before anything is touched; a parameter set the
 * algorithm refuses refused for the whole request. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

/* Sort `rows` rows of `len` keys (each row its own sc_case, random input
 * from dist) as one request through a, then check every row against its
 * reference. 1: all right. */
static int run_rows(const gs_algo *a, gs_sort_ctx *ctx, gs_dtype t, gs_payload pl, int desc,
                    size_t rows, size_t len, int dist, char *why, size_t wl)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl), n = rows * len;
    sc_case *c = calloc(rows ? rows : 1, sizeof *c);
    char *keys = malloc(n * ks + 1), *vals = malloc(n * vs + 1);
    if (!c || !keys || !vals)
        tap_bail("out of memory");
    for (size_t r = 0; r < rows; r++) {
        if (sc_case_init(&c[r], t, pl, desc, len, dist, 0x5eed + r * 7919 + len) < 0)
            tap_bail("sc_case_init failed");
        memcpy(keys + r * len * ks, c[r].req.keys, len * ks);
        if (vs)
            memcpy(vals + r * len * vs, c[r].req.values, len * vs);
    }
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .descending = desc,
                                   .stable = a->stable, .rows = rows },
                        .n = n, .keys = keys, .values = vs ? vals : NULL };
    gs_err err;
    gs_err_clear(&err);
    int ok = gs_sort_run(a, ctx, &req, NULL, NULL, &err) == 0;
    if (!ok)
        snprintf(why, wl, "sort failed: %.300s", err.msg);
    for (size_t r = 0; r < rows; r++) {
        if (ok) {
            memcpy(c[r].req.keys, keys + r * len * ks, len * ks);
            if (vs)
                memcpy(c[r].req.values, vals + r * len * vs, len * vs);
            char w[256];
            if (!sc_case_verify(&c[r], a->stable, w, sizeof w)) {
                snprintf(why, wl, "row %zu of %zu: %.300s", r, rows, w);
                ok = 0;
            }
        }
        sc_case_free(&c[r]);
    }
    free(c);
    free(keys);
    free(vals);
    return ok;
}

static void matrix(const gs_algo *a, gs_sort_ctx *ctx, size_t rows, size_t len, const char *who)
{
    static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                      GS_PL_IDX64 };
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (size_t pi = 0; pi < sizeof pls / sizeof pls[0]; pi++) {
            if (a == &gs_algo_vqsort && pls[pi] != GS_PL_NONE)
                continue;
            int bad = 0;
            char why[512] = "";
            for (int desc = 0; desc < 2 && !bad; desc++)
                for (int dist = 0; dist < SC_DIST_COUNT && !bad; dist++)
                    bad = !run_rows(a, ctx, (gs_dtype)t, pls[pi], desc, rows, len, dist, why,
                                    sizeof why);
            tap_ok(!bad, "%s: %zu rows of %zu %s keys, payload %s, both orders, every "
                   "distribution%s%s", who, rows, len, gs_dtype_name((gs_dtype)t),
                   gs_payload_name(pls[pi]), bad ? ": " : "", why);
        }
}

int main(void)
{
    gs_sort_ctx host = { 0 };
    char why[512] = "";
    /* many short rows side by side, rows of one key, a single row */
    matrix(&gs_algo_host, &host, 97, 33, "host");
    tap_ok(run_rows(&gs_algo_host, &host, GS_DT_F64, GS_PL_IDX32, 1, 3000, 1, 0, why,
                    sizeof why), "host: 3000 rows of one key (%s)", why);
    tap_ok(run_rows(&gs_algo_host, &host, GS_DT_U32, GS_PL_U32, 0, 1, 5000, 0, why,
                    sizeof why), "host: one row of 5000 keys is the flat sort (%s)", why);
    tap_ok(run_rows(&gs_algo_host, &host, GS_DT_I64, GS_PL_NONE, 0, 4, 70000, 1, why,
                    sizeof why), "host: 4 rows of 70000 keys, each on one thread (%s)", why);
    matrix(&gs_algo_vqsort, &host, 19, 300, "vqsort");

    /* empty rows: nothing to do, and fine */
    uint32_t k[12] = { 5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6 };
    gs_err err;
    gs_err_clear(&err);
    gs_sort_req e = { .shape = { .dtype = GS_DT_U32, .rows = 8 }, .n = 0, .keys = k };
    tap_ok(gs_sort_run(&gs_algo_host, &host, &e, NULL, NULL, &err) == 0,
           "8 rows of no keys: sorted, nothing touched (%s)", err.msg);

    /* rows that do not divide n: refused before anything is written */
    gs_sort_req bad = { .shape = { .dtype = GS_DT_U32, .rows = 5 }, .n = 12, .keys = k };
    gs_err_clear(&err);
    int rc = gs_sort_run(&gs_algo_host, &host, &bad, NULL, NULL, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "5 rows do not divide 12 keys") && k[0] == 5 &&
           k[11] == 6, "5 rows of 12 keys refused, keys untouched (%s)", err.msg);
    /* three rows of four: each sorted, none mixed with another */
    gs_sort_req three = { .shape = { .dtype = GS_DT_U32, .rows = 3 }, .n = 12, .keys = k };
    gs_err_clear(&err);
    rc = gs_sort_run(&gs_algo_host, &host, &three, NULL, NULL, &err);
    static const uint32_t want[12] = { 2, 3, 4, 5, 0, 1, 10, 11, 6, 7, 8, 9 };
    tap_ok(rc == 0 && !memcmp(k, want, sizeof want), "3 rows of 4: each sorted within itself");

    /* a device algorithm: rows one after another on the test device */
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *d = sc_test_device(&devs, &ndev, "test_rows");
    gs_sort_ctx dctx = { .dev = d };
    matrix(&gs_algo_radix, &dctx, 3, 700, "radix");
    /* a row the device refuses: the error names the row */
    gs_params p;
    gs_params_clear(&p);
    gs_params_set(&p, "radix_bits", 8);
    gs_params_set(&p, "wg_size", 64);
    gs_params_set(&p, "elems_per_thread", 4);
    uint64_t big[8] = { 0 };
    gs_sort_req r2 = { .shape = { .dtype = GS_DT_U64, .rows = 2 }, .n = 8, .keys = big };
    gs_err_clear(&err);
    gs_params_set(&p, "lookback", 7);
    rc = gs_sort_run(&gs_algo_radix, &dctx, &r2, &p, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "lookback=7"),
           "a parameter set the algorithm refuses is refused for the whole request (%s)",
           err.msg);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
