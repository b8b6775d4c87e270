/* Tests of the OpenCL MergePath multisort (algo_mergepath.c +
 * kernels/mergepath.cl) on the first OpenCL device (PoCL in CI;
 * GSORT_TEST_DEVICE=N picks another): the shared correctness matrix for the
 * default parameters over every size and for the extreme legal sets
 * (smallest and largest size_i, wg_size and elems_per_thread, odd shapes
 * where blocks cross pairs and tiles are not powers of two) over a reduced
 * size list; stability on long runs of equal keys across many tiles; the
 * statistics (merge levels, kernel time); check() rejecting every set a
 * device cannot run before launch (also against made-up device limits, and
 * accepting the defaults of a GPU-like device); and the legal-value lists.
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
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

static const gs_algo *const A = &gs_algo_mergepath;

static void set3(gs_params *p, long size_i, long wg, long ept)
{
    gs_params_clear(p);
    gs_params_set(p, "size_i", size_i);
    gs_params_set(p, "wg_size", wg);
    gs_params_set(p, "elems_per_thread", ept);
}

/* Does check() accept p for every dtype and payload at n? */
static int accepts_all(const gs_dev *dev, const gs_params *p, size_t n, gs_err *err)
{
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (int pl = 0; pl < GS_PL_COUNT; pl++) {
            gs_sort_req r = { .dtype = (gs_dtype)t, .payload = (gs_payload)pl, .n = n };
            if (A->check(dev, &r, p, err) != 0)
                return 0;
        }
    return 1;
}

/* ---- check(): rejections before launch ---- */

static void test_check(gs_dev *dev)
{
    const gs_dev_info *in = &dev->info;
    gs_params p, d;
    uint32_t k[4] = { 3, 1, 2, 0 };
    gs_sort_req req = { .dtype = GS_DT_U32, .payload = GS_PL_NONE, .n = 4, .keys = k };
    gs_err err;

    A->defaults(in, &d);
    gs_err_clear(&err);
    tap_ok(d.count == 3 && accepts_all(dev, &d, 1000, &err),
           "defaults pass check for every dtype and payload (%s)", err.msg);

    set3(&p, 0, 64, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "size_i=0", "size_i=0");
    set3(&p, 33, 64, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "size_i=33", "size_i=33");
    set3(&p, 32, 16, 1);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "exceeds the tile",
                     "size_i=32 above a 16-element tile");
    long big = (long)(in->max_wg_size > 1024 ? in->max_wg_size : 1024) * 2;
    set3(&p, 4, big, 1);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "wg_size", "wg_size above the maximum");
    set3(&p, 4, 8, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "wg_size=8", "wg_size=8 (below 16)");
    set3(&p, 4, 64, 0);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=0", "elems_per_thread=0");
    set3(&p, 4, 64, 33);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=33",
                     "elems_per_thread=33");
    set3(&p, 4, 64, -5);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=-5",
                     "negative elems_per_thread");
    gs_params_clear(&p);
    gs_params_set(&p, "size_i", 4);
    gs_params_set(&p, "wg_size", 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "missing parameter 'elems_per_thread'",
                     "a missing parameter");
    set3(&p, 4, 64, 4);
    gs_params_set(&p, "radix_bits", 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "unknown parameter 'radix_bits'",
                     "an unknown parameter");
    set3(&p, 4, 64, 4);
    sc_expect_reject(A, NULL, &req, &p, GS_EUNSUPPORTED, "device", "no device");
    set3(&p, 32, 1024, 32);
    gs_err_clear(&err);
    tap_ok(in->max_wg_size < 1024 || in->local_mem < 327680 || A->check(dev, NULL, &p, &err) == 0,
           "largest set (size_i 32, 1024 x 32) accepted without a request here (%s)", err.msg);

    /* A GPU-like device: max wg 1024, 48 KiB of local memory, 132 CUs. */
    gs_dev fake = *dev;
    fake.info.type = CL_DEVICE_TYPE_GPU;
    fake.info.local_mem = 48 * 1024;
    fake.info.max_wg_size = 1024;
    fake.info.compute_units = 132;
    fake.info.max_alloc = UINT64_C(20) << 30;
    fake.info.global_mem = UINT64_C(80) << 30;
    A->defaults(&fake.info, &d);
    char buf[128];
    gs_params_format(&d, buf, sizeof buf);
    gs_err_clear(&err);
    tap_ok(accepts_all(&fake, &d, (size_t)1 << 28, &err) &&
               gs_params_get(&d, "wg_size", 0) >= 128,
           "GPU-like device (1024 wg, 48 KiB local): defaults %s accepted everywhere, "
           "n = 2^28 too (%s)", buf, err.msg);
    gs_sort_req r64 = { .dtype = GS_DT_F64, .payload = GS_PL_U64, .n = 1000 };
    set3(&p, 8, 1024, 8);
    sc_expect_reject(A, &fake, &r64, &p, GS_EUNSUPPORTED, "local memory",
                     "a 1024 x 8 tile of f64 keys + positions overflowing 48 KiB");
    gs_sort_req r32 = { .dtype = GS_DT_U32, .payload = GS_PL_NONE, .n = 1000 };
    set3(&p, 8, 1024, 8);
    gs_err_clear(&err);
    tap_ok(A->check(&fake, &r32, &p, &err) == 0,
           "the same tile fits 48 KiB with u32 keys only (%s)", err.msg);
    fake.info.local_mem = 4096;
    A->defaults(&fake.info, &d);
    gs_err_clear(&err);
    tap_ok(accepts_all(&fake, &d, 1000, &err),
           "defaults shrink to fit 4 KiB of local memory (%s)", err.msg);
    fake.info.max_wg_size = 64;
    A->defaults(&fake.info, &d);
    gs_err_clear(&err);
    tap_ok(gs_params_get(&d, "wg_size", 0) <= 64 && accepts_all(&fake, &d, 1000, &err),
           "defaults fit a max work-group size of 64 (%s)", err.msg);

    fake = *dev;
    fake.info.max_alloc = 1 << 20;
    gs_sort_req rbig = { .dtype = GS_DT_U32, .payload = GS_PL_NONE, .n = 300000 };
    set3(&p, 4, 64, 4);
    sc_expect_reject(A, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                     "n x 4 bytes above a 1 MiB max allocation");
    rbig.n = 200000;
    rbig.payload = GS_PL_IDX64;
    sc_expect_reject(A, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                     "n x 8-byte indices above a 1 MiB max allocation");
    fake = *dev;
    fake.info.global_mem = 4 << 20;
    rbig.n = 300000;
    rbig.payload = GS_PL_U32;
    sc_expect_reject(A, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_GLOBAL_MEM_SIZE",
                     "double-buffered keys and values above 4 MiB of global memory");
    gs_sort_req rreal = { .dtype = GS_DT_U64, .payload = GS_PL_NONE,
                          .n = (size_t)(in->max_alloc / 8 + 1) };
    sc_expect_reject(A, dev, &rreal, &p, GS_ETOOBIG,
                     rreal.n > UINT64_C(0xFFFF0000) ? "32-bit positions" : "max allocation",
                     "n beyond this device's max_alloc");
    rreal.dtype = GS_DT_U32;
    rreal.n = (size_t)UINT64_C(0x100000000);
    fake = *dev;
    fake.info.max_alloc = fake.info.global_mem = UINT64_C(1) << 40;
    sc_expect_reject(A, &fake, &rreal, &p, GS_ETOOBIG, "32-bit positions",
                     "n = 2^32 (32-bit positions)");

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

    /* a rejected run leaves the input alone */
    set3(&p, 0, 64, 4);
    gs_sort_ctx ctx = { dev, NULL };
    gs_err_clear(&err);
    int rc = gs_sort_run(A, &ctx, &req, &p, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && k[0] == 3 && k[3] == 0,
           "gs_sort_run with a rejected set fails before touching the keys (%s)", err.msg);
}

