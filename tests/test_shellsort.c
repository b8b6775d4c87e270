/* Tests of the OpenCL Shellsort (algo_shellsort.c + kernels/shellsort.cl)
 * on the first OpenCL device (PoCL in CI; GSORT_TEST_DEVICE=N picks
 * another): check() rejecting every set a device cannot run before launch
 * (also against made-up device limits, GPU-like included), the legal-value
 * lists, that every phase really h-sorts (stopping after the phase of a
 * given increment, with several slices per subset, on reversed and other
 * adversarial inputs), the phase count and timing statistics, and the
 * shared correctness matrix (unstable checks) for the defaults over every
 * size and for the extreme legal sets over reduced size lists. A missing
 * device is a failure, never a skip. */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
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

static const gs_algo *A = &gs_algo_shellsort;

static void set3(gs_params *p, long tps, long mept, long wg)
{
    gs_params_clear(p);
    gs_params_set(p, "threads_per_subset", tps);
    gs_params_set(p, "min_elems_per_thread", mept);
    gs_params_set(p, "wg_size", wg);
}

/* Sedgewick's increments below n, written out (not by the formula). */
static const uint32_t sedgewick[] = {
    1, 5, 19, 41, 109, 209, 505, 929, 2161, 3905, 8929, 16001, 36289, 64769, 146305, 260609,
    587521, 1045505, 2354689, 4188161, 9427969, 16764929,
};

static unsigned phases_for(size_t n)
{
    unsigned c = 0;
    for (size_t i = 0; i < sizeof sedgewick / sizeof sedgewick[0]; i++)
        c += sedgewick[i] < n;
    return c;
}

/* A GPU-like device: 1024 work-items per group, 48 KiB of local memory,
 * 132 compute units. */
static gs_dev gpu_like(const gs_dev *dev)
{
    gs_dev gpu = *dev;
    gpu.info.type = CL_DEVICE_TYPE_GPU;
    gpu.info.max_wg_size = 1024;
    gpu.info.local_mem = 48 * 1024;
    gpu.info.local_mem_dedicated = 1;
    gpu.info.compute_units = 132;
    gpu.info.global_mem = UINT64_C(80) << 30;
    gpu.info.max_alloc = UINT64_C(20) << 30;
    return gpu;
}

/* ---- check(): rejections before launch ---- */

static int defaults_pass_everywhere(const gs_dev *dev, gs_err *err)
{
    gs_params d;
    A->defaults(&dev->info, &d);
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (int pl = 0; pl < GS_PL_COUNT; pl++) {
            gs_sort_req r = { .dtype = (gs_dtype)t, .payload = (gs_payload)pl, .n = 1000003 };
            if (A->check(dev, &r, &d, err) != 0)
                return 0;
        }
    return 1;
}

