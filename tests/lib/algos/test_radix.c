/* Tests of the OpenCL radix sort (algo_radix.c + kernels/radix.cl) on the
 * first OpenCL device (PoCL in CI; GSORT_TEST_DEVICE=N or =gpu picks
 * another): the shared correctness matrix for the default parameters and
 * for the extreme legal sets (smallest/largest radix_bits, wg_size and
 * elems_per_thread, odd tile shapes), check() on radix's own parameter
 * ranges and local-memory arithmetic (also against made-up device limits;
 * what every device algorithm refuses is tests/lib/algos/test_registry.c's), the
 * legal-value lists, pass skipping, argsort when no pass runs, and the
 * timing statistics; all of it with the onesweep path (lookback=1) too, its
 * fallback forced, and with and without the histogram read-back of larger
 * arrays; 32-bit key-value pairs ranked as one word and apart. A missing device is a failure, never a skip. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_narrow.h"
#include "radix_int.h"
#include "gs_sort.h"
#include "gs_clrun.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

static const gs_algo *const A = &gs_algo_radix;

/* ---- check(): radix's own parameter ranges (the rest: test_registry.c) ---- */

static void test_check(gs_dev *dev)
{
    const gs_dev_info *in = &dev->info;
    gs_params p;
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE },
                        .n = 4 }; /* check() only */
    gs_err err;
    int rc;

    sc_set3(A, &p, 0, 64, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "radix_bits=0", "radix_bits=0");
    sc_set3(A, &p, 9, 64, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "radix_bits=9", "radix_bits=9");
    sc_set3(A, &p, 8, 48, 4);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "power of two", "wg_size=48");
    sc_set3(A, &p, 8, 64, 0);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=0", "elems_per_thread=0");
    sc_set3(A, &p, 8, 64, 100000);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "elems_per_thread=100000",
                     "absurd elems_per_thread");
    /* the largest tile: accepted where the device has the local memory
     * (PoCL: 1 MiB), refused with a reason where it has not (GPUs: 48 KiB) */
    sc_set3(A, &p, 8, 1024, 32);
    gs_err_clear(&err);
    rc = gs_algo_radix.check(dev, NULL, &p, &err);
    tap_ok(in->max_wg_size < 1024 ? rc == GS_EUNSUPPORTED
           : in->local_mem >= 512 * 1024 ? rc == 0
           : rc == GS_EUNSUPPORTED && strstr(err.msg, "local memory") != NULL,
           "largest tile (1024 x 32) without a request: %s (%s)", gs_strerror(rc), err.msg);

    /* Limits from a made-up device: a GPU-like 48 KiB of local memory. */
    gs_dev fake = *dev;
    fake.info.local_mem = 48 * 1024;
    fake.info.max_wg_size = 1024;
    gs_sort_req r64 = { .shape = { .dtype = GS_DT_F64, .payload = GS_PL_U64 }, .n = 1000 };
    sc_set3(A, &p, 8, 1024, 32);
    sc_expect_reject(A, &fake, &r64, &p, GS_EUNSUPPORTED, "local memory",
                     "a tile overflowing 48 KiB of local memory");
    sc_set3(A, &p, 8, 256, 12);
    gs_err_clear(&err);
    tap_ok(gs_algo_radix.check(&fake, &r64, &p, &err) == 0,
           "256 x 12 fits 48 KiB with f64 keys and u64 values (%s)", err.msg);
    sc_set3(A, &p, 8, 256, 16);
    gs_sort_req r32 = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = 1000 };
    gs_err_clear(&err);
    tap_ok(gs_algo_radix.check(&fake, &r32, &p, &err) == 0 &&
               gs_algo_radix.check(&fake, &r64, &p, &err) == GS_EUNSUPPORTED,
           "256 x 16 fits 48 KiB for u32 keys, not for f64 keys with u64 values (%s)", err.msg);

    /* legal values come from the device limits */
    long vals[64];
    gs_dev_info li = *in;
    li.max_wg_size = 256;
    size_t nv = gs_algo_radix.params[1].values(&li, vals, 64);
    tap_ok(nv == 5 && vals[0] == 16 && vals[nv - 1] == 256,
           "wg_size values on a max-256 device: 16..256 (%zu values)", nv);
    li.max_wg_size = 4096;
    nv = gs_algo_radix.params[1].values(&li, vals, 64);
    tap_ok(nv == 7 && vals[nv - 1] == 1024, "wg_size values stop at 1024 (%zu values)", nv);
    nv = gs_algo_radix.params[0].values(&li, vals, 64);
    tap_ok(nv == 8 && vals[0] == 1 && vals[7] == 8, "radix_bits values 1..8");
    nv = gs_algo_radix.params[2].values(&li, vals, 64);
    tap_ok(nv > 4 && vals[0] == 1 && vals[nv - 1] == 32, "elems_per_thread values 1..32");

    /* lookback: 0 or 1, optional (older saved sets have no such name), and
     * offered to the tuner on GPUs only, with 2, the GPU default, so that
     * the defaults lie in the space a climb starts from (issue 33) */
    li.type = CL_DEVICE_TYPE_GPU;
    nv = gs_algo_radix.params[3].values(&li, vals, 64);
    tap_ok(nv == 3 && vals[0] == 0 && vals[1] == 1 && vals[2] == 2,
           "lookback values on a GPU: 0, 1, 2 (%zu)", nv);
    li.type = CL_DEVICE_TYPE_CPU;
    nv = gs_algo_radix.params[3].values(&li, vals, 64);
    tap_ok(nv == 1 && vals[0] == 0, "lookback values on a CPU: 0 (%zu)", nv);
    sc_set3(A, &p, 8, 64, 4);
    gs_params_set(&p, "lookback", 3);
    sc_expect_reject(A, dev, &req, &p, GS_EUNSUPPORTED, "lookback=3", "lookback=3");

    /* lookback=2, the GPU default: onesweep up to 2^21 keys where its
     * local memory fits the shape, else reduce-then-scan */
    gs_params d;
    li.type = CL_DEVICE_TYPE_GPU;
    gs_algo_radix.defaults(&li, &d);
    tap_ok(gs_params_get(&d, "lookback", -1) == 2, "GPU defaults: lookback=2 (%ld)",
           gs_params_get(&d, "lookback", -1));
    li.type = CL_DEVICE_TYPE_CPU;
    gs_algo_radix.defaults(&li, &d);
    tap_ok(gs_params_get(&d, "lookback", -1) == 0, "CPU defaults: lookback=0 (%ld)",
           gs_params_get(&d, "lookback", -1));
    {
        gs_dev_info gi = fake.info;   /* 48 KiB */
        gs_sort_req a32 = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE },
                            .n = (size_t)1 << 21 };
        gs_sort_req a64 = { .shape = { .dtype = GS_DT_U64, .payload = GS_PL_U64 }, .n = 1000 };
        sc_set3(A, &p, 8, 256, 14);
        gs_params_set(&p, "lookback", 2);
        int at = gs_radix_takes_lookback(&gi, &a32, &p, &err);
        a32.n++;
        int above = gs_radix_takes_lookback(&gi, &a32, &p, &err);
        int wide = gs_radix_takes_lookback(&gi, &a64, &p, &err);
        gs_err_clear(&err);
        int wide_ok = gs_algo_radix.check(&fake, &a64, &p, &err);
        gi.local_mem = 1 << 20;
        int wide_big = gs_radix_takes_lookback(&gi, &a64, &p, &err);
        tap_ok(at == 1 && above == 0 && wide == 0 && wide_ok == 0 && wide_big == 1,
               "lookback=2: onesweep at 2^21 keys (%d), not above (%d); u64+u64 in 48 KiB "
               "at 256 x 14 falls back (%d) and is accepted (%d); in 1 MiB it fits (%d)", at,
               above, wide, wide_ok, wide_big);
        gs_params_set(&p, "lookback", 1);
        a32.n = (size_t)1 << 30;
        int lb1_big = gs_radix_takes_lookback(&gi, &a32, &p, &err);
        a32.n--;
        int lb1_below = gs_radix_takes_lookback(&gi, &a32, &p, &err);
        gs_params_set(&p, "lookback", 0);
        a32.n = 1000;
        int lb0 = gs_radix_takes_lookback(&gi, &a32, &p, &err);
        tap_ok(lb1_big == 0 && lb1_below == 1 && lb0 == 0,
               "lookback=1: onesweep below 2^30 keys only (%d, %d); lookback=0 never (%d)",
               lb1_big, lb1_below, lb0);
    }
    /* 32-bit pairs ranked as one 64-bit word: 32-bit keys with 32-bit
     * values or indices on reduce-then-scan, where 8-byte slots fit */
    {
        gs_dev_info gi = fake.info;
        gi.local_mem = 48 * 1024;
        gs_sort_req kv = { .shape = { .dtype = GS_DT_F32, .payload = GS_PL_U32 },
                           .n = (size_t)1 << 22 };
        gs_sort_req ix = { .shape = { .dtype = GS_DT_I32, .payload = GS_PL_IDX32 },
                           .n = (size_t)1 << 22 };
        gs_sort_req k64 = { .shape = { .dtype = GS_DT_U64, .payload = GS_PL_U32 },
                            .n = (size_t)1 << 22 };
        gs_sort_req v64 = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U64 },
                            .n = (size_t)1 << 22 };
        sc_set3(A, &p, 8, 256, 14);
        gs_params_set(&p, "lookback", 0);
        int was = gs_radix_force_pairs(1);
        int on = gs_radix_takes_pairs(&gi, &kv, &p, &err) == 1 &&
                 gs_radix_takes_pairs(&gi, &ix, &p, &err) == 1;
        int wide = gs_radix_takes_pairs(&gi, &k64, &p, &err) + gs_radix_takes_pairs(&gi, &v64, &p, &err);
        gs_params_set(&p, "lookback", 1);
        int lb = gs_radix_takes_pairs(&gi, &kv, &p, &err);
        gs_params_set(&p, "lookback", 2);
        int lb2 = gs_radix_takes_pairs(&gi, &kv, &p, &err);
        kv.n = 1000;
        int lb2_small = gs_radix_takes_pairs(&gi, &kv, &p, &err);
        gs_params_set(&p, "lookback", 0);
        gs_dev fk = fake;   /* 256 x 14: pairs need 41,216 bytes, apart 32,928 */
        fk.info.local_mem = gi.local_mem = 36 * 1024;
        gs_err_clear(&err);
        int fits_kv = gs_algo_radix.check(&fk, &kv, &p, &err) == 0;
        int small_lm = gs_radix_takes_pairs(&gi, &kv, &p, &err);
        gi.local_mem = 48 * 1024;
        gs_radix_force_pairs(0);
        int off = gs_radix_takes_pairs(&gi, &kv, &p, &err);
        gs_radix_force_pairs(-1);
        gi.type = CL_DEVICE_TYPE_GPU;
        int gpu = gs_radix_takes_pairs(&gi, &kv, &p, &err);
        gi.type = CL_DEVICE_TYPE_CPU;
        int cpu = gs_radix_takes_pairs(&gi, &kv, &p, &err);
        gs_radix_force_pairs(was);
        tap_ok(on && wide == 0 && lb == 0 && lb2 == 1 && lb2_small == 0 && fits_kv &&
                   small_lm == 0 && off == 0 && gpu == 0 && cpu == 1,
               "pairs: f32+u32 and i32+idx32 (%d), not 64-bit keys or values (%d), not onesweep "
               "(%d; lookback=2: %d above 2^21, %d below), not where 8-byte slots miss local "
               "memory the set fits (%d, %d), not when forced off (%d); by default off on GPUs (%d), "
               "on for CPUs (%d)", on, wide, lb, lb2, lb2_small, fits_kv, small_lm, off, gpu, cpu);
    }
    sc_set3(A, &p, 8, 64, 4);
    gs_err_clear(&err);
    tap_ok(gs_algo_radix.check(dev, &req, &p, &err) == 0, "a set without lookback is accepted (%s)",
           err.msg);
    /* onesweep's tile counts and ticket: 4 x 256 + 4 bytes more local memory */
    fake.info.local_mem = 48 * 1024;
    long emax = 1;
    for (long e = 1; e <= 32; e++) {   /* the largest tile of 256 fitting f64/u64 */
        sc_set3(A, &p, 8, 256, e);
        if (gs_algo_radix.check(&fake, &r64, &p, &err) == 0)
            emax = e;
    }
    sc_set3(A, &p, 8, 256, emax);
    gs_params_set(&p, "lookback", 1);
    gs_err_clear(&err);
    rc = gs_algo_radix.check(&fake, &r64, &p, &err);
    fake.info.local_mem += 4 * 256 + 4;
    gs_err_clear(&err);
    int rc2 = gs_algo_radix.check(&fake, &r64, &p, &err);
    tap_ok(rc == GS_EUNSUPPORTED && rc2 == 0, "lookback=1 needs 1028 bytes more local memory "
           "(256 x %ld, f64/u64: %d, %d)", emax, rc, rc2);
}

