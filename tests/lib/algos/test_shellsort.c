/* Tests of the OpenCL Shellsort (algo_shellsort.c + kernels/shellsort.cl)
 * on the first OpenCL device (PoCL in CI; GSORT_TEST_DEVICE=N picks
 * another): check() on shellsort's own parameter ranges (what every device
 * algorithm refuses is tests/lib/algos/test_registry.c's), the legal-value lists,
 * that every phase really h-sorts (stopping after the phase of a given
 * increment, with several slices per subset, on reversed and other
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
#include "gs_clrun.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

static const gs_algo *A = &gs_algo_shellsort;

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

/* ---- check(): shellsort's own parameter ranges (the rest: test_registry.c) ---- */

static void test_check(gs_dev *dev)
{
    const gs_dev_info *in = &dev->info;
    gs_params p;
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE },
                        .n = 4 }; /* check() only */
    gs_err err;

    tap_ok(!A->stable && A->uses_device && A->nparams == 3 &&
           !strcmp(A->params[0].name, "threads_per_subset") &&
           !strcmp(A->params[1].name, "min_elems_per_thread") &&
           !strcmp(A->params[2].name, "wg_size") && gs_algo_find("shellsort") == A,
           "descriptor: unstable, device, the three named parameters, registered");

    sc_set3(A, &p, 0, 4, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "threads_per_subset=0",
                     "threads_per_subset=0");
    sc_set3(A, &p, 65537, 4, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "threads_per_subset=65537",
                     "threads_per_subset above 65536");
    sc_set3(A, &p, 64, 0, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "min_elems_per_thread=0",
                     "min_elems_per_thread=0");
    sc_set3(A, &p, 64, 4097, 64);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "min_elems_per_thread=4097",
                     "min_elems_per_thread above 4096");
    sc_set3(A, &p, 64, 4, 48);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "power of two", "wg_size=48");

    /* A GPU-like device with groups of 128: the defaults take them all. */
    gs_dev gpu = sc_gpu_like(dev);
    gpu.info.max_wg_size = 128;
    gs_params d;
    A->defaults(&gpu.info, &d);
    tap_ok(gs_params_get(&d, "wg_size", 0) == 128,
           "defaults shrink wg_size to 128 for a max-128 device");

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
        sc_set3(A, &p, 64, 4, vals[i]);
        ok = A->check(dev, &req, &p, &err) == 0;
    }
    tap_ok(ok, "wg_size values on this device run 16..%ld, all accepted", nv ? vals[nv - 1] : 0);
    nv = A->params[0].values(in, vals, 64);
    ok = nv == 17 && vals[0] == 1 && vals[16] == 65536;
    for (size_t i = 0; ok && i < nv; i++) {
        sc_set3(A, &p, vals[i], 4, 64);
        ok = A->check(dev, &req, &p, &err) == 0 && (i == 0 || vals[i] > vals[i - 1]);
    }
    tap_ok(ok, "threads_per_subset values 1..65536 ascending, all accepted (%zu values)", nv);
    nv = A->params[1].values(in, vals, 64);
    ok = nv > 4 && vals[0] == 1 && vals[nv - 1] == 4096;
    for (size_t i = 0; ok && i < nv; i++) {
        sc_set3(A, &p, 64, vals[i], 64);
        ok = A->check(dev, &req, &p, &err) == 0 && (i == 0 || vals[i] > vals[i - 1]);
    }
    tap_ok(ok, "min_elems_per_thread values 1..4096 ascending, all accepted (%zu values)", nv);
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
    gs_sort_ctx ctx = { .dev = dev };
    memcpy(k, in, n * 4);
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    gs_sort_req req = {
        .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 }, .n = n, .keys = k, .values = v
    };
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
            sc_set3(A, &p, sets[si][0], sets[si][1], sets[si][2]);
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
    gs_sort_ctx ctx = { .dev = dev };
    size_t n = 1000003;
    uint64_t *k = malloc(n * 8), *v = malloc(n * 8);
    if (!k || !v)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++)
        k[i] = (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15);
    gs_sort_req req = { .shape = { .dtype = GS_DT_U64, .payload = GS_PL_IDX64 }, .n = n, .keys = k,
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
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "shellsort");

    test_check(dev);
    double t0 = gs_now_s();
    test_hsort(dev);
    tap_diag("h-sort tests: %.1f s", gs_now_s() - t0);

    gs_sort_ctx ctx = { .dev = dev };
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
    gs_dev gpu = sc_gpu_like(dev);
    gs_params g;
    A->defaults(&gpu.info, &g);
    const sc_set sets[] = {   /* threads_per_subset, min_elems_per_thread, wg_size */
        { { 1, 1, 16 }, SC_SIZES(reduced) },          /* smallest: one work-item per subset */
        { { 65536, 1, maxwg }, SC_SIZES(reduced) },   /* most slices, largest groups */
        { { 65536, 4096, 16 }, SC_SIZES(small) },     /* longest slices */
        { { 2, 1, 32 }, SC_SIZES(small) },            /* T = 2 */
        { { gs_params_get(&g, "threads_per_subset", 0), gs_params_get(&g, "min_elems_per_thread", 0),
            gs_params_get(&g, "wg_size", 0) }, SC_SIZES(reduced) },   /* GPU defaults */
        { { 7, 5, 64 }, SC_SIZES(small) },            /* odd shapes */
    };
    t0 = gs_now_s();
    int fails = sc_run_matrix(A, &ctx, &p, NULL, 0, "shellsort default");
    tap_diag("default set, full sizes: %.1f s", gs_now_s() - t0);
    fails += sc_run_sets(A, &ctx, sets, sizeof sets / sizeof sets[0], 0, 0, "shellsort", "set");
    /* As on a GPU in the daemon: copied arrays, the download enqueued before
     * the one wait, the kernels launched without events (lean) */
    gs_clrun_no_adopt(1);
    gs_sort_ctx lean = { .dev = dev, .lean = 1 };
    fails += sc_run_matrix(A, &lean, &p, small, sizeof small / sizeof small[0],
                           "shellsort copied (one wait, lean)");
    gs_clrun_no_adopt(0);
    tap_diag("matrix total: %.1f s, %d failing cases; whole test %.1f s", gs_now_s() - t0, fails,
             gs_now_s() - t_all);

    gs_dev_free_list(devs, ndev);
    return tap_done();
}