static void test_check(gs_dev *dev)
{
    const gs_dev_info *in = &dev->info;
    gs_params p;
    uint32_t k[4] = { 3, 1, 2, 0 };
    gs_sort_req req = { .dtype = GS_DT_U32, .payload = GS_PL_NONE, .n = 4, .keys = k };
    gs_err err;

    gs_err_clear(&err);
    tap_ok(defaults_pass_everywhere(dev, &err),
           "defaults pass check for every dtype and payload (%s)", err.msg);
    tap_ok(!A->stable && A->uses_device && A->nparams == 3 &&
           !strcmp(A->params[0].name, "threads_per_subset") &&
           !strcmp(A->params[1].name, "min_elems_per_thread") &&
           !strcmp(A->params[2].name, "wg_size") && gs_algo_find("shellsort") == A,
           "descriptor: unstable, device, the three named parameters, registered");

    set3(&p, 0, 4, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "threads_per_subset=0",
                     "threads_per_subset=0");
    set3(&p, 65537, 4, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "threads_per_subset=65537",
                     "threads_per_subset above 65536");
    set3(&p, 64, 0, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "min_elems_per_thread=0",
                     "min_elems_per_thread=0");
    set3(&p, 64, 4097, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "min_elems_per_thread=4097",
                     "min_elems_per_thread above 4096");
    set3(&p, 64, 4, 48);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "power of two", "wg_size=48");
    set3(&p, 64, 4, 8);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "wg_size=8", "wg_size=8 (below 16)");
    set3(&p, 64, 4, (long)in->max_wg_size * 2);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "CL_DEVICE_MAX_WORK_GROUP_SIZE",
                     "wg_size above the device maximum");
    gs_params_clear(&p);
    gs_params_set(&p, "threads_per_subset", 64);
    gs_params_set(&p, "wg_size", 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "missing parameter 'min_elems_per_thread'",
                     "a missing parameter");
    set3(&p, 64, 4, 64);
    gs_params_set(&p, "radix_bits", 8);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "unknown parameter 'radix_bits'",
                     "an unknown parameter");
    set3(&p, 64, 4, 64);
    sc_expect_reject(A, NULL, &req, &p, GS_EUNSUPPORTED, "device", "no device");
    gs_err_clear(&err);
    tap_ok(A->check(dev, &req, NULL, &err) == GS_EUNSUPPORTED && err.msg[0],
           "check rejects a NULL parameter set (%s)", err.msg);

    /* A GPU-like device: the GPU defaults must pass there. */
    gs_dev gpu = gpu_like(dev);
    gs_err_clear(&err);
    gs_params d;
    A->defaults(&gpu.info, &d);
    char ds[128];
    gs_params_format(&d, ds, sizeof ds);
    tap_ok(defaults_pass_everywhere(&gpu, &err) && gs_params_get(&d, "wg_size", 0) <= 1024,
           "GPU defaults (%s) pass check on a GPU-like device (1024 wg, 48 KiB, 132 CUs) (%s)",
           ds, err.msg);
    gpu.info.max_wg_size = 128;
    A->defaults(&gpu.info, &d);
    tap_ok(defaults_pass_everywhere(&gpu, &err) && gs_params_get(&d, "wg_size", 0) == 128,
           "defaults shrink wg_size to 128 for a max-128 device (%s)", err.msg);
    gpu.info.max_wg_size = 1024;
    set3(&p, 64, 4, 2048);
    sc_expect_reject(A, &gpu, &req, &p, GS_EUNSUPPORTED, "max work-group size",
                     "wg_size=2048 on a max-1024 device");

    /* Memory limits. */
    gs_dev fake = *dev;
    fake.info.max_alloc = 1 << 20;
    gs_sort_req rbig = { .dtype = GS_DT_U32, .payload = GS_PL_NONE, .n = 300000 };
    set3(&p, 64, 4, 64);
    sc_expect_reject(A, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                     "n x 4 bytes above a 1 MiB max allocation");
    rbig.n = 200000;
    rbig.payload = GS_PL_IDX64;
    sc_expect_reject(A, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
                     "n x 8-byte indices above a 1 MiB max allocation");
    fake = *dev;
    fake.info.global_mem = 3 << 20;
    rbig.n = 300000;   /* 2.4 MB of keys+indices, doubled for the scratch */
    sc_expect_reject(A, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_GLOBAL_MEM_SIZE",
                     "data plus scratch above a 3 MiB global memory");
    gs_sort_req rreal = { .dtype = GS_DT_U64, .payload = GS_PL_NONE,
                          .n = (size_t)(in->max_alloc / 8 + 1) };
    sc_expect_reject(A, dev, &rreal, &p, GS_ETOOBIG,
                     rreal.n > UINT64_C(0x7FFF0000) ? "32-bit indexing" : "max allocation",
                     "n beyond this device's max_alloc");
    fake = *dev;
    fake.info.max_alloc = fake.info.global_mem = UINT64_C(1) << 40;
    rreal.dtype = GS_DT_U32;
    rreal.n = (size_t)UINT64_C(0x80000000);
    sc_expect_reject(A, &fake, &rreal, &p, GS_ETOOBIG, "32-bit indexing",
                     "n = 2^31 (32-bit indexing)");
    rreal.n = (size_t)UINT64_C(0x7FFF0000);
    gs_err_clear(&err);
    tap_ok(A->check(&fake, &rreal, &p, &err) == 0, "n = 0x7FFF0000 accepted on a big device (%s)",
           err.msg);

    /* Legal values come from the device limits, and check accepts them all. */
    long vals[64];
    gs_dev_info li = *in;
    li.max_wg_size = 256;
    size_t nv = A->params[2].values(&li, vals, 64);
    tap_ok(nv == 5 && vals[0] == 16 && vals[nv - 1] == 256,
           "wg_size values on a max-256 device: 16..256 (%zu values)", nv);
    nv = A->params[2].values(in, vals, 64);
    int ok = nv >= 1 && vals[0] == 16 && (size_t)vals[nv - 1] <= in->max_wg_size &&
             (size_t)vals[nv - 1] * 2 > in->max_wg_size;
    for (size_t i = 0; ok && i < nv; i++) {
        set3(&p, 64, 4, vals[i]);
        ok = A->check(dev, &req, &p, &err) == 0;
    }
    tap_ok(ok, "wg_size values on this device run 16..%ld, all accepted", nv ? vals[nv - 1] : 0);
    nv = A->params[0].values(in, vals, 64);
    ok = nv == 17 && vals[0] == 1 && vals[16] == 65536;
    for (size_t i = 0; ok && i < nv; i++) {
        set3(&p, vals[i], 4, 64);
        ok = A->check(dev, &req, &p, &err) == 0 && (i == 0 || vals[i] > vals[i - 1]);
    }
    tap_ok(ok, "threads_per_subset values 1..65536 ascending, all accepted (%zu values)", nv);
    nv = A->params[1].values(in, vals, 64);
    ok = nv > 4 && vals[0] == 1 && vals[nv - 1] == 4096;
    for (size_t i = 0; ok && i < nv; i++) {
        set3(&p, 64, vals[i], 64);
        ok = A->check(dev, &req, &p, &err) == 0 && (i == 0 || vals[i] > vals[i - 1]);
    }
    tap_ok(ok, "min_elems_per_thread values 1..4096 ascending, all accepted (%zu values)", nv);

    /* Rejected runs leave the input alone. */
    set3(&p, 0, 4, 64);
    gs_sort_ctx ctx = { dev, NULL };
    gs_err_clear(&err);
    int rc = gs_sort_run(A, &ctx, &req, &p, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && k[0] == 3 && k[3] == 0,
           "gs_sort_run with a rejected set fails before touching the keys (%s)", err.msg);
    set3(&p, 64, 4, 64);
    req.stable = 1;
    rc = gs_sort_run(A, &ctx, &req, &p, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "stable") && k[0] == 3,
           "gs_sort_run refuses a request that needs stability (%s)", err.msg);
}