/* ---- pass skipping and argsort without passes ---- */

/* Small arrays are sorted without reading the histogram back: every pass
 * runs, none is skipped, the result is the same. */
static void test_no_readback(gs_dev *dev, const gs_params *p)
{
    gs_sort_ctx ctx = { .dev = dev };
    gs_err err;
    gs_sort_stats st;
    size_t n = 100000;
    uint32_t *k = malloc(n * 4);
    if (!k)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++)
        k[i] = 0xabcd1200u | (((uint32_t)i * 2654435761u) >> 24);
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = n, .keys = k };
    gs_err_clear(&err);
    int rc = gs_sort_run(&gs_algo_radix, &ctx, &req, p, &st, &err);
    int ok = rc == 0;
    for (size_t i = 1; ok && i < n; i++)
        ok = k[i - 1] <= k[i] && (k[i] & 0xffffff00u) == 0xabcd1200u;
    long bits = gs_params_get(p, "radix_bits", 8);
    tap_ok(ok && st.passes_skipped == 0 && st.passes == (unsigned)((32 + bits - 1) / bits),
           "lookback=%ld, no read-back at n=%zu: %u passes run, %u skipped, sorted (%s)",
           gs_params_get(p, "lookback", 0), n, st.passes, st.passes_skipped,
           rc ? err.msg : "ok");
    free(k);
}

