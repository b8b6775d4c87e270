/* Tests of the local-memory bitonic sort (algo_bitonic.c +
 * kernels/bitonic.cl) on the first OpenCL device (PoCL in CI;
 * GSORT_TEST_DEVICE=N picks another): the descriptor, check() on its own
 * parameters and on rows longer than local memory holds (on this device and
 * on a made-up GPU's 48 KiB), the shared correctness matrix (stable: keys
 * bit for bit, NaN patterns included, with their values and indices) for
 * flat arrays up to the longest row it serves, and requests of equal rows
 * of many shapes and parameter sets (several rows a work-group, a row a
 * group, rows of one key, many tiny rows), each row against its own
 * reference. A missing device is a failure, never a skip. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static const gs_algo *A = &gs_algo_bitonic;

static void set3(gs_params *p, long wg, long tile, long run)
{
    gs_params_clear(p);
    gs_params_set(p, "wg_size", wg);
    gs_params_set(p, "tile", tile);
    gs_params_set(p, "run", run);
}

/* The longest row of `ks`-byte keys check() accepts on dev (a power of
 * two), by asking it. */
static size_t longest_row(const gs_dev *dev, gs_dtype t)
{
    gs_params none;
    gs_params_clear(&none);
    size_t best = 0;
    for (size_t len = 2; len <= ((size_t)1 << 20); len *= 2) {
        gs_sort_req req = { .shape = { .dtype = t }, .n = len };
        gs_err err;
        gs_err_clear(&err);
        if (A->check(dev, &req, &none, &err) == 0)
            best = len;
    }
    return best;
}

static void test_check(gs_dev *dev)
{
    tap_ok(A->stable && A->uses_device && A->rows && A->keeps_bits && A->nparams == 4 &&
           !strcmp(A->params[0].name, "wg_size") && !strcmp(A->params[1].name, "tile") &&
           !strcmp(A->params[2].name, "run") && !strcmp(A->params[3].name, "class_work") &&
           gs_algo_find("bitonic") == A,
           "descriptor: stable, device, whole rows, keys' own bits, wg_size, tile, run and "
           "class_work, registered");
    gs_params p;
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32 }, .n = 100 };
    set3(&p, 48, 1024, 8);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "wg_size=48", "wg_size=48");
    set3(&p, 16, 3000, 8);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "tile=3000", "tile=3000");
    set3(&p, 16, 32, 8);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "tile=32", "tile=32 (below 64)");
    set3(&p, 16, 64, 32);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "run=32", "run=32 (above 16)");
    set3(&p, 16, 64, 3);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "run=3", "run=3");

    /* a GPU's 48 KiB: 4096 keys of either width a group, no more */
    gs_dev gpu = sc_gpu_like(dev);
    gs_params none;
    gs_params_clear(&none);
    size_t l32 = longest_row(&gpu, GS_DT_U32), l64 = longest_row(&gpu, GS_DT_F64);
    tap_ok(l32 == 4096 && l64 == 4096, "48 KiB of local memory: rows up to 4096 keys of 32 "
           "and 64 bits (%zu, %zu)", l32, l64);
    gs_sort_req big = { .shape = { .dtype = GS_DT_U32 }, .n = 4097 };
    sc_expect_reject(A, &gpu, &big, &none, GS_EUNSUPPORTED, "rows of up to 4096",
                     "4097 keys on 48 KiB: says the longest row it serves");
    gs_sort_req rows = { .shape = { .dtype = GS_DT_U64, .rows = 1000 }, .n = 1000 * 4096 };
    gs_err err;
    gs_err_clear(&err);
    tap_ok(A->check(&gpu, &rows, &none, &err) == 0, "1000 rows of 4096 u64 keys accepted "
           "(the length of a row counts, not n) (%s)", err.msg);
    rows.n = 1000 * 5000;
    sc_expect_reject(A, &gpu, &rows, &none, GS_EUNSUPPORTED, "a row of 5000 keys",
                     "1000 rows of 5000 keys refused by the row's length");
}

int main(void)
{
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "test_bitonic");
    gs_sort_ctx ctx = { .dev = dev };
    test_check(dev);

    size_t most = longest_row(dev, GS_DT_U64);
    tap_diag("longest row on this device: %zu keys of 64 bits (local memory %llu bytes)", most,
             (unsigned long long)dev->info.local_mem);
    if (most < 4096)
        tap_bail("the test device holds rows of only %zu keys", most);

    /* flat arrays: one row, one group */
    static const size_t flat[] = { 0, 1, 2, 3, 31, 32, 33, 255, 1000, 4096 };
    sc_run_matrix(A, &ctx, NULL, SC_SIZES(flat), "bitonic defaults");
    gs_params p;
    set3(&p, 16, 64, 16);  /* a row wider than the tile: the tile grows to it; runs of 16 */
    static const size_t some[] = { 1, 33, 1000, 4096 };
    sc_run_matrix(A, &ctx, &p, SC_SIZES(some), "bitonic wg 16, tile 64, run 16");

    /* rows: several to a group, one a group, rows of one key */
    sc_rows_matrix(A, &ctx, NULL, 97, 33, 0, "defaults");
    set3(&p, 64, 4096, 2); /* 64 rows of 64 (padded) a group, the last part-filled; pairs */
    sc_rows_matrix(A, &ctx, &p, 200, 50, 0, "wg 64, tile 4096, run 2");
    set3(&p, 16, 64, 4);
    sc_rows_matrix(A, &ctx, &p, 5, 1000, 0, "wg 16, tile 64, run 4");
    char why[512] = "";
    tap_ok(sc_rows_check(A, &ctx, NULL, GS_DT_F32, GS_PL_IDX32, 1, 3000, 1, SC_NANMIX, why,
                         sizeof why), "3000 rows of one key (%s)", why);
    tap_ok(sc_rows_check(A, &ctx, NULL, GS_DT_I64, GS_PL_U64, 0, 3, 4096, SC_RANDOM, why,
                         sizeof why), "3 rows of 4096 keys, the longest (%s)", why);
    tap_ok(sc_rows_check(A, &ctx, NULL, GS_DT_U32, GS_PL_IDX32, 0, 65536, 16, SC_FEW16, why,
                         sizeof why), "65536 rows of 16 keys in one launch (%s)", why);

    /* one launch whatever the rows, and the statistics say so */
    uint32_t k[4 * 300];
    for (size_t i = 0; i < 4 * 300; i++)
        k[i] = (uint32_t)((i * 2654435761u) >> 7);
    gs_sort_req r = { .shape = { .dtype = GS_DT_U32, .rows = 4, .stable = 1 }, .n = 1200,
                      .keys = k };
    uint64_t sum[4] = { 0 };
    for (size_t i = 0; i < 4 * 300; i++)
        sum[i / 300] += k[i];
    gs_sort_stats st;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(A, &ctx, &r, NULL, &st, &err);
    int sorted = rc == 0;
    for (size_t row = 0; row < 4 && sorted; row++) {
        uint64_t s = 0;
        for (size_t i = 0; i < 300; i++) {
            s += k[row * 300 + i];
            sorted &= i == 0 || k[row * 300 + i - 1] <= k[row * 300 + i];
        }
        sorted &= s == sum[row];   /* no key moved to another row */
    }
    tap_ok(sorted && st.passes == 1 && st.output_touched,
           "4 rows of 300: each sorted on its own, one launch (passes %u) (%s)", st.passes,
           err.msg);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
