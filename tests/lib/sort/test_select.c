/* Top-k (lib/sort/gs_select.c, and gs_sort_run's top-k for device
 * algorithms): the first k of each row in the request's order, against
 * the stable sort's first k (sortcheck's independent reference): every
 * dtype, payload, order and distribution (ties, NaN patterns, +-0), k of
 * 0, 1, a select's few, a large part of the row (sorted whole), and all of
 * it; rows side by side, one long row over several chunks; unsorted
 * results as the same pairs; k past a row refused before anything is
 * written; each row's answer in its first k places; a client rewriting its keys between the two passes caught; a
 * device algorithm's whole sort. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_select.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32, GS_PL_IDX64 };

/* Every dtype x payload x order x distribution for one (rows, len, k). */
static void matrix(const gs_algo *a, gs_sort_ctx *ctx, size_t rows, size_t len, size_t k,
                   int sorted, int keys_only, const char *who)
{
    for (int t = 0; t < GS_DT_COUNT; t++) {
        int bad = 0;
        char why[512] = "";
        for (size_t pi = 0; pi < sizeof pls / sizeof pls[0] && !bad; pi++) {
            if (keys_only && pls[pi] != GS_PL_NONE)
                continue;
            for (int desc = 0; desc < 2 && !bad; desc++)
                for (int dist = 0; dist < SC_DIST_COUNT && !bad; dist++)
                    bad = !sc_topk_check(a, ctx, NULL, (gs_dtype)t, pls[pi], desc, rows, len,
                                         k, sorted, dist, why, sizeof why);
        }
        tap_ok(!bad, "%s: top %zu of %zu rows of %zu %s keys%s, every payload, order and "
               "distribution%s%s", who, k, rows, len, gs_dtype_name((gs_dtype)t),
               sorted ? "" : " (unsorted)", bad ? ": " : "", why);
    }
}

static int raced;
static void rewrite(void *arg)
{
    uint32_t *keys = arg;
    for (size_t i = 0; i < 1000; i++)
        keys[i] = 0;            /* every key now below the k-th */
    raced++;
}