/* lookback=2 sorts correctly on both sides of its threshold (onesweep up to
 * 2^21 keys, reduce-then-scan above), as the decision says. */
static void test_auto(gs_dev *dev, const gs_params *defaults)
{
    gs_sort_ctx ctx = { .dev = dev };
    gs_params p = *defaults;
    gs_params_set(&p, "lookback", 2);
    const size_t sizes[] = { 5000, ((size_t)1 << 21) + 3 };
    for (size_t s = 0; s < 2; s++) {
        size_t n = sizes[s];
        uint32_t *k = malloc(n * 4), *v = malloc(n * 4), *in = malloc(n * 4);
        if (!k || !v || !in)
            tap_bail("out of memory");
        uint32_t x = 12345;
        for (size_t i = 0; i < n; i++) {
            x = x * 1664525u + 1013904223u;
            in[i] = k[i] = (x ^ (x >> 13)) & 0xfffff;   /* ties, for stability */
        }
        gs_sort_req req = {
            .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32 }, .n = n, .keys = k, .values = v
        };
        gs_err err;
        gs_err_clear(&err);
        int takes = gs_radix_takes_lookback(&dev->info, &req, &p, &err);
        gs_sort_stats st;
        int rc = gs_sort_run(&gs_algo_radix, &ctx, &req, &p, &st, &err);
        int ok = rc == 0;
        /* sorted, each index names its key's place in the input, and equal
         * keys keep their input order */
        for (size_t i = 0; ok && i < n; i++)
            ok = v[i] < n && in[v[i]] == k[i] &&
                 (i == 0 || k[i - 1] < k[i] || (k[i - 1] == k[i] && v[i - 1] < v[i]));
        tap_ok(ok && takes == (n <= ((size_t)1 << 21)),
               "lookback=2, n=%zu: sorted with stable indices, onesweep %d (%s)", n, takes,
               rc ? err.msg : "ok");
        free(k);
        free(v);
        free(in);
    }
}