/* ---- each phase h-sorts ---- */

/* Every residue class mod h ascending (u32 keys), and (key, value) pairs
 * still those of the input (values are the input index here). */
static int check_hsorted(const uint32_t *k, const uint32_t *v, const uint32_t *in, size_t n,
                         size_t h, char *why, size_t wl)
{
    for (size_t i = h; i < n; i++)
        if (k[i - h] > k[i]) {
            snprintf(why, wl, "k[%zu]=%u > k[%zu]=%u", i - h, k[i - h], i, k[i]);
            return 0;
        }
    unsigned char *seen = calloc(n, 1);
    if (!seen)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++) {
        if (v[i] >= n || seen[v[i]] || in[v[i]] != k[i]) {
            snprintf(why, wl, "position %zu holds value %u, not a pair of the input", i, v[i]);
            free(seen);
            return 0;
        }
        seen[v[i]] = 1;
    }
    free(seen);
    return 1;
}

/* One input, phases first_h..last_h only, then the last_h-sorted check. */
static void hsort_case(gs_dev *dev, const char *name, const uint32_t *in, size_t n,
                       const gs_params *p, size_t first_h, size_t last_h, uint32_t *k, uint32_t *v)
{
    gs_sort_ctx ctx = { dev, NULL };
    memcpy(k, in, n * 4);
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    gs_sort_req req = { .dtype = GS_DT_U32, .payload = GS_PL_U32, .n = n, .keys = k, .values = v };
    gs_sort_stats st;
    gs_err err;
    gs_err_clear(&err);
    char why[256] = "", ps[128];
    gs_params_format(p, ps, sizeof ps);
    int rc = gs_shellsort_run_phases(&ctx, &req, p, first_h, last_h, &st, &err);
    /* this phase's subsets have about n/h elements: how many slices */
    long tps = gs_params_get(p, "threads_per_subset", 1);
    long mept = gs_params_get(p, "min_elems_per_thread", 1);
    size_t L = (n + last_h - 1) / last_h, T = (L + (size_t)mept - 1) / (size_t)mept;
    if (T > (size_t)tps)
        T = (size_t)tps;
    unsigned want = phases_for(first_h < n ? first_h + 1 : n) - phases_for(last_h);
    int ok = rc == 0 && st.passes == want && check_hsorted(k, v, in, n, last_h, why, sizeof why);
    tap_ok(ok, "%s, %s: %s h=%zu (%zu slices/subset, %u phases): %zu-sorted%s%s", name, ps,
           first_h == last_h ? "the single phase" : "Shellsort stopped after phase", last_h, T,
           st.passes, last_h, ok ? "" : ": ", ok ? "" : rc ? err.msg : why);
}