int main(void)
{
    gs_sort_ctx host = { 0 };
    char why[512] = "";
    const gs_algo *h = &gs_algo_host;

    /* a select's few, one key, none, a large part (sorted whole), all */
    matrix(h, &host, 5, 1000, 10, 1, 0, "host");
    matrix(h, &host, 3, 333, 1, 1, 0, "host");
    matrix(h, &host, 4, 200, 0, 1, 0, "host");
    matrix(h, &host, 2, 100, 60, 1, 0, "host");
    matrix(h, &host, 2, 64, 64, 1, 0, "host");
    matrix(h, &host, 5, 1000, 17, 0, 0, "host");
    matrix(h, &host, 64, 1, 1, 1, 0, "host");

    /* one long row: the passes in chunks over the pool, 64-bit and float keys */
    static const gs_dtype longt[] = { GS_DT_U32, GS_DT_F32, GS_DT_I64, GS_DT_F64 };
    for (size_t i = 0; i < 4; i++) {
        int ok = 1;
        for (int dist = 0; dist < SC_DIST_COUNT && ok; dist++)
            ok = sc_topk_check(h, &host, NULL, longt[i], i % 2 ? GS_PL_IDX64 : GS_PL_U32,
                               (int)i / 2, 1, (size_t)3 << 18, 1000, 1, dist, why, sizeof why);
        tap_ok(ok, "host: top 1000 of 786432 %s keys in chunks, every distribution%s%s",
               gs_dtype_name(longt[i]), ok ? "" : ": ", ok ? "" : why);
    }
    /* many short rows side by side, and rows of 32768 with k = 64 */
    tap_ok(sc_topk_check(h, &host, NULL, GS_DT_F32, GS_PL_IDX32, 1, 20000, 16, 3, 1,
                         SC_FSPECIAL, why, sizeof why), "host: top 3 of 20000 rows of 16 "
           "(%s)", why);
    tap_ok(sc_topk_check(h, &host, NULL, GS_DT_F32, GS_PL_IDX64, 1, 16, 32768, 64, 1,
                         SC_RANDOM, why, sizeof why), "host: top 64 of 16 rows of 32768 "
           "(%s)", why);

    /* rows long enough for the sampled cut, one per thread */
    tap_ok(sc_topk_check(h, &host, NULL, GS_DT_I64, GS_PL_IDX32, 0, 3, 70000, 100, 1,
                         SC_SAWTOOTH, why, sizeof why), "host: top 100 of 3 rows of 70000 "
           "(%s)", why);

#ifdef HAVE_VQSORT
    /* vqsort: the select the same; a large k sorts with vqsort, keys only */
    matrix(&gs_algo_vqsort, &host, 3, 500, 7, 1, 1, "vqsort");
    matrix(&gs_algo_vqsort, &host, 3, 500, 400, 1, 1, "vqsort");
#endif

    /* k past the row: refused, nothing written */
    uint32_t k12[12] = { 5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6 };
    gs_err err;
    gs_err_clear(&err);
    gs_sort_req bad = { .shape = { .dtype = GS_DT_U32, .rows = 3, .topk = 1, .k = 5 }, .n = 12,
                        .keys = k12 };
    int rc = gs_sort_run(h, &host, &bad, NULL, NULL, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "k=5") && strstr(err.msg, "rows of 4") &&
           k12[0] == 5 && k12[11] == 6, "top 5 of rows of 4 refused, keys untouched (%s)",
           err.msg);
    /* the answer's places: each row's first k, the rest as it was */
    gs_sort_req two = { .shape = { .dtype = GS_DT_U32, .rows = 3, .topk = 1, .k = 2,
                                   .descending = 1 }, .n = 12, .keys = k12 };
    gs_err_clear(&err);
    rc = gs_sort_run(h, &host, &two, NULL, NULL, &err);
    tap_ok(rc == 0 && k12[0] == 5 && k12[1] == 4 && k12[4] == 11 && k12[5] == 10 &&
           k12[8] == 9 && k12[9] == 8, "largest 2 of 3 rows of 4: 5 4 | 11 10 | 9 8 (%s)",
           err.msg);

    /* a client rewriting its keys between the passes: caught, nothing written */
    size_t n = 1000;
    uint32_t *keys = malloc(n * sizeof *keys);
    uint32_t *idx = malloc(n * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint32_t)(i * 2654435761u);
    memset(idx, 0xab, n * sizeof *idx);
    gs_sort_req rq = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .topk = 1,
                                  .k = 10 }, .n = n, .keys = keys, .values = idx };
    gs_select_force_race(rewrite, keys);
    gs_err_clear(&err);
    rc = gs_sort_run(h, &host, &rq, NULL, NULL, &err);
    gs_select_force_race(NULL, NULL);
    tap_ok(raced == 1 && rc == GS_EINVAL && idx[0] == 0xabababab,
           "keys rewritten between the passes: refused (%s), no index written", err.msg);
    free(keys);
    free(idx);

    /* a device algorithm sorts whole; its first k are the answer */
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "test_select");
    gs_sort_ctx dctx = { .dev = dev };
    tap_ok(sc_topk_check(&gs_algo_radix, &dctx, NULL, GS_DT_F64, GS_PL_IDX32, 1, 3, 5000, 20,
                         1, SC_NANMIX, why, sizeof why), "radix on %s: top 20 of 3 rows of "
           "5000 (%s)", dev->info.name, why);
    tap_ok(sc_topk_check(&gs_algo_radix, &dctx, NULL, GS_DT_U32, GS_PL_U64, 0, 1, 70000, 700,
                         1, SC_FEW16, why, sizeof why), "radix on %s: top 700 of 70000 (%s)",
           dev->info.name, why);
    gs_sort_req sh = { .shape = { .dtype = GS_DT_U32, .topk = 1, .k = 3 }, .n = 12,
                       .keys = k12 };
    gs_err_clear(&err);
    rc = gs_sort_run(&gs_algo_shellsort, &dctx, &sh, NULL, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "not stable"),
           "top-k with an unstable device algorithm refused (%s)", err.msg);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
