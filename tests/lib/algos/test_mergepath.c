/* Tests of the OpenCL MergePath multisort (algo_mergepath.c +
 * kernels/mergepath.cl) on the first OpenCL device (PoCL in CI;
 * GSORT_TEST_DEVICE=N picks another): the shared correctness matrix for the
 * default parameters over every size and for the extreme legal sets
 * (smallest and largest size_i, wg_size and elems_per_thread, odd shapes
 * where blocks cross pairs and tiles are not powers of two) over a reduced
 * size list; stability on long runs of equal keys across many tiles; the
 * statistics (merge levels, kernel time); check() on mergepath's own
 * parameter ranges and local-memory arithmetic (also against a made-up
 * GPU-like device; what every device algorithm refuses is
 * tests/lib/algos/test_registry.c's); and the legal-value lists.
 * A missing device is a failure, never a skip. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "gs_clrun.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

static const gs_algo *const A = &gs_algo_mergepath;

/* ---- check(): mergepath's own parameter ranges (the rest: test_registry.c) ---- */

static void test_check(gs_dev *dev)
{
    const gs_dev_info *in = &dev->info;
    gs_params p, d;
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE },
                        .n = 4 }; /* check() only */
    gs_err err;

    sc_set3(A, &p, 0, 64, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "size_i=0", "size_i=0");
    sc_set3(A, &p, 33, 64, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "size_i=33", "size_i=33");
    sc_set3(A, &p, 32, 16, 1);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "exceeds the tile",
                     "size_i=32 above a 16-element tile");
    sc_set3(A, &p, 4, 64, 0);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=0", "elems_per_thread=0");
    sc_set3(A, &p, 4, 64, 33);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=33",
                     "elems_per_thread=33");
    sc_set3(A, &p, 4, 64, -5);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=-5",
                     "negative elems_per_thread");
    sc_set3(A, &p, 32, 1024, 32);
    gs_err_clear(&err);
    tap_ok(in->max_wg_size < 1024 || in->local_mem < 327680 || A->check(dev, NULL, &p, &err) == 0,
           "largest set (size_i 32, 1024 x 32) accepted without a request here (%s)", err.msg);

    /* A GPU-like device: max wg 1024, 48 KiB of local memory, 132 CUs. */
    gs_dev fake = sc_gpu_like(dev);
    A->defaults(&fake.info, &d);
    char buf[128];
    gs_params_format(&d, buf, sizeof buf);
    tap_ok(gs_params_get(&d, "wg_size", 0) >= 128,
           "GPU-like device (1024 wg, 48 KiB local): defaults %s use groups of 128 or more",
           buf);
    gs_sort_req r64 = { .shape = { .dtype = GS_DT_F64, .payload = GS_PL_U64 }, .n = 1000 };
    sc_set3(A, &p, 8, 1024, 8);
    sc_expect_reject(A, &fake, &r64, &p, GS_EUNSUPPORTED, "local memory",
                     "a 1024 x 8 tile of f64 keys + positions overflowing 48 KiB");
    gs_sort_req r32 = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = 1000 };
    sc_set3(A, &p, 8, 1024, 8);
    gs_err_clear(&err);
    tap_ok(A->check(&fake, &r32, &p, &err) == 0,
           "the same tile fits 48 KiB with u32 keys only (%s)", err.msg);

    /* legal values come from the device limits */
    long vals[64];
    gs_dev_info li = *in;
    li.max_wg_size = 256;
    int names = A->nparams == 3 && !strcmp(A->params[0].name, "size_i") &&
                !strcmp(A->params[1].name, "wg_size") &&
                !strcmp(A->params[2].name, "elems_per_thread");
    tap_ok(names, "parameters: size_i, wg_size, elems_per_thread");
    size_t nv = A->params[1].values(&li, vals, 64);
    tap_ok(nv == 5 && vals[0] == 16 && vals[nv - 1] == 256,
           "wg_size values on a max-256 device: 16..256 (%zu values)", nv);
    li.max_wg_size = 4096;
    nv = A->params[1].values(&li, vals, 64);
    tap_ok(nv == 7 && vals[nv - 1] == 1024, "wg_size values stop at 1024 (%zu values)", nv);
    nv = A->params[0].values(&li, vals, 64);
    int asc = 1;
    for (size_t i = 1; i < nv; i++)
        asc &= vals[i - 1] < vals[i];
    tap_ok(nv > 4 && asc && vals[0] == 1 && vals[nv - 1] == 32,
           "size_i values ascending 1..32 (%zu values)", nv);
    nv = A->params[2].values(&li, vals, 64);
    tap_ok(nv > 4 && vals[0] == 1 && vals[nv - 1] == 32, "elems_per_thread values 1..32");
    li.local_mem = 1024;
    nv = A->params[2].values(&li, vals, 64);
    tap_ok(nv > 0 && vals[nv - 1] * 16 * 10 <= 1024,
           "elems_per_thread values shrink with 1 KiB of local memory (largest %ld)",
           nv ? vals[nv - 1] : 0L);
}

/* ---- stability across tiles, statistics ---- */