static void test_skipping(gs_dev *dev, const gs_params *p)
{
    gs_sort_ctx ctx = { .dev = dev };
    gs_err err;
    gs_sort_stats st;
    size_t n = 100000;
    uint32_t *k = malloc(n * 4), *v = malloc(n * 4);
    uint64_t *k64 = malloc(n * 8), *v64 = malloc(n * 8);
    if (!k || !v || !k64 || !v64)
        tap_bail("out of memory");

    /* u32 keys that differ only in the low byte: 3 of 4 passes skipped */
    for (size_t i = 0; i < n; i++)
        k[i] = 0xabcd1200u | (((uint32_t)i * 2654435761u) >> 24);
    gs_sort_req req = {
        .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32 }, .n = n, .keys = k, .values = v
    };
    gs_err_clear(&err);
    int rc = gs_sort_run(&gs_algo_radix, &ctx, &req, p, &st, &err);
    int ok = rc == 0;
    for (size_t i = 1; ok && i < n; i++)
        ok = k[i - 1] < k[i] || (k[i - 1] == k[i] && v[i - 1] < v[i]);
    for (size_t i = 0; ok && i < n; i++)
        ok = (0xabcd1200u | ((v[i] * 2654435761u) >> 24)) == k[i];
    long bits = gs_params_get(p, "radix_bits", 8);
    unsigned npos = (unsigned)((32 + bits - 1) / bits);
    tap_ok(ok && st.passes_skipped >= 1 && st.passes + st.passes_skipped == npos &&
               st.passes == (unsigned)((8 + bits - 1) / bits),
           "u32 keys differing in the low byte: %u passes run, %u skipped, sorted (%s)",
           st.passes, st.passes_skipped, rc ? err.msg : "ok");

    /* i64 descending, only bits 8..15 vary */
    for (size_t i = 0; i < n; i++)
        k64[i] = (uint64_t)(-5 - (int64_t)(((i * 40503u) & 0xff) << 8));
    gs_sort_req r64 = { .shape = { .dtype = GS_DT_I64, .payload = GS_PL_NONE, .descending = 1 },
                        .n = n,
                        .keys = k64 };
    rc = gs_sort_run(&gs_algo_radix, &ctx, &r64, p, &st, &err);
    ok = rc == 0;
    for (size_t i = 1; ok && i < n; i++)
        ok = (int64_t)k64[i - 1] >= (int64_t)k64[i];
    tap_ok(ok && st.passes_skipped >= 1, "i64 descending with one varying byte: %u run, %u skipped",
           st.passes, st.passes_skipped);

    /* all keys equal: nothing runs, argsort still gives 0..n-1 */
    for (size_t i = 0; i < n; i++) {
        k64[i] = UINT64_C(0x4010000000000000);   /* 4.0 */
        v64[i] = UINT64_C(0xdeadbeef);
    }
    gs_sort_req req2 = {
        .shape = { .dtype = GS_DT_F64, .payload = GS_PL_IDX64 }, .n = n, .keys = k64, .values = v64
    };
    rc = gs_sort_run(&gs_algo_radix, &ctx, &req2, p, &st, &err);
    ok = rc == 0 && st.passes == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = v64[i] == i && k64[i] == UINT64_C(0x4010000000000000);
    tap_ok(ok, "all-equal f64 keys with idx64: no pass, indices 0..n-1 (%u run, %u skipped)",
           st.passes, st.passes_skipped);

    /* statistics of a real sort */
    for (size_t i = 0; i < n; i++) {
        k[i] = (uint32_t)(i * 2654435761u);
        v[i] = (uint32_t)i;
    }
    gs_sort_req req3 = {
        .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 }, .n = n, .keys = k, .values = v
    };
    rc = gs_sort_run(&gs_algo_radix, &ctx, &req3, p, &st, &err);
    ok = rc == 0;
    for (size_t i = 1; ok && i < n; i++)
        ok = k[i - 1] <= k[i] && k[i] == (uint32_t)((size_t)v[i] * 2654435761u);
    tap_ok(ok && st.passes == npos && (!dev->info.profiling || st.kernel_ms > 0) &&
               st.wall_ms >= st.kernel_ms,
           "stats: %u passes, upload %.3f ms, kernels %.3f ms, download %.3f ms, wall %.3f ms",
           st.passes, st.upload_ms, st.kernel_ms, st.download_ms, st.wall_ms);
    free(k);
    free(v);
    free(k64);
    free(v64);
}

/* A lean run (copied arrays): exact, with a kernel time from the span
 * between its transfers, within the wall time. */
static void test_lean(gs_dev *dev, const gs_params *p)
{
    sc_case c[2];
    gs_sort_stats st[2];
    int ok = 1;
    char why[256] = "";
    for (int l = 0; l < 2; l++) {
        if (sc_case_init(&c[l], GS_DT_U32, GS_PL_U32, 0, 50000, 0, 77))
            tap_bail("out of memory");
        gs_sort_ctx ctx = { .dev = dev, .lean = l };
        gs_err err;
        gs_err_clear(&err);
        memset(&st[l], 0, sizeof st[l]);
        if (gs_sort_run(A, &ctx, &c[l].req, p, &st[l], &err) < 0 ||
            !sc_case_verify(&c[l], 1, why, sizeof why)) {
            ok = 0;
            tap_diag("lean=%d: %s", l, err.msg[0] ? err.msg : why);
        }
        sc_case_free(&c[l]);
    }
    tap_ok(ok && st[1].kernel_ms > 0 && st[1].kernel_ms <= st[1].wall_ms &&
           st[0].kernel_ms > 0 && st[1].upload_ms > 0 && st[1].download_ms > 0,
           "radix, copied arrays, 50000 u32+u32: lean (kernels without events) exact, kernel "
           "span %.3f ms within its wall %.3f ms (timed run: %.3f ms in kernels)",
           st[1].kernel_ms, st[1].wall_ms, st[0].kernel_ms);
}

/* 16-bit codes (shape.narrow u16: the daemon's 8-bit keys' words, the
 * -DGS_K16 build): every payload, whole codes and their low 8 bits alone
 * (end_bit 8, one pass), against a stable counting sort; and what is
 * refused. Returns failing cases. */