static void test_hsort(gs_dev *dev)
{
    const size_t n = 100003;
    uint32_t *in = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4);
    if (!in || !k || !v)
        tap_bail("out of memory");
    static const char *const names[] = { "reversed", "two descending runs", "random",
                                         "16 keys" };
    /* slices of 1, 3 and 37 elements, and T = 2 (no odd-round neighbours) */
    static const long sets[][3] = { { 65536, 1, 64 }, { 512, 3, 16 }, { 8, 37, 256 },
                                    { 2, 1, 32 } };
    for (int kind = 0; kind < 4; kind++) {
        uint64_t s = 12345;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            in[i] = kind == 0 ? (uint32_t)(n - i)
                    : kind == 1 ? (uint32_t)((i & 1) ? 3 * n - i : n - i)
                    : kind == 2 ? (uint32_t)(s >> 32) : (uint32_t)(s >> 60);
        }
        for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
            gs_params p;
            set3(&p, sets[si][0], sets[si][1], sets[si][2]);
            /* A single phase straight on the input: every subset needs the
             * merge rounds in full (reversed: T rounds moving whole slices).
             * One-element slices at h=1 would take 65536 rounds: not here. */
            static const size_t single[] = { 8929, 109, 19, 1 };
            for (size_t hi = 0; hi < sizeof single / sizeof single[0]; hi++)
                if (sets[si][1] > 1 || single[hi] >= 109)
                    hsort_case(dev, names[kind], in, n, &p, single[hi], single[hi], k, v);
            /* Shellsort from the top, stopped after a phase. */
            static const size_t stops[] = { 109, 5 };
            if (kind != 2)
                for (size_t hi = 0; hi < sizeof stops / sizeof stops[0]; hi++)
                    hsort_case(dev, names[kind], in, n, &p, SIZE_MAX, stops[hi], k, v);
        }
    }
    free(in);
    free(k);
    free(v);
}

/* ---- statistics and odd shapes ---- */

