/* Tests of the device radix select (algo_select.c + kernels/select.cl) on
 * the first OpenCL device (PoCL in CI; GSORT_TEST_DEVICE=N picks another):
 * the descriptor and check() (top-k requests only, k up to 2048, its own
 * parameters); the first k of each row against the stable sort's first k
 * (sortcheck's reference: keys bit for bit, NaN patterns included, values,
 * indices) for every dtype, payload, order and distribution, with k of 1,
 * a few, a whole row, unsorted answers, many rows, one row over many tiles
 * (the ties' earliest-first rule across tiles), several parameter sets;
 * the answer in each row's first k places and the rest untouched; keys
 * rewritten between two rounds (the kernels read the caller's pages on a
 * CPU device) refused with nothing written and said so; one wait a
 * request (no blocking download or race flag read, gs_clrun_waits). A
 * missing device is a failure, never a skip. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_clrun.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static const gs_algo *A = &gs_algo_select;
static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32, GS_PL_IDX64 };

static void set2(gs_params *p, long wg, long per)
{
    gs_params_clear(p);
    gs_params_set(p, "wg_size", wg);
    gs_params_set(p, "per_item", per);
}

/* Every dtype x payload x order x distribution for one (rows, len, k) */
static void matrix(gs_sort_ctx *ctx, const gs_params *p, size_t rows, size_t len, size_t k,
                   int sorted, const char *who)
{
    for (int t = 0; t < GS_DT_COUNT; t++) {
        int bad = 0;
        char why[512] = "";
        for (size_t pi = 0; pi < sizeof pls / sizeof pls[0] && !bad; pi++)
            for (int desc = 0; desc < 2 && !bad; desc++)
                for (int dist = 0; dist < SC_DIST_COUNT && !bad; dist++)
                    bad = !sc_topk_check(A, ctx, p, (gs_dtype)t, pls[pi], desc, rows, len, k,
                                         sorted, dist, why, sizeof why);
        tap_ok(!bad, "%s: top %zu of %zu rows of %zu %s keys%s, every payload, order and "
               "distribution%s%s", who, k, rows, len, gs_dtype_name((gs_dtype)t),
               sorted ? "" : " (unsorted)", bad ? ": " : "", why);
    }
}

static int raced;
static void rewrite(void *arg)
{
    uint32_t *keys = arg;
    for (size_t i = 0; i < 5000; i++)
        keys[i] = UINT32_MAX;   /* every key now above the digit the first round chose */
    raced++;
}