static int test_half(gs_sort_ctx *ctx, const gs_params *p, const char *what)
{
    static const size_t sizes[] = { 1, 3, 1000, 4097, 65537 };
    static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                      GS_PL_IDX64 };
    const size_t most = 65537;
    uint16_t *k = malloc(most * 2), *want = malloc(most * 2);
    unsigned char *v = malloc(most * 8), *wv = malloc(most * 8);
    size_t *from = malloc(most * sizeof *from);
    if (!k || !want || !v || !wv || !from)
        tap_bail("out of memory");
    int fails = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t pi = 0; pi < sizeof pls / sizeof pls[0]; pi++)
            for (unsigned end = 0; end <= 8; end += 8) {
                const size_t n = sizes[si];
                const size_t vs = gs_payload_size(pls[pi]);
                const int idx = pls[pi] == GS_PL_IDX32 || pls[pi] == GS_PL_IDX64;
                uint32_t x = 12345u + (uint32_t)(n * 7 + pi + end);
                for (size_t i = 0; i < n; i++) {
                    x = x * 1664525u + 1013904223u;
                    /* many ties: half from 64 codes, half from all */
                    k[i] = (uint16_t)((i & 1) ? (x >> 16) : (x >> 26) * 1031u);
                    if (vs)     /* values of the payload's width */
                        gs_key_put(v, i, vs, (uint64_t)i * 0x9e3779b97f4a7c15ull);
                }
                /* stable counting sort by the sorted bits: the reference */
                if (sc_narrow_counting(GS_NW_U16, 0, end ? 0xffu : 0xffffu, k, n, want,
                                       from) < 0)
                    tap_bail("out of memory");
                for (size_t j = 0; vs && j < n; j++)
                    gs_key_put(wv, j, vs, idx ? (uint64_t)from[j] : gs_key_get(v, from[j], vs));
                gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = pls[pi],
                                               .narrow = GS_NW_U16, .end_bit = end },
                                    .n = n, .keys = k, .values = vs ? v : NULL };
                gs_sort_stats st;
                gs_err err;
                gs_err_clear(&err);
                int rc = gs_sort_run(&gs_algo_radix, ctx, &req, p, &st, &err);
                int ok = rc == 0 && !memcmp(k, want, n * 2) &&
                         (!vs || !memcmp(v, wv, n * vs)) &&
                         st.passes + st.passes_skipped <= (end ? 1u : 2u) * 8u /
                             (unsigned)gs_params_get(p, "radix_bits", 8) + 1u;
                if (!ok) {
                    fails++;
                    tap_ok(0, "%s: 16-bit codes n=%zu payload %s end_bit %u (%s)", what, n,
                           gs_payload_name(pls[pi]), end, rc ? err.msg : "wrong order");
                }
            }
    free(k);
    free(want);
    free(v);
    free(wv);
    free(from);
    tap_ok(fails == 0, "%s: 16-bit codes sorted as a stable counting sort, every payload, "
           "whole and by their low 8 bits (%d failing)", what, fails);
    return fails;
}

/* 16-bit keys of each type where they lie (shape.narrow: the daemon's
 * 16-bit keys), both orders, NaNs of several patterns, +-0, +-inf, with
 * their argsort indices: the order of gs_narrow_enc, stable, every NaN
 * decoded to the canonical one (the daemon puts their bits back). Returns
 * failing cases. */
static int test_narrow_typed(gs_sort_ctx *ctx, const gs_params *p, const char *what)
{
    static const int types[] = { GS_NW_U16, GS_NW_I16, GS_NW_F16, GS_NW_BF16 };
    static const uint16_t special[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00,
                                        0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x0001, 0x8001,
                                        0x7fff, 0xffff, 0x3c00, 0xbf80 };
    const size_t n = 5003;
    int fails = 0;
    uint16_t *k = malloc(n * 2), *in = malloc(n * 2), *want = malloc(n * 2);
    uint32_t *ix = malloc(n * 4);
    size_t *from = malloc(n * sizeof *from);
    if (!k || !in || !want || !ix || !from)
        tap_bail("out of memory");
    for (size_t ti = 0; ti < 4; ti++)
        for (int desc = 0; desc < 2; desc++) {
            const int t = types[ti];
            uint32_t x = 777u + (uint32_t)(ti * 2 + (size_t)desc);
            for (size_t i = 0; i < n; i++) {
                x = x * 1664525u + 1013904223u;
                in[i] = (x >> 28) < 5 ? special[(x >> 8) % 18] : (uint16_t)(x >> 12);
            }
            if (sc_narrow_counting(t, desc, 0xffffu, in, n, want, from) < 0)
                tap_bail("out of memory");
            memcpy(k, in, n * 2);
            gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32,
                                           .descending = desc, .narrow = t },
                                .n = n, .keys = k, .values = ix };
            gs_err err;
            gs_err_clear(&err);
            int rc = gs_sort_run(&gs_algo_radix, ctx, &req, p, NULL, &err);
            size_t bad = 0;
            while (!rc && bad < n && k[bad] == want[bad] && ix[bad] == from[bad])
                bad++;
            if (rc || bad < n) {
                fails++;
                tap_diag("%s: %s %s: %s (first difference at %zu)", what,
                         gs_narrow_row(t)->name, desc ? "desc" : "asc",
                         rc ? err.msg : "wrong order", bad);
            }
        }
    free(k);
    free(in);
    free(want);
    free(ix);
    free(from);
    tap_ok(fails == 0, "%s: u16, i16, f16 and bf16 keys where they lie, both orders, with "
           "indices: their order (NaNs canonical), stable (%d failing)", what, fails);
    return fails;
}