static void test_runs(gs_dev *dev, const gs_params *p)
{
    gs_sort_ctx ctx = { .dev = dev };
    gs_err err;
    gs_sort_stats st;
    size_t n = 300007;
    uint32_t *k = malloc(n * 4), *v = malloc(n * 4);
    if (!k || !v)
        tap_bail("out of memory");

    /* three keys only, idx32: every run of equal keys spans many tiles and
     * every merge level; the indices inside each run must ascend */
    for (size_t i = 0; i < n; i++)
        k[i] = (uint32_t)((i * 2654435761u) >> 7) % 3;
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .stable = 1 },
                        .n = n, .keys = k, .values = v };
    gs_err_clear(&err);
    int rc = gs_sort_run(A, &ctx, &req, p, &st, &err);
    int ok = rc == 0;
    for (size_t i = 1; ok && i < n; i++)
        ok = k[i - 1] < k[i] || (k[i - 1] == k[i] && v[i - 1] < v[i]);
    for (size_t i = 0; ok && i < n; i++)
        ok = v[i] < n && k[i] == (uint32_t)(((size_t)v[i] * 2654435761u) >> 7) % 3;
    tap_ok(ok, "3 distinct keys, n=%zu, idx32: equal keys keep input order (%s)", n,
           rc ? err.msg : "ok");

    /* levels: blocks of size_i doubled until one run covers n */
    long size_i = gs_params_get(p, "size_i", 1);
    unsigned expect = 0;
    for (size_t w = (size_t)size_i; w < n; w *= 2)
        expect++;
    for (size_t i = 0; i < n; i++) {
        k[i] = (uint32_t)(i * 2654435761u);
        v[i] = (uint32_t)i;
    }
    gs_sort_req req2 = {
        .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 }, .n = n, .keys = k, .values = v
    };
    rc = gs_sort_run(A, &ctx, &req2, p, &st, &err);
    ok = rc == 0;
    for (size_t i = 1; ok && i < n; i++)
        ok = k[i - 1] <= k[i] && k[i] == (uint32_t)((size_t)v[i] * 2654435761u);
    unsigned lo = expect, hi = expect + 1; /* tiles need not be size_i x 2^k */
    tap_ok(ok && st.passes >= lo && st.passes <= hi &&
               (!dev->info.profiling || st.kernel_ms > 0) && st.upload_ms >= 0 &&
               st.download_ms >= 0 && st.wall_ms >= st.kernel_ms,
           "stats: %u merge levels (%u..%u), upload %.3f ms, kernels %.3f ms, download %.3f "
           "ms, wall %.3f ms", st.passes, lo, hi, st.upload_ms, st.kernel_ms, st.download_ms,
           st.wall_ms);

    /* a single element: no merge level */
    k[0] = 7;
    gs_sort_req one = { .shape = { .dtype = GS_DT_I64, .payload = GS_PL_IDX64 }, .n = 1,
                        .keys = (uint64_t[]){ 5 }, .values = (uint64_t[]){ 99 } };
    rc = gs_sort_run(A, &ctx, &one, p, &st, &err);
    tap_ok(rc == 0 && ((uint64_t *)one.values)[0] == 0 && ((uint64_t *)one.keys)[0] == 5 &&
               st.passes == 0,
           "n=1 i64 idx64: index 0, %u merge levels (%s)", st.passes, rc ? err.msg : "ok");
    free(k);
    free(v);
}

int main(void)
{
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "mergepath");

    test_check(dev);

    gs_sort_ctx ctx = { .dev = dev };
    gs_params p;
    A->defaults(&dev->info, &p);
    test_runs(dev, &p);

    /* The matrix: the defaults over every size; the extreme sets over a
     * reduced list that keeps the edge sizes, non-powers of two and several
     * global merge levels. */
    static const size_t reduced[] = { 0, 1, 2, 3, 31, 33, 255, 1000, 4097, 65537 };
    static const size_t small[] = { 0, 1, 2, 3, 33, 1000, 4097 };
    long maxwg = (long)(dev->info.max_wg_size < 1024 ? dev->info.max_wg_size : 1024);
    static const sc_set sets[] = {   /* size_i, wg_size, elems_per_thread */
        { { 32, 1024, 32 }, SC_SIZES(reduced) },  /* largest everything */
        { { 1, 16, 1 }, SC_SIZES(small) },        /* smallest everything */
        { { 3, 16, 13 }, SC_SIZES(reduced) },     /* outputs cross pairs */
        { { 5, 48, 3 }, SC_SIZES(reduced) },      /* odd, 144-element tiles */
        { { 2, 32, 7 }, SC_SIZES(small) },        /* the paper's size_i */
    };
    double t0 = gs_now_s();
    int fails = sc_run_matrix(A, &ctx, &p, NULL, 0, "mergepath default");
    tap_diag("default set, full sizes: %.1f s", gs_now_s() - t0);
    fails += sc_run_sets(A, &ctx, sets, sizeof sets / sizeof sets[0], maxwg, 1, "mergepath",
                         "set");
    fails += sc_check_nan_device(A, &ctx, &p);
    /* a group of 48: the NaN kernels' group scan on a non-power of two */
    gs_params odd;
    sc_set3(A, &odd, 5, 48, 3);
    sc_fit_set(A, &ctx, &odd);
    fails += sc_check_nan_device(A, &ctx, &odd);
    /* As on a GPU in the daemon: copied arrays, the download enqueued before
     * the one wait, the kernels launched without events (lean) */
    gs_clrun_no_adopt(1);
    gs_sort_ctx lean = { .dev = dev, .lean = 1 };
    fails += sc_run_matrix(A, &lean, &p, small, sizeof small / sizeof small[0],
                           "mergepath copied (one wait, lean)");
    fails += sc_check_nan_device(A, &lean, &p);
    gs_clrun_no_adopt(0);
    tap_diag("matrix total: %.1f s, %d failing cases", gs_now_s() - t0, fails);

    gs_dev_free_list(devs, ndev);
    return tap_done();
}
