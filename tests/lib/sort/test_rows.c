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

int main(void)
{
    gs_sort_ctx host = { 0 };
    char why[512] = "";
    /* many short rows side by side, rows of one key, a single row */
    sc_rows_matrix(&gs_algo_host, &host, NULL, 97, 33, 0, "host");
    tap_ok(sc_rows_check(&gs_algo_host, &host, NULL, GS_DT_F64, GS_PL_IDX32, 1, 3000, 1, 0,
                         why, sizeof why), "host: 3000 rows of one key (%s)", why);
    tap_ok(sc_rows_check(&gs_algo_host, &host, NULL, GS_DT_U32, GS_PL_U32, 0, 1, 5000, 0,
                         why, sizeof why), "host: one row of 5000 keys is the flat sort (%s)",
           why);
    tap_ok(sc_rows_check(&gs_algo_host, &host, NULL, GS_DT_I64, GS_PL_NONE, 0, 4, 70000, 1,
                         why, sizeof why), "host: 4 rows of 70000 keys, each on one thread (%s)",
           why);
    sc_rows_matrix(&gs_algo_vqsort, &host, NULL, 19, 300, 1, "vqsort");

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
    sc_rows_matrix(&gs_algo_radix, &dctx, NULL, 3, 700, 0, "radix");
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