/* 16-bit keys alone, sorted by counting their codes (radix_count.c):
 * each type, both orders, sizes around the 8 keys a work-item counts and
 * past the count's table copies (2^20), codes uniform, a few (runs and
 * atomics on the same words) or one; against the counting reference and
 * against radix's own passes (gs_radix_force_count(0)), bit for bit.
 * Returns failing cases. */
static int test_count(gs_sort_ctx *ctx, const gs_params *p, const char *what)
{
    static const int types[] = { GS_NW_U16, GS_NW_I16, GS_NW_F16, GS_NW_BF16 };
    static const size_t sizes[] = { 1, 7, 8, 9, 1000, 5003, ((size_t)1 << 20) + 3 };
    static const uint16_t special[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00,
                                        0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x0001, 0x8001,
                                        0x7fff, 0xffff, 0x3c00, 0xbf80 };
    const size_t most = sizes[sizeof sizes / sizeof sizes[0] - 1];
    uint16_t *k = malloc(most * 2), *in = malloc(most * 2), *want = malloc(most * 2),
             *passes = malloc(most * 2);
    size_t *from = malloc(most * sizeof *from);
    if (!k || !in || !want || !passes || !from)
        tap_bail("out of memory");
    int fails = 0, cases = 0;
    for (size_t ti = 0; ti < 4; ti++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
            for (int dist = 0; dist < 3; dist++)
                for (int desc = 0; desc < 2; desc++) {
                    const int t = types[ti];
                    const size_t n = sizes[si];
                    if (n > 5003 && (ti & 1) != (size_t)desc)   /* the big size: 4 of 8 */
                        continue;
                    uint32_t x = 4242u + (uint32_t)(ti * 64 + si * 8 + (size_t)dist * 2) +
                                 (uint32_t)desc;
                    for (size_t i = 0; i < n; i++) {
                        x = x * 1664525u + 1013904223u;
                        in[i] = dist == 2 ? 0x3c00
                                : dist == 1 ? special[(x >> 24) % 6]
                                : (x >> 28) < 3 ? special[(x >> 8) % 18] : (uint16_t)(x >> 12);
                    }
                    if (sc_narrow_counting(t, desc, 0xffffu, in, n, want, from) < 0)
                        tap_bail("out of memory");
                    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .descending = desc,
                                                   .narrow = t },
                                        .n = n, .keys = k };
                    gs_sort_stats st;
                    gs_err err;
                    gs_err_clear(&err);
                    memcpy(passes, in, n * 2);
                    req.keys = passes;
                    gs_radix_force_count(0);
                    int rp = gs_sort_run(&gs_algo_radix, ctx, &req, p, NULL, &err);
                    gs_radix_force_count(1);    /* at every size */
                    memcpy(k, in, n * 2);
                    req.keys = k;
                    int rc = rp ? rp : gs_sort_run(&gs_algo_radix, ctx, &req, p, &st, &err);
                    cases++;
                    size_t bad = 0;
                    while (!rc && bad < n && k[bad] == want[bad] && k[bad] == passes[bad])
                        bad++;
                    if (rc || bad < n || (n > 1 && st.passes != 1)) {
                        fails++;
                        tap_diag("%s: counted %s %s n=%zu keys %s: %s (first difference at "
                                 "%zu, %u passes)", what, gs_narrow_row(t)->name,
                                 desc ? "desc" : "asc", n,
                                 dist == 2 ? "one" : dist == 1 ? "few" : "uniform",
                                 rc ? err.msg : "wrong order", bad, rc ? 0 : st.passes);
                    }
                }
    gs_radix_force_count(-1);
    free(k);
    free(in);
    free(want);
    free(passes);
    free(from);
    tap_ok(fails == 0, "%s: 16-bit keys alone counted: %d cases (u16, i16, f16, bf16; both "
           "orders; uniform, few and one code; 1 to 2^20+3 keys) as the reference and as "
           "radix's passes (%d failing)", what, cases, fails);
    return fails;
}

/* Where radix counts 16-bit keys alone by default (gs_radix_counts, the
 * test hook left at -1): a GPU from 2^20 keys, never a CPU device, never
 * with a payload or a bit range; and the hook overrides it both ways. */
static void test_count_default(gs_dev *dev)
{
    gs_dev_info gpu = dev->info, cpu = dev->info;
    gpu.type = CL_DEVICE_TYPE_GPU;
    cpu.type = CL_DEVICE_TYPE_CPU;
    gpu.local_mem = cpu.local_mem = 48 * 1024;      /* an H100's: a slice fits */
    gs_sort_req big = { .shape = { .dtype = GS_DT_U32, .narrow = GS_NW_F16 },
                        .n = (size_t)1 << 20 };
    gs_sort_req small = big, pay = big, bits = big, u32 = big;
    small.n = ((size_t)1 << 20) - 1;
    pay.shape.payload = GS_PL_U32;
    bits.shape.end_bit = 8;
    u32.shape.narrow = GS_NW_NONE;
    int old = gs_radix_force_count(-1);
    gs_dev_info tiny = gpu;
    tiny.local_mem = 1024;                          /* no slice of 2^8 counts fits */
    int g = gs_radix_counts(&gpu, &big), gs = gs_radix_counts(&gpu, &small),
        c = gs_radix_counts(&cpu, &big), gp = gs_radix_counts(&gpu, &pay),
        gb = gs_radix_counts(&gpu, &bits), gw = gs_radix_counts(&gpu, &u32),
        gt = gs_radix_counts(&tiny, &big);
    gs_radix_force_count(0);
    int off = gs_radix_counts(&gpu, &big);
    gs_radix_force_count(1);
    int on = gs_radix_counts(&cpu, &small);
    gs_radix_force_count(old);
    tap_ok(g == 1 && gs == 0 && c == 0 && gp == 0 && gb == 0 && gw == 0 && gt == 0 &&
           off == 0 && on == 1,
           "counting by default: a GPU from 2^20 f16 keys alone (%d), not below (%d), not a "
           "CPU device (%d), a payload (%d), a bit range (%d), u32 keys (%d) or a GPU without "
           "the local memory (%d); forced off %d, on %d", g, gs, c, gp, gb, gw, gt, off, on);
}