/* ---- stability across tiles, statistics ---- */

static void test_runs(gs_dev *dev, const gs_params *p)
{
    gs_sort_ctx ctx = { dev, NULL };
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
    gs_sort_req req = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .n = n, .keys = k,
                        .values = v, .stable = 1 };
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
    gs_sort_req req2 = { .dtype = GS_DT_U32, .payload = GS_PL_U32, .n = n, .keys = k, .values = v };
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
    gs_sort_req one = { .dtype = GS_DT_I64, .payload = GS_PL_IDX64, .n = 1,
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
    gs_err err;
    gs_err_clear(&err);
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "mergepath");

    test_check(dev);

    gs_sort_ctx ctx = { dev, NULL };
    gs_params p;
    A->defaults(&dev->info, &p);
    test_runs(dev, &p);

    /* The matrix: the defaults over every size; the extreme sets over a
     * reduced list that keeps the edge sizes, non-powers of two and several
     * global merge levels. */
    static const size_t reduced[] = { 0, 1, 2, 3, 31, 33, 255, 1000, 4097, 65537 };
    static const size_t small[] = { 0, 1, 2, 3, 33, 1000, 4097 };
    long maxwg = (long)(dev->info.max_wg_size < 1024 ? dev->info.max_wg_size : 1024);
    struct { long size_i, wg, ept; const size_t *sizes; size_t ns; } sets[] = {
        { 32, 1024, 32, reduced, sizeof reduced / sizeof reduced[0] }, /* largest everything */
        { 1, 16, 1, small, sizeof small / sizeof small[0] },          /* smallest everything */
        { 3, 16, 13, reduced, sizeof reduced / sizeof reduced[0] },   /* outputs cross pairs */
        { 5, 48, 3, reduced, sizeof reduced / sizeof reduced[0] },    /* odd, 144-element tiles */
        { 2, 32, 7, small, sizeof small / sizeof small[0] },          /* the paper's size_i */
    };
    double t0 = gs_now_s();
    int fails = sc_run_matrix(A, &ctx, &p, NULL, 0, "mergepath default");
    tap_diag("default set, full sizes: %.1f s", gs_now_s() - t0);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        long wg = sets[i].wg > maxwg ? maxwg : sets[i].wg;
        gs_params q;
        set3(&q, sets[i].size_i, wg, sets[i].ept);
        /* too big for this device (never on PoCL): a smaller tile or group */
        sc_fit_set(A, &ctx, &q);
        if (A->check(dev, NULL, &q, &err) != 0)
            tap_bail("set %zu does not fit this device: %s", i, err.msg);
        double t1 = gs_now_s();
        fails += sc_run_matrix(A, &ctx, &q, sets[i].sizes, sets[i].ns, "mergepath");
        tap_diag("set %zu: %.1f s", i, gs_now_s() - t1);
    }
    tap_diag("matrix total: %.1f s, %d failing cases", gs_now_s() - t0, fails);

    gs_dev_free_list(devs, ndev);
    return tap_done();
}