static void test_stats(gs_dev *dev, const gs_params *p)
{
    gs_sort_ctx ctx = { dev, NULL };
    size_t n = 1000003;
    uint64_t *k = malloc(n * 8), *v = malloc(n * 8);
    if (!k || !v)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++)
        k[i] = (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15);
    gs_sort_req req = { .dtype = GS_DT_U64, .payload = GS_PL_IDX64, .n = n, .keys = k,
                        .values = v };
    gs_sort_stats st;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(A, &ctx, &req, p, &st, &err);
    int ok = rc == 0;
    for (size_t i = 1; ok && i < n; i++)
        ok = k[i - 1] < k[i];
    for (size_t i = 0; ok && i < n; i++)
        ok = v[i] < n && k[i] == v[i] * UINT64_C(0x9e3779b97f4a7c15);
    tap_ok(ok && st.passes == phases_for(n) && st.passes == 17 &&
               (!dev->info.profiling || st.kernel_ms > 0) && st.upload_ms >= 0 &&
               st.download_ms >= 0 && st.wall_ms >= st.kernel_ms,
           "u64 idx64 n=%zu: %u phases (17 increments below n), upload %.3f ms, kernels "
           "%.3f ms, download %.3f ms, wall %.3f ms%s%s", n, st.passes, st.upload_ms,
           st.kernel_ms, st.download_ms, st.wall_ms, rc ? ": " : "", rc ? err.msg : "");

    /* n = 1: no phase at all, the index is still written */
    k[0] = 42;
    v[0] = 7;
    req.n = 1;
    rc = gs_sort_run(A, &ctx, &req, p, &st, &err);
    tap_ok(rc == 0 && k[0] == 42 && v[0] == 0 && st.passes == 0,
           "n=1: no phase, index 0 written (%u phases)", st.passes);
    free(k);
    free(v);
}

int main(void)
{
    double t_all = gs_now_s();
    gs_err err;
    gs_err_clear(&err);
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "shellsort");

    test_check(dev);
    double t0 = gs_now_s();
    test_hsort(dev);
    tap_diag("h-sort tests: %.1f s", gs_now_s() - t0);

    gs_sort_ctx ctx = { dev, NULL };
    gs_params p;
    A->defaults(&dev->info, &p);
    test_stats(dev, &p);

    /* The matrix: the defaults over every size; the extreme sets over
     * reduced lists keeping the edge sizes, non-powers of two and 65537. */
    static const size_t reduced[] = { 0, 1, 2, 3, 31, 33, 255, 1000, 4097, 65537 };
    static const size_t small[] = { 0, 1, 2, 3, 32, 33, 1000, 4097 };
    long maxwg = (long)dev->info.max_wg_size;
    while (maxwg & (maxwg - 1))
        maxwg &= maxwg - 1;
    struct { long tps, mept, wg; const size_t *sizes; size_t ns; } sets[] = {
        { 1, 1, 16, reduced, sizeof reduced / sizeof reduced[0] },         /* smallest: one
                                                                               work-item per subset */
        { 65536, 1, maxwg, reduced, sizeof reduced / sizeof reduced[0] },  /* most slices,
                                                                               largest groups */
        { 65536, 4096, 16, small, sizeof small / sizeof small[0] },        /* longest slices */
        { 2, 1, 32, small, sizeof small / sizeof small[0] },               /* T = 2 */
        { 0, 0, 0, reduced, sizeof reduced / sizeof reduced[0] },          /* GPU defaults */
        { 7, 5, 64, small, sizeof small / sizeof small[0] },               /* odd shapes */
    };
    t0 = gs_now_s();
    int fails = sc_run_matrix(A, &ctx, &p, NULL, 0, "shellsort default");
    tap_diag("default set, full sizes: %.1f s", gs_now_s() - t0);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        gs_params q;
        set3(&q, sets[i].tps, sets[i].mept, sets[i].wg);
        if (!sets[i].tps) {
            gs_dev gpu = gpu_like(dev);
            A->defaults(&gpu.info, &q);
        }
        double t1 = gs_now_s();
        fails += sc_run_matrix(A, &ctx, &q, sets[i].sizes, sets[i].ns, "shellsort");
        tap_diag("set %zu: %.1f s", i, gs_now_s() - t1);
    }
    tap_diag("matrix total: %.1f s, %d failing cases; whole test %.1f s", gs_now_s() - t0, fails,
             gs_now_s() - t_all);

    gs_dev_free_list(devs, ndev);
    return tap_done();
}