/* What a request of 16-bit keys must be, and who sorts them */
static void test_half_refused(gs_dev *dev)
{
    gs_sort_ctx ctx = { .dev = dev };
    uint16_t k[4] = { 3, 1, 2, 0 };
    gs_err err;
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .narrow = GS_NW_U16 }, .n = 4,
                        .keys = k };
    gs_err_clear(&err);
    int host = gs_sort_run(&gs_algo_host, &ctx, &req, NULL, NULL, &err);
    req.shape.narrow = GS_NW_U8;
    int u8 = gs_sort_run(&gs_algo_radix, &ctx, &req, NULL, NULL, &err);
    req.shape.narrow = GS_NW_F16;
    req.shape.end_bit = 8;
    int fbits = gs_sort_run(&gs_algo_radix, &ctx, &req, NULL, NULL, &err);
    req.shape.end_bit = 0;
    req.shape.dtype = GS_DT_I32;
    int i32 = gs_sort_run(&gs_algo_radix, &ctx, &req, NULL, NULL, &err);
    tap_ok(host == GS_EUNSUPPORTED && u8 == GS_EINVAL && fbits == GS_EUNSUPPORTED &&
           i32 == GS_EINVAL && k[0] == 3 && k[3] == 0,
           "16-bit keys: the host sort refuses them; u8 as a 16-bit type, f16 by a bit "
           "range or an i32 request are refused, the keys untouched (%d %d %d %d)", host, u8,
           fbits, i32);
}