int main(void)
{
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "test_devselect");
    gs_sort_ctx ctx = { .dev = dev };
    gs_params p, none;
    gs_params_clear(&none);
    gs_err err;
    char why[512] = "";

    tap_ok(A->uses_device && A->topk && A->stable && A->keeps_bits && A->not_tuned &&
           A->nparams == 2 && !strcmp(A->params[0].name, "wg_size") &&
           !strcmp(A->params[1].name, "per_item") && gs_algo_find("select") == A,
           "descriptor: device, top-k only, stable ties, keys' own bits, not tuned, wg_size "
           "and per_item, registered");
    uint32_t hundred[100] = { 0 };
    gs_sort_req flat = { .shape = { .dtype = GS_DT_U32 }, .n = 100, .keys = hundred };
    sc_expect_reject(A, dev, &flat, &none, GS_EUNSUPPORTED, "top-k requests only",
                     "a plain sort refused");
    gs_sort_req big = { .shape = { .dtype = GS_DT_U32, .topk = 1, .k = 2049 }, .n = 5000 };
    sc_expect_reject(A, dev, &big, &none, GS_EUNSUPPORTED, "k=2049", "k above 2048 refused");
    gs_sort_req many = { .shape = { .dtype = GS_DT_U32, .topk = 1, .k = 1,
                                    .rows = (UINT64_C(1) << 23) + 1 },
                         .n = (size_t)((UINT64_C(1) << 23) + 1) };
    sc_expect_reject(A, dev, &many, &none, GS_EUNSUPPORTED, "rows", "2^23 + 1 rows refused");
    gs_sort_req ok = { .shape = { .dtype = GS_DT_F64, .topk = 1, .k = 2048 }, .n = 5000 };
    gs_err_clear(&err);
    tap_ok(A->check(dev, &ok, &none, &err) == 0, "k = 2048 of 64-bit keys accepted (%s)",
           err.msg);
    set2(&p, 24, 4);
    sc_expect_reject(A, dev, &ok, &p, GS_EUNSUPPORTED, "wg_size=24", "wg_size=24 refused");
    set2(&p, 16, 3);
    sc_expect_reject(A, dev, &ok, &p, GS_EUNSUPPORTED, "per_item=3", "per_item=3 refused");
    gs_err_clear(&err);
    int rc = gs_sort_run(A, &ctx, &flat, NULL, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED, "gs_sort_run refuses a plain sort (%s)", err.msg);

    /* the defaults: a few, one key, a whole row, unsorted, many rows */
    matrix(&ctx, NULL, 5, 1000, 10, 1, "select");
    matrix(&ctx, NULL, 3, 333, 1, 1, "select");
    matrix(&ctx, NULL, 2, 100, 100, 1, "select");
    matrix(&ctx, NULL, 5, 1000, 17, 0, "select");
    matrix(&ctx, NULL, 64, 1, 1, 1, "select");
    /* small tiles: one row over many of them, ties taken across tiles */
    set2(&p, 16, 2);
    matrix(&ctx, &p, 2, 3000, 40, 1, "select wg 16, 2 a work-item");
    set2(&p, 32, 1);
    matrix(&ctx, &p, 1, 5000, 700, 1, "select wg 32, 1 a work-item");
    /* 2048, and many short rows */
    tap_ok(sc_topk_check(A, &ctx, NULL, GS_DT_F64, GS_PL_IDX64, 1, 1, 20000, 2048, 1,
                         SC_NANMIX, why, sizeof why), "top 2048 of 20000 f64, NaNs (%s)", why);
    tap_ok(sc_topk_check(A, &ctx, NULL, GS_DT_F32, GS_PL_IDX32, 0, 4000, 16, 3, 1,
                         SC_FSPECIAL, why, sizeof why), "top 3 of 4000 rows of 16 (%s)", why);

    /* the answer's places: each row's first k, the rest as it was */
    uint32_t k12[12] = { 5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6 };
    gs_sort_req two = { .shape = { .dtype = GS_DT_U32, .rows = 3, .topk = 1, .k = 2,
                                   .descending = 1 }, .n = 12, .keys = k12 };
    gs_err_clear(&err);
    unsigned long waits = gs_clrun_waits();
    rc = gs_sort_run(A, &ctx, &two, NULL, NULL, &err);
    waits = gs_clrun_waits() - waits;
    static const uint32_t want12[12] = { 5, 4, 3, 2, 11, 10, 11, 10, 9, 8, 7, 6 };
    tap_ok(rc == 0 && !memcmp(k12, want12, sizeof want12),
           "largest 2 of 3 rows of 4: 5 4 | 11 10 | 9 8, the rest untouched (%s)", err.msg);
    /* one wait a request (issue 36): positions, keys and the race flag
     * read behind the kernels, none of them waited for on its own */
    tap_ok(rc == 0 && waits == 0, "one wait: no blocking download or flag read (%lu made)",
           waits);

    /* a client rewriting its keys between two rounds: refused, nothing
     * written (on a GPU the kernels read a copy: the answer stands) */
    size_t n = 5000;
    uint32_t *keys = malloc(n * sizeof *keys);
    uint32_t *idx = malloc(n * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint32_t)(i * 2654435761u);
    memset(idx, 0xab, n * sizeof *idx);
    gs_sort_req rq = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .topk = 1,
                                  .k = 10 }, .n = n, .keys = keys, .values = idx };
    gs_select_dev_force_race(rewrite, keys);
    gs_sort_stats st;
    memset(&st, 0, sizeof st);
    gs_err_clear(&err);
    rc = gs_sort_run(A, &ctx, &rq, NULL, &st, &err);
    gs_select_dev_force_race(NULL, NULL);
    if (gs_clrun_hostile(dev)) {
        tap_ok(raced == 1 && rc == GS_EINVAL && idx[0] == 0xabababab,
               "keys rewritten between rounds: refused (%s), no index written", err.msg);
        /* the flag, read with the answers before the one wait, refuses
         * before anything is placed: the input said intact */
        tap_ok(rc == GS_EINVAL && !st.output_touched,
               "refused by the race flag read after the one wait: nothing placed, said so");
    } else {
        tap_ok(raced == 1 && rc == 0, "keys rewritten between rounds: the device's copy "
               "answered (%s)", err.msg);
        tap_ok(rc == 0 && st.output_touched, "the device's copy's answer placed, said so");
    }
    /* a launch failing midway (the third kernel): an error, the keys and
     * indices as they were, nothing said written (a fallback may rerun it) */
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint32_t)(i * 2654435761u);
    memset(idx, 0xab, n * sizeof *idx);
    gs_clrun_inject_fault(3, CL_OUT_OF_RESOURCES);
    gs_err_clear(&err);
    rc = gs_sort_run(A, &ctx, &rq, NULL, &st, &err);
    gs_clrun_inject_fault(0, CL_SUCCESS);
    tap_ok(rc < 0 && !st.output_touched && keys[1] == 2654435761u && idx[0] == 0xabababab,
           "a failed launch: an error (%s), the input intact and said so", err.msg);
    free(keys);
    free(idx);

    gs_dev_free_list(devs, ndev);
    return tap_done();
}