int main(void)
{
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "radix");

    test_check(dev);
    test_count_default(dev);

    gs_sort_ctx ctx = { .dev = dev };
    gs_params p, plb;
    gs_algo_radix.defaults(&dev->info, &p);
    plb = p;
    gs_params_set(&plb, "lookback", 1);
    /* The look-back's counts take local memory the defaults (sized for
     * lookback=0) may not leave with 8-byte keys and values (the H200's
     * 48 KiB at elems_per_thread=14): fewer keys per work-item until the
     * widest shape fits. */
    {
        gs_sort_req wide = { .shape = { .dtype = GS_DT_U64, .payload = GS_PL_U64 }, .n = 1 };
        gs_err e;
        long ept = gs_params_get(&plb, "elems_per_thread", 16);
        gs_err_clear(&e);
        while (ept > 1 && gs_algo_radix.check(dev, &wide, &plb, &e) == GS_EUNSUPPORTED) {
            gs_params_set(&plb, "elems_per_thread", --ept);
            gs_err_clear(&e);
        }
        tap_diag("onesweep set: elems_per_thread %ld", ept);
    }
    /* skipping needs the read-back, which small arrays go without */
    size_t small_max = gs_radix_small_max(0);
    test_skipping(dev, &p);
    test_skipping(dev, &plb);
    /* this device's choice for 32-bit pairs on reduce-then-scan */
    gs_sort_req probe = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 },
                          .n = (size_t)1 << 22 };
    gs_err perr;
    gs_err_clear(&perr);
    const int pairs = gs_radix_takes_pairs(&dev->info, &probe, &p, &perr) == 1;
    tap_diag("32-bit pairs on this device: %s", pairs ? "as one word" : "apart");
    gs_radix_force_pairs(!pairs);
    test_skipping(dev, &p);
    gs_radix_force_pairs(-1);
    gs_radix_small_max(small_max);
    test_no_readback(dev, &p);
    test_no_readback(dev, &plb);
    test_auto(dev, &plb);

    /* The matrix: the defaults over every size; the extreme sets over a
     * reduced list that keeps the edge sizes, non-powers of two, and more
     * than one tile per group. */
    static const size_t reduced[] = { 0, 1, 2, 3, 31, 33, 255, 1000, 4097, 65537 };
    static const size_t small[] = { 0, 1, 2, 3, 33, 1000, 4097 };
    /* a 32768-key tile costs the same for n=2 as for n=32768 on a CPU */
    static const size_t bigtile[] = { 33, 65537 };
    long maxwg = (long)(dev->info.max_wg_size < 1024 ? dev->info.max_wg_size : 1024);
    static const sc_set sets[] = {   /* radix_bits, wg_size, elems_per_thread */
        { { 8, 1024, 32 }, SC_SIZES(bigtile) },  /* largest tile */
        { { 1, 16, 1 }, SC_SIZES(small) },       /* smallest everything */
        { { 4, 16, 32 }, SC_SIZES(reduced) },    /* one sub-digit, long rows */
        { { 7, 128, 3 }, SC_SIZES(reduced) },    /* 4+3 sub-digits, odd ept */
        { { 3, 32, 5 }, SC_SIZES(small) },       /* 11 passes for 32 bits */
    };
    double t0 = gs_now_s();
    int fails = sc_run_matrix(&gs_algo_radix, &ctx, &p, NULL, 0, "radix default");
    tap_diag("default set, full sizes: %.1f s", gs_now_s() - t0);
    fails += sc_run_sets(A, &ctx, sets, sizeof sets / sizeof sets[0], maxwg, 1, "radix", "set");
    /* The warp multisplit ranking, emulated with group barriers: the same
     * ranking NVIDIA GPUs run with PTX warp instructions (RANK_WARP=2, used
     * there by default), checked here on any device. */
    static const sc_set wsets[] = {
        { { 8, 64, 5 }, SC_SIZES(reduced) },   /* DPT 4, 2 warps */
        { { 3, 32, 2 }, SC_SIZES(small) },     /* RADIX < WG, 1 warp */
        { { 8, 256, 9 }, SC_SIZES(bigtile) },  /* 8 warps, 1 digit each */
    };
    gs_radix_force_rank(1);
    fails += sc_run_sets(A, &ctx, wsets, sizeof wsets / sizeof wsets[0], maxwg, 0,
                         "radix warp-ranked", "warp set");
    gs_radix_force_rank(-1);
    /* 32-bit pairs ranked as 64-bit words (the default on CPUs) and apart
     * (on GPUs): the other choice than this device's, on both rankings */
    gs_radix_force_pairs(!pairs);
    const char *other = pairs ? "radix pairs apart" : "radix pairs as words";
    fails += sc_run_matrix(A, &ctx, &p, reduced, sizeof reduced / sizeof reduced[0], other);
    fails += sc_run_sets(A, &ctx, sets + 3, 2, maxwg, 0, other, "set");
    gs_radix_force_rank(1);
    fails += sc_run_sets(A, &ctx, wsets, 1, maxwg, 0, other, "warp set");
    gs_radix_force_rank(-1);
    gs_radix_force_pairs(-1);

    /* Onesweep (lookback=1): the defaults; with the read-back (and pass
     * skipping) of larger arrays; odd shapes; every look-back falling back
     * to counting its predecessor's keys (tiles 1, 5, ... never publish:
     * what a device running one group at a time would give); and the warp
     * ranking. */
    fails += sc_run_matrix(A, &ctx, &plb, reduced, sizeof reduced / sizeof reduced[0],
                           "radix onesweep");
    gs_radix_small_max(0);
    fails += sc_run_matrix(A, &ctx, &plb, small, sizeof small / sizeof small[0],
                           "radix onesweep read-back");
    gs_radix_small_max((size_t)-1);
    /* As on a GPU in the daemon: the arrays copied into buffers of their
     * own, so the result's download is enqueued behind the kernels and the
     * sort waits once (gs_clrun_defer), NaN patterns restored before it;
     * the kernels launched without events (lean) */
    gs_clrun_no_adopt(1);
    gs_sort_ctx lean = { .dev = dev, .lean = 1 };
    fails += sc_run_matrix(A, &lean, &plb, small, sizeof small / sizeof small[0],
                           "radix onesweep, copied (one wait, lean)");
    fails += sc_run_matrix(A, &lean, &p, small, sizeof small / sizeof small[0],
                           "radix copied (one wait, lean)");
    fails += sc_check_nan_device(A, &lean, &plb);
    test_lean(dev, &p);
    gs_clrun_no_adopt(0);
    static const sc_set lsets[] = {
        { { 4, 16, 32, 1 }, SC_SIZES(small) },   /* 16-digit look-back words */
        { { 7, 128, 3, 1 }, SC_SIZES(small) },   /* radix 128 = wg */
        { { 3, 32, 5, 1 }, SC_SIZES(small) },    /* 11 passes, 11 tickets */
    };
    fails += sc_run_sets(A, &ctx, lsets, sizeof lsets / sizeof lsets[0], maxwg, 1,
                         "radix onesweep", "onesweep set");
    static const sc_set fsets[] = {
        { { 8, 32, 8, 1 }, SC_SIZES(small) },    /* 4097: 17 tiles */
        { { 5, 16, 2, 1 }, SC_SIZES(small) },    /* 4097: 129 tiles */
    };
    gs_radix_force_fallback(1);
    fails += sc_run_sets(A, &ctx, fsets, sizeof fsets / sizeof fsets[0], maxwg, 0,
                         "radix onesweep fallback", "fallback set");
    gs_radix_force_fallback(0);
    static const sc_set wlsets[] = {
        { { 8, 64, 5, 1 }, SC_SIZES(small) },
    };
    gs_radix_force_rank(1);
    fails += sc_run_sets(A, &ctx, wlsets, 1, maxwg, 0, "radix onesweep warp-ranked",
                         "onesweep warp set");
    gs_radix_force_rank(-1);
    fails += sc_check_nan_device(A, &ctx, &p);
    fails += sc_check_nan_device(A, &ctx, &plb);
    /* 16-bit codes: both scans, the warp ranking, an odd small set, and
     * copied into buffers of their own (as on a GPU) */
    test_half_refused(dev);
    fails += test_half(&ctx, &p, "radix");
    fails += test_half(&ctx, &plb, "radix onesweep");
    gs_radix_force_rank(1);
    fails += test_half(&ctx, &p, "radix warp-ranked");
    gs_radix_force_rank(-1);
    {
        gs_params odd;
        gs_params_clear(&odd);
        gs_params_set(&odd, "radix_bits", 3);
        gs_params_set(&odd, "wg_size", 32);
        gs_params_set(&odd, "elems_per_thread", 5);
        fails += test_half(&ctx, &odd, "radix 3/32/5");
    }
    gs_clrun_no_adopt(1);
    fails += test_half(&lean, &plb, "radix onesweep, copied (lean)");
    fails += test_narrow_typed(&lean, &p, "radix copied (lean)");
    gs_clrun_no_adopt(0);
    fails += test_narrow_typed(&ctx, &p, "radix");
    fails += test_narrow_typed(&ctx, &plb, "radix onesweep");
    fails += test_count(&ctx, &p, "radix");
    gs_clrun_no_adopt(1);
    fails += test_count(&lean, &plb, "radix copied (lean)");
    gs_clrun_no_adopt(0);
    tap_diag("matrix total: %.1f s, %d failing cases", gs_now_s() - t0, fails);

    gs_dev_free_list(devs, ndev);
    return tap_done();
}
