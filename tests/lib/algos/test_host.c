/* Tests of the host sort and the sort front end: the full standard matrix
 * for gs_algo_host against the independent reference, on one chunk and cut
 * into 2, 3 and 4 chunks (more than this machine may have cores: chunks
 * then take turns on the threads there are) with each digit width, at
 * sizes around the chunk boundaries; concurrent sorts sharing the thread
 * pool; the verifier itself catching planted errors (so a green matrix
 * means something), pass skipping, allocation failure leaving the input
 * alone, request validation, parameter text round trips and errors, the
 * registry and the host's parameter check. */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gs_algos.h"
#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_scratch.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static void test_verifier(void)
{
    sc_case c;
    char why[512];
    gs_err err;
    if (sc_case_init(&c, GS_DT_F32, GS_PL_U32, 0, 1000, SC_FEW16, 42) < 0)
        tap_bail("sc_case_init failed");
    gs_err_clear(&err);
    int rc = gs_sort_run(&gs_algo_host, NULL, &c.req, NULL, NULL, &err);
    tap_ok(rc == 0 && sc_case_verify(&c, 1, why, sizeof why),
           "verifier: host result on a case passes (%s)", rc ? err.msg : why);

    /* Two equal keys with different values swapped: unstable-correct, not
     * stable-correct. */
    uint32_t *k = c.req.keys, *v = c.req.values;
    size_t i = 0;
    while (i + 1 < 1000 && k[i] != k[i + 1])
        i++;
    uint32_t t = v[i];
    v[i] = v[i + 1];
    v[i + 1] = t;
    tap_ok(!sc_case_verify(&c, 1, why, sizeof why) && strstr(why, "value"),
           "verifier: stable check catches swapped equal-key values (%s)", why);
    tap_ok(sc_case_verify(&c, 0, why, sizeof why),
           "verifier: unstable check accepts them (%s)", why);

    /* A value that belongs to no input pair. */
    v[500] ^= 0x10000;
    tap_ok(!sc_case_verify(&c, 0, why, sizeof why),
           "verifier: unstable check catches a changed value (%s)", why);
    v[500] ^= 0x10000;

    /* Out of order keys. */
    size_t j = 0;
    while (j + 1 < 1000 && k[j] == k[j + 1])
        j++;
    t = k[j];
    k[j] = k[j + 1];
    k[j + 1] = t;
    tap_ok(!sc_case_verify(&c, 1, why, sizeof why) && !sc_case_verify(&c, 0, why, sizeof why),
           "verifier: both checks catch out-of-order keys (%s)", why);
    k[j + 1] = k[j];
    k[j] = t;

    /* Writing one element past the end. */
    k[1000] = 0;
    tap_ok(!sc_case_verify(&c, 1, why, sizeof why) && strstr(why, "past the end"),
           "verifier: a write past n is caught (%s)", why);
    sc_case_free(&c);

    /* NaN payloads: a stable sort must keep each NaN's exact bits. */
    if (sc_case_init(&c, GS_DT_F64, GS_PL_IDX64, 1, 4097, SC_FSPECIAL, 7) < 0)
        tap_bail("sc_case_init failed");
    rc = gs_sort_run(&gs_algo_host, NULL, &c.req, NULL, NULL, &err);
    tap_ok(rc == 0 && sc_case_verify(&c, 1, why, sizeof why),
           "verifier: host f64 desc idx64 with NaN payloads passes (%s)", why);
    uint64_t *k64 = c.req.keys, *ix = c.req.values;
    size_t a = 0, b;
    while (a < 4097 && (k64[a] & UINT64_C(0x7fffffffffffffff)) <= UINT64_C(0x7ff0000000000000))
        a++;
    b = a + 1;
    while (b < 4097 && k64[b] == k64[a])
        b++;
    int found = b < 4097 && (k64[b] & UINT64_C(0x7fffffffffffffff)) > UINT64_C(0x7ff0000000000000);
    if (found) {
        uint64_t tk = k64[a], ti = ix[a];
        k64[a] = k64[b];
        ix[a] = ix[b];
        k64[b] = tk;
        ix[b] = ti;
    }
    tap_ok(found && !sc_case_verify(&c, 1, why, sizeof why),
           "verifier: stable check catches two differing NaNs swapped (%s)", why);
    tap_ok(found && sc_case_verify(&c, 0, why, sizeof why),
           "verifier: unstable check accepts them (%s)", why);
    /* Only the indices of two differing NaNs swapped: each NaN pattern now
     * sits beside another NaN's index (the shellsort bug of issue 14). */
    if (found) {
        uint64_t ti = ix[a];
        ix[a] = ix[b];
        ix[b] = ti;
    }
    tap_ok(found && !sc_case_verify(&c, 0, why, sizeof why) && strstr(why, "nan"),
           "verifier: unstable check catches NaN indices swapped without their keys (%s)",
           why);
    sc_case_reset(&c);
    rc = gs_sort_run(&gs_algo_host, NULL, &c.req, NULL, NULL, &err);
    /* a repeated index beside a bit-equal key: only the repetition is wrong */
    size_t r = 0;
    while (r + 1 < 4097 && k64[r] != k64[r + 1])
        r++;
    ix[r] = ix[r + 1];
    tap_ok(rc == 0 && r + 1 < 4097 && !sc_case_verify(&c, 0, why, sizeof why) &&
           strstr(why, "repeated"),
           "verifier: unstable argsort check catches a repeated index (%s)", why);
    sc_case_free(&c);

    /* Values: half the keys NaNs of distinct patterns. Two of them with
     * their values swapped, keys kept, break two (key bits, value) pairs;
     * keys swapped too, the pairs hold again (unstable-correct only). */
    if (sc_case_init(&c, GS_DT_F32, GS_PL_U32, 0, 1000, SC_NANMIX, 3) < 0)
        tap_bail("sc_case_init failed");
    rc = gs_sort_run(&gs_algo_host, NULL, &c.req, NULL, NULL, &err);
    tap_ok(rc == 0 && sc_case_verify(&c, 1, why, sizeof why) &&
           (k = c.req.keys, (k[999] & 0x7fffffffu) > 0x7f800000u && k[998] != k[999]),
           "verifier: host f32 u32 nanmix passes, ends in differing NaNs (%s)", why);
    v = c.req.values;
    t = v[998];
    v[998] = v[999];
    v[999] = t;
    tap_ok(!sc_case_verify(&c, 0, why, sizeof why) && strstr(why, "nan"),
           "verifier: unstable check catches NaN values swapped without their keys (%s)", why);
    t = k[998];
    k[998] = k[999];
    k[999] = t;
    tap_ok(sc_case_verify(&c, 0, why, sizeof why) && !sc_case_verify(&c, 1, why, sizeof why),
           "verifier: with their keys, the unstable check accepts them, the stable one not");
    sc_case_free(&c);
}

/* A correct but unstable "algorithm": the host sort, then every run of
 * equal keys (NaNs all equal) reversed together with its values. The
 * matrix must accept it as unstable; it proves the unstable checks do not
 * demand input order. */
static int eq_keys(gs_dtype t, const void *k, size_t i, size_t j)
{
    if (gs_dtype_size(t) == 4) {
        uint32_t a = ((const uint32_t *)k)[i], b = ((const uint32_t *)k)[j];
        return a == b || (t == GS_DT_F32 && (a & 0x7fffffffu) > 0x7f800000u &&
                          (b & 0x7fffffffu) > 0x7f800000u);
    }
    uint64_t a = ((const uint64_t *)k)[i], b = ((const uint64_t *)k)[j];
    uint64_t m = UINT64_C(0x7fffffffffffffff), inf = UINT64_C(0x7ff0000000000000);
    return a == b || (t == GS_DT_F64 && (a & m) > inf && (b & m) > inf);
}

static void swap_el(void *a, size_t w, size_t i, size_t j)
{
    unsigned char t[8], *p = a;
    memcpy(t, p + i * w, w);
    memcpy(p + i * w, p + j * w, w);
    memcpy(p + j * w, t, w);
}

static int unstable_run(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                        gs_sort_stats *st, gs_err *err)
{
    int rc = gs_algo_host.run(ctx, req, p, st, err);
    size_t kw = gs_dtype_size(req->shape.dtype), vw = gs_payload_size(req->shape.payload);
    for (size_t i = 0; rc == 0 && i < req->n;) {
        size_t j = i + 1;
        while (j < req->n && eq_keys(req->shape.dtype, req->keys, i, j))
            j++;
        for (size_t a = i, b = j - 1; a < b; a++, b--) {
            swap_el(req->keys, kw, a, b);
            if (vw)
                swap_el(req->values, vw, a, b);
        }
        i = j;
    }
    return rc;
}

static void test_unstable_matrix(void)
{
    gs_algo fake = gs_algo_host;
    fake.name = "host-unstable";
    fake.stable = 0;
    fake.run = unstable_run;
    static const size_t sizes[] = { 0, 1, 2, 3, 33, 1000, 4097 };
    sc_case c;
    char why[512];
    gs_err err;
    if (sc_case_init(&c, GS_DT_F64, GS_PL_U64, 1, 1000, SC_FSPECIAL, 5) < 0)
        tap_bail("sc_case_init failed");
    int rc = gs_sort_run(&fake, NULL, &c.req, NULL, NULL, &err);
    tap_ok(rc == 0 && !sc_case_verify(&c, 1, why, sizeof why) &&
           sc_case_verify(&c, 0, why, sizeof why),
           "the fake unstable sort fails the stable check, passes the unstable one");
    c.req.shape.stable = 1;
    rc = gs_sort_run(&fake, NULL, &c.req, NULL, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED, "gs_sort_run refuses an unstable algorithm for a request "
           "that needs stability (%s)", err.msg);
    sc_case_free(&c);
    int failed = sc_run_matrix(&fake, NULL, NULL, sizes, sizeof sizes / sizeof *sizes,
                               "fake-unstable");
    tap_ok(failed == 0, "an unstable but correct sort passes the unstable checks (%d failed)",
           failed);
}

/* Passes whose digit is the same for every key are skipped. */
static void test_pass_skipping(void)
{
    size_t n = 100000;
    uint32_t *k = malloc(n * sizeof *k);
    if (!k)
        tap_bail("out of memory");
    gs_sort_req r = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = n, .keys = k };
    gs_sort_stats st;
    gs_err err;

    for (size_t i = 0; i < n; i++)
        k[i] = 12345;
    int rc = gs_sort_run(&gs_algo_host, NULL, &r, NULL, &st, &err);
    tap_ok(rc == 0 && st.passes == 0 && st.passes_skipped == 3,
           "all-equal keys: no pass runs (%u run, %u skipped)", st.passes, st.passes_skipped);

    uint64_t s = 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        k[i] = (uint32_t)(s >> 33) & 0x7ff;  /* low 11 bits only */
    }
    rc = gs_sort_run(&gs_algo_host, NULL, &r, NULL, &st, &err);
    int sorted = 1;
    for (size_t i = 1; i < n; i++)
        sorted &= k[i - 1] <= k[i];
    tap_ok(rc == 0 && sorted && st.passes == 1 && st.passes_skipped == 2,
           "11-bit keys: one pass runs (%u run, %u skipped), result sorted",
           st.passes, st.passes_skipped);
    tap_ok(st.wall_ms >= 0 && st.wall_ms < 60000, "wall time recorded (%.3f ms)", st.wall_ms);
    free(k);
}

/* Inputs above the matrix's largest n, where the host sort switches its
 * scatter to line buffers with streaming stores for 32-bit keys too; on
 * several chunks, whose line buffers share the destination's lines at
 * every chunk's edge of every bucket. */
static void test_large(void)
{
    static const struct { gs_dtype t; gs_payload p; int desc, dist; const char *params; } cs[] = {
        { GS_DT_U32, GS_PL_NONE, 0, SC_RANDOM, "" },
        { GS_DT_F32, GS_PL_IDX32, 1, SC_FSPECIAL, "" },
        { GS_DT_I32, GS_PL_U64, 0, SC_FEW16, "" },
        { GS_DT_U32, GS_PL_U32, 0, SC_RANDOM, "threads=3,radix_bits=11" },
        { GS_DT_F64, GS_PL_IDX64, 1, SC_FSPECIAL, "threads=4,radix_bits=8" },
        { GS_DT_U32, GS_PL_NONE, 1, SC_RANDOM, "threads=4,radix_bits=16" },
        { GS_DT_I64, GS_PL_U32, 0, SC_SAWTOOTH, "threads=2,radix_bits=16" },
        /* the top digit first, its buckets sorted whole (the default above),
         * against LSD passes only; few16: 16 full buckets whose keys are
         * all equal below the top digit; equal: one bucket, plain LSD */
        { GS_DT_U32, GS_PL_NONE, 0, SC_RANDOM, "msd=0" },
        { GS_DT_U64, GS_PL_U64, 1, SC_RANDOM, "threads=3" },
        { GS_DT_F32, GS_PL_IDX64, 0, SC_FEW16, "threads=2,msd=1" },
        { GS_DT_I32, GS_PL_NONE, 0, SC_EQUAL, "msd=1" },
        /* msd=2: each bucket between the worker's two buffers, streamed
         * out; an even (2) and an odd (3, radix_bits=8) number of bucket
         * passes, and few16's buckets, where nothing moves */
        { GS_DT_U32, GS_PL_NONE, 0, SC_RANDOM, "msd=2" },
        { GS_DT_I32, GS_PL_U32, 1, SC_RANDOM, "threads=3,radix_bits=8,msd=2" },
        { GS_DT_U64, GS_PL_U64, 0, SC_RANDOM, "threads=2,msd=2" },
        { GS_DT_F64, GS_PL_IDX32, 1, SC_FSPECIAL, "msd=2" },
        { GS_DT_F32, GS_PL_IDX64, 0, SC_FEW16, "threads=2,msd=2" },
        /* the top digit's width: narrow (8 bits, 3 bucket passes of 8),
         * wide (14 bits, line buffers for 16384 buckets), and a 64-bit key
         * whose 50 bits below the top digit take 5 passes of 10 */
        { GS_DT_U32, GS_PL_U32, 0, SC_RANDOM, "top_bits=8" },
        { GS_DT_I32, GS_PL_NONE, 1, SC_RANDOM, "threads=3,top_bits=14" },
        { GS_DT_F64, GS_PL_IDX64, 0, SC_FSPECIAL, "threads=2,top_bits=14,msd=2" },
        { GS_DT_U32, GS_PL_NONE, 0, SC_FEW16, "top_bits=12" },
        /* the top pass buffering 2 or 4 lines a bucket: runs of whole lines,
         * a bucket's first group partly another's */
        { GS_DT_U32, GS_PL_NONE, 0, SC_RANDOM, "top_lines=1" },
        { GS_DT_I64, GS_PL_U32, 1, SC_RANDOM, "threads=3,top_lines=2,top_bits=12" },
        { GS_DT_F32, GS_PL_IDX64, 0, SC_FSPECIAL, "threads=2,top_lines=4,msd=2" },
        { GS_DT_U32, GS_PL_U64, 1, SC_SAWTOOTH, "threads=4,top_lines=4,top_bits=14" },
    };
    size_t n = ((size_t)1 << 21) + 3;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        sc_case c;
        char why[512] = "";
        gs_err err;
        gs_sort_stats st;
        gs_params ps;
        if (gs_params_parse(cs[i].params, &ps, &err) < 0)
            tap_bail("bad parameter text %s", cs[i].params);
        if (sc_case_init(&c, cs[i].t, cs[i].p, cs[i].desc, n, cs[i].dist, 99 + i) < 0)
            tap_bail("sc_case_init failed for n=%zu", n);
        int rc = gs_sort_run(&gs_algo_host, NULL, &c.req, &ps, &st, &err);
        int ok = rc == 0 && sc_case_verify(&c, 1, why, sizeof why);
        if (ok && i == 0 && st.passes != 3) {
            ok = 0;   /* one top pass of 10 bits, then 2 of 11 in the buckets */
            snprintf(why, sizeof why, "%u passes: the top digit first was expected (3)",
                     st.passes);
        } else if (ok && i == 7 && st.passes != 3) {
            ok = 0;
            snprintf(why, sizeof why, "%u passes with msd=0 (3 of 11 bits expected)",
                     st.passes);
        } else if (ok && i == 11 && st.passes != 3) {
            ok = 0;
            snprintf(why, sizeof why, "%u passes with msd=2: the top digit first was "
                     "expected (3)", st.passes);
        } else if (ok && i == 16 && st.passes != 4) {
            ok = 0;   /* a top pass of 8 bits, then 3 of 8 */
            snprintf(why, sizeof why, "%u passes with top_bits=8 (4 expected)", st.passes);
        } else if (ok && i == 8 && st.passes != 6) {
            ok = 0;   /* a top pass of 9 bits, then 5 of 11 */
            snprintf(why, sizeof why, "%u passes: the top digit first was expected (6)",
                     st.passes);
        }
        tap_ok(ok, "large: %s %s %s %s n=%zu %s (%.1f ms)%s%s", gs_dtype_name(cs[i].t),
               cs[i].desc ? "desc" : "asc", gs_payload_name(cs[i].p), sc_dist_name(cs[i].dist),
               n, cs[i].params[0] ? cs[i].params : "(defaults)", st.wall_ms, ok ? "" : ": ",
               ok ? "" : rc ? err.msg : why);
        sc_case_free(&c);
    }
}

/* Sorts on several threads at once, each asking the shared pool for more
 * helpers than there are: each gets what is free, all must be right. */
typedef struct conc_arg {
    gs_dtype t;
    gs_payload p;
    int ok;
    char why[512];
} conc_arg;

static void *conc_main(void *arg)
{
    conc_arg *a = arg;
    gs_params ps;
    gs_params_clear(&ps);
    gs_params_set(&ps, "threads", 4);
    a->ok = 1;
    for (int r = 0; r < 3 && a->ok; r++) {
        sc_case c;
        gs_err err;
        if (sc_case_init(&c, a->t, a->p, r & 1, 300007, SC_RANDOM, 1000 + r + 7 * a->t) < 0) {
            snprintf(a->why, sizeof a->why, "sc_case_init failed");
            a->ok = 0;
            break;
        }
        int rc = gs_sort_run(&gs_algo_host, NULL, &c.req, &ps, NULL, &err);
        a->ok = rc == 0 && sc_case_verify(&c, 1, a->why, sizeof a->why);
        if (rc)
            snprintf(a->why, sizeof a->why, "%.400s", err.msg);
        sc_case_free(&c);
    }
    return NULL;
}

/* Teams formed at once share the CPUs, each caller and each helper
 * holding one: on 4 CPUs (a test hook) three callers that each ask for a
 * helper get one, one, and none (the third would make 6 threads on 4);
 * before, each took a helper while the pool had one. */
static pthread_barrier_t share_bar;
static unsigned share_workers[3];

static void *share_member(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    gs_hostpool_team t;
    for (unsigned turn = 0; turn < 3; turn++) {   /* A (turn 0) has joined, then B, then C */
        if (turn == i)
            share_workers[i] = gs_hostpool_join(&t, 1);
        pthread_barrier_wait(&share_bar);
    }
    gs_hostpool_leave(&t);                        /* all three held their teams */
    return NULL;
}

static void test_pool_share(void)
{
    unsigned old = gs_hostpool_force_cpus(4);
    pthread_t th[2];
    if (pthread_barrier_init(&share_bar, NULL, 3) != 0)
        tap_bail("pthread_barrier_init");
    for (unsigned i = 1; i <= 2; i++)
        if (pthread_create(&th[i - 1], NULL, share_member, (void *)(uintptr_t)i) != 0)
            tap_bail("pthread_create");
    gs_hostpool_team a;
    share_workers[0] = gs_hostpool_join(&a, 1);
    for (unsigned turn = 0; turn < 3; turn++)
        pthread_barrier_wait(&share_bar);
    gs_hostpool_leave(&a);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&share_bar);
    gs_hostpool_force_cpus(old);
    tap_ok(share_workers[0] == 2 && share_workers[1] == 2 && share_workers[2] == 1,
           "three teams at once on 4 CPUs: %u, %u and %u workers (expected 2, 2, 1: never more "
           "threads than CPUs from the pool)", share_workers[0], share_workers[1],
           share_workers[2]);
}

static void test_concurrent(void)
{
    size_t old = gs_host_force_min_chunk(1000);
    conc_arg a[3] = { { GS_DT_U32, GS_PL_NONE, 0, "" }, { GS_DT_F64, GS_PL_IDX64, 0, "" },
                      { GS_DT_I32, GS_PL_U64, 0, "" } };
    pthread_t th[3];
    int started = 0;
    for (int i = 0; i < 3; i++)
        started += pthread_create(&th[i], NULL, conc_main, &a[i]) == 0;
    if (started != 3)
        tap_bail("pthread_create failed");
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++)
        tap_ok(a[i].ok, "concurrent: %s %s with threads=4, three sorts at once (%s)",
               gs_dtype_name(a[i].t), gs_payload_name(a[i].p), a[i].ok ? "ok" : a[i].why);
    gs_host_force_min_chunk(old);
}

/* Allocation failure: GS_ENOMEM, input untouched. Forced by lowering the
 * address-space limit just above what is mapped now; run before anything
 * large has been freed, so malloc cannot reuse freed heap. */
static void test_enomem(const char *params)
{
    size_t n = (size_t)1 << 22;     /* 32 MiB keys + 32 MiB values */
    gs_params ps;
    gs_err perr;
    if (gs_params_parse(params, &ps, &perr) < 0)
        tap_bail("bad parameter text %s", params);
    uint64_t *k = malloc(n * 8), *v = malloc(n * 8);
    if (!k || !v)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++) {
        k[i] = (n - i) * UINT64_C(0x9e3779b97f4a7c15);
        v[i] = i;
    }
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1)
        tap_bail("cannot read /proc/self/statm");
    fclose(f);
    struct rlimit old, lim;
    if (getrlimit(RLIMIT_AS, &old) < 0)
        tap_bail("getrlimit failed");
    lim = old;
    lim.rlim_cur = (rlim_t)pages * 4096 + (8u << 20);
    if (old.rlim_max != RLIM_INFINITY && lim.rlim_cur > old.rlim_max)
        lim.rlim_cur = old.rlim_max;
    gs_sort_req r = {
        .shape = { .dtype = GS_DT_U64, .payload = GS_PL_U64 }, .n = n, .keys = k, .values = v
    };
    gs_err err;
    gs_err_clear(&err);
    int rc;
    if (setrlimit(RLIMIT_AS, &lim) < 0) {
        rc = 1;
        snprintf(err.msg, sizeof err.msg, "setrlimit failed");
    } else {
        rc = gs_sort_run(&gs_algo_host, NULL, &r, &ps, NULL, &err);
        setrlimit(RLIMIT_AS, &old);
    }
    int same = 1;
    for (size_t i = 0; i < n; i++)
        same &= k[i] == (n - i) * UINT64_C(0x9e3779b97f4a7c15) && v[i] == i;
    tap_ok(rc == GS_ENOMEM && err.msg[0], "scratch allocation failure (%s) gives GS_ENOMEM "
           "(%d: %s)", params[0] ? params : "defaults", rc, err.msg);
    tap_ok(same, "and leaves keys and values untouched");
    free(k);
    free(v);
}

static void test_req_check(void)
{
    uint32_t k[4] = { 3, 1, 2, 0 }, v[4];
    gs_err err;
    gs_sort_req ok = {
        .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 }, .n = 4, .keys = k, .values = v
    };
    gs_sort_req r;

    tap_ok(gs_sort_req_check(&ok, &err) == 0, "valid request accepted");
    r = ok; r.keys = NULL;
    tap_ok(gs_sort_req_check(&r, &err) == GS_EINVAL && strstr(err.msg, "keys"),
           "NULL keys with n>0 rejected (%s)", err.msg);
    r = ok; r.keys = NULL; r.values = NULL; r.n = 0;
    tap_ok(gs_sort_req_check(&r, &err) == 0, "NULL buffers with n=0 accepted");
    r = ok; r.values = NULL;
    tap_ok(gs_sort_req_check(&r, &err) == GS_EINVAL, "NULL values with a payload rejected (%s)",
           err.msg);
    r = ok; r.shape.dtype = GS_DT_COUNT;
    tap_ok(gs_sort_req_check(&r, &err) == GS_EINVAL && strstr(err.msg, "dtype"),
           "bad dtype rejected (%s)", err.msg);
    r = ok; r.shape.dtype = (gs_dtype)-1;
    tap_ok(gs_sort_req_check(&r, &err) == GS_EINVAL, "negative dtype rejected");
    r = ok; r.shape.payload = GS_PL_COUNT;
    tap_ok(gs_sort_req_check(&r, &err) == GS_EINVAL && strstr(err.msg, "payload"),
           "bad payload rejected (%s)", err.msg);
    r = ok; r.shape.descending = 2;
    tap_ok(gs_sort_req_check(&r, &err) == GS_EINVAL, "descending=2 rejected (%s)", err.msg);
    r = ok; r.n = SIZE_MAX / 4 + 1;
    tap_ok(gs_sort_req_check(&r, &err) == GS_ETOOBIG, "n*4 overflowing size_t rejected (%s)",
           err.msg);
    r = ok; r.shape.payload = GS_PL_U64; r.n = SIZE_MAX / 8 + 1;
    tap_ok(gs_sort_req_check(&r, &err) == GS_ETOOBIG, "n*8 payload overflow rejected (%s)",
           err.msg);
    r = ok; r.values = k + 1;
    tap_ok(gs_sort_req_check(&r, &err) == GS_EINVAL, "overlapping keys/values rejected (%s)",
           err.msg);
    r = ok; r.keys = NULL;
    uint32_t before[4];
    memcpy(before, v, sizeof v);
    tap_ok(gs_sort_run(&gs_algo_host, NULL, &r, NULL, NULL, &err) == GS_EINVAL &&
           !memcmp(before, v, sizeof v), "gs_sort_run refuses a bad request");

    gs_dtype t;
    gs_payload p;
    int names_ok = 1;
    for (int i = 0; i < GS_DT_COUNT; i++)
        names_ok &= gs_dtype_parse(gs_dtype_name((gs_dtype)i), &t) == 0 && t == (gs_dtype)i;
    for (int i = 0; i < GS_PL_COUNT; i++)
        names_ok &= gs_payload_parse(gs_payload_name((gs_payload)i), &p) == 0 &&
                    p == (gs_payload)i;
    names_ok &= gs_dtype_parse("u16", &t) == GS_EINVAL && gs_payload_parse("idx", &p) == GS_EINVAL;
    names_ok &= gs_dtype_size(GS_DT_F32) == 4 && gs_dtype_size(GS_DT_I64) == 8 &&
                gs_payload_size(GS_PL_NONE) == 0 && gs_payload_size(GS_PL_IDX64) == 8;
    tap_ok(names_ok, "dtype/payload names and sizes round trip, unknown names rejected");
}

static void test_params(void)
{
    gs_params ps, back;
    gs_err err;
    char buf[256];
    gs_params_clear(&ps);
    gs_params_set(&ps, "radix_bits", 4);
    gs_params_set(&ps, "wg_size", 256);
    gs_params_set(&ps, "neg", -17);
    gs_params_set(&ps, "radix_bits", 8);    /* replace keeps the position */
    int rc = gs_params_format(&ps, buf, sizeof buf);
    tap_ok(rc == 0 && !strcmp(buf, "radix_bits=8,wg_size=256,neg=-17"),
           "format in insertion order (%s)", buf);
    rc = gs_params_parse(buf, &back, &err);
    tap_ok(rc == 0 && back.count == 3 && gs_params_get(&back, "radix_bits", 0) == 8 &&
           gs_params_get(&back, "wg_size", 0) == 256 && gs_params_get(&back, "neg", 0) == -17 &&
           !gs_params_has(&back, "nope") && gs_params_get(&back, "nope", 99) == 99,
           "parse(format(x)) == x (%s)", rc ? err.msg : "ok");
    char buf2[256];
    gs_params_format(&back, buf2, sizeof buf2);
    tap_ok(!strcmp(buf, buf2), "format(parse(s)) == s");
    rc = gs_params_parse(" a = 1 , b=+2 ", &back, &err);
    tap_ok(rc == 0 && back.count == 2 && gs_params_get(&back, "b", 0) == 2,
           "spaces around items accepted");
    rc = gs_params_parse("", &back, &err);
    tap_ok(rc == 0 && back.count == 0, "empty text is the empty set");
    tap_ok(gs_params_format(&ps, buf, 10) == GS_ETOOBIG && strlen(buf) < 10,
           "format into a short buffer fails cleanly (\"%s\")", buf);

    static const char *const bad[] = {
        "a", "=1", "a=", "a=1,", "a=1,,b=2", "a=x", "a=1b", "a=1 2", "1a=3",
        "a-b=1", "a=99999999999999999999999", "a=1,a=2", "a=-",
        "abcdefghijklmnopqrstuvwxyz0123456=1",
        "a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gs_params_clear(&back);
        gs_params_set(&back, "keep", 1);
        gs_err_clear(&err);
        rc = gs_params_parse(bad[i], &back, &err);
        tap_ok(rc == GS_EINVAL && err.msg[0] && back.count == 1 &&
               gs_params_get(&back, "keep", 0) == 1,
               "parse rejects \"%s\", output untouched (%s)", bad[i], err.msg);
    }
    gs_params_clear(&back);
    tap_ok(gs_params_set(&back, "bad name", 1) == GS_EINVAL && back.count == 0,
           "set rejects a malformed name");
}

static void test_registry(void)
{
    tap_ok(gs_algo_find("host") == &gs_algo_host, "registry finds host");
    tap_ok(gs_algo_find("nope") == NULL && gs_algo_find(NULL) == NULL,
           "registry returns NULL for unknown names");
    int ok = gs_algo_count() >= 2 && gs_algo_at(gs_algo_count()) == NULL;
    for (size_t i = 0; i < gs_algo_count(); i++)
        ok &= gs_algo_at(i) && gs_algo_find(gs_algo_at(i)->name) == gs_algo_at(i);
    tap_ok(ok, "registry: %zu algorithms, each found by its name", gs_algo_count());
    tap_ok(gs_algo_find("radix") == &gs_algo_radix, "registry lists radix");
    tap_ok(gs_algo_host.stable && !gs_algo_host.uses_device && gs_algo_host.nparams == 5 &&
           !strcmp(gs_algo_host.params[0].name, "threads") &&
           !strcmp(gs_algo_host.params[1].name, "radix_bits") &&
           !strcmp(gs_algo_host.params[2].name, "msd") &&
           !strcmp(gs_algo_host.params[3].name, "top_bits") &&
           !strcmp(gs_algo_host.params[4].name, "top_lines"),
           "host: stable, no device, parameters threads, radix_bits, msd, top_bits and "
           "top_lines");
}

/* check() refuses the set with `code`, naming `needle`; gs_sort_run too,
 * before touching the keys. */
static void expect_refused(const char *params, const char *needle)
{
    uint32_t k[3] = { 3, 1, 2 };
    gs_sort_req r = { .shape = { .dtype = GS_DT_U32 }, .n = 3, .keys = k };
    gs_params ps;
    gs_err err;
    gs_err_clear(&err);
    if (gs_params_parse(params, &ps, &err) < 0)
        tap_bail("bad parameter text %s", params);
    int rc = gs_algo_host.check(NULL, &r, &ps, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, needle), "host check refuses %s (%s)",
           params, err.msg);
    rc = gs_sort_run(&gs_algo_host, NULL, &r, &ps, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && k[0] == 3 && k[1] == 1 && k[2] == 2,
           "gs_sort_run does not sort with %s (%s)", params, err.msg);
}

static void test_host_check(void)
{
    uint32_t k[3] = { 3, 1, 2 };
    gs_sort_req r = { .shape = { .dtype = GS_DT_U32 }, .n = 3, .keys = k };
    gs_params ps;
    gs_err err;
    gs_err_clear(&err);
    gs_algo_host.defaults(NULL, &ps);
    long cpus = (long)gs_hostpool_cpus();
    long dt = gs_params_get(&ps, "threads", -1);
    tap_ok(ps.count == 5 && dt == (cpus < 64 ? cpus : 64) &&
           gs_params_get(&ps, "radix_bits", -1) == 0 && gs_params_get(&ps, "msd", -1) == 1 &&
           gs_params_get(&ps, "top_bits", -1) == 0 && gs_params_get(&ps, "top_lines", -1) == 4 &&
           gs_algo_host.check(NULL, &r, &ps, &err) == 0,
           "host: defaults threads=%ld (%ld CPUs), radix_bits=0, msd=1, top_bits=0, "
           "top_lines=4, accepted by check", dt, cpus);
    gs_params_clear(&ps);
    tap_ok(gs_algo_host.check(NULL, &r, &ps, &err) == 0 &&
           gs_sort_run(&gs_algo_host, NULL, &r, &ps, NULL, &err) == 0 && k[0] == 1 &&
           k[2] == 3, "host: the empty set is accepted and sorts (the defaults)");
    gs_params_set(&ps, "threads", 3);
    tap_ok(gs_algo_host.check(NULL, &r, &ps, &err) == 0,
           "host: a set naming threads only is accepted (radix_bits by n)");

    long vals[64];
    size_t nv = gs_algo_host.params[0].values(NULL, vals, 64);
    int asc = nv >= 1 && vals[0] == 1 && vals[nv - 1] == cpus;
    for (size_t i = 1; i < nv; i++)
        asc &= vals[i - 1] < vals[i] && (i == nv - 1 || vals[i] == 2 * vals[i - 1]);
    tap_ok(asc, "host: threads values 1, 2, 4, ... and the CPU count %ld (%zu values, "
           "last %ld)", cpus, nv, nv ? vals[nv - 1] : -1L);
    nv = gs_algo_host.params[1].values(NULL, vals, 64);
    tap_ok(nv == 4 && vals[0] == 0 && vals[1] == 8 && vals[2] == 11 && vals[3] == 16,
           "host: radix_bits values 0 (by n), 8, 11, 16");

    expect_refused("wg_size=64", "unknown parameter 'wg_size'");
    expect_refused("threads=2,radix_bits=8,unroll=2", "unknown parameter 'unroll'");
    expect_refused("threads=0", "threads=0 out of range 1..256");
    expect_refused("threads=257", "threads=257 out of range");
    expect_refused("threads=-3,radix_bits=8", "threads=-3");
    expect_refused("radix_bits=17", "radix_bits=17 out of range 1..16");
    expect_refused("radix_bits=-1", "radix_bits=-1");
    expect_refused("msd=3", "msd=3 is not 0, 1 or 2");
    expect_refused("top_bits=3", "top_bits=3 out of range 4..16");
    expect_refused("msd=1,top_bits=17", "top_bits=17 out of range");
    expect_refused("top_lines=3", "top_lines=3 is not 1, 2 or 4");
    gs_sort_ctx ctx = { 0 };
    int rc = gs_sort_run(&gs_algo_radix, &ctx, &r, NULL, NULL, &err);
    tap_ok(rc < 0 && k[0] == 1, "a device algorithm without a device fails cleanly (%s)",
           err.msg);
}

/* The standard matrix on 1..4 chunks and every digit width: the chunk
 * minimum is lowered to 64 keys, so even the matrix's small sizes are cut;
 * the sizes add chunk edges (n a multiple of the chunk count, one either
 * side) and the insertion sort's edge. One full matrix with threads=2,
 * the others without the largest size to keep the test short. */
static int test_chunked(void)
{
    static const size_t sizes[] = {
        0, 1, 2, 3, 31, 32, 33, 47, 48, 49, 50, 63, 64, 65, 127, 128, 129, 191, 192, 193,
        255, 256, 257, 1000, 4097, 65537, 100003,
    };
    static const struct { long threads, bits; int full; } sets[] = {
        { 2, 0, 0 }, { 1, 0, 0 }, { 3, 0, 0 }, { 4, 0, 0 },
        { 3, 8, 0 }, { 4, 11, 0 }, { 2, 16, 0 }, { 3, 16, 0 },
    };
    size_t old = gs_host_force_min_chunk(64);
    int failed = 0;
    gs_sort_ctx ctx = { 0 };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        gs_params ps;
        char label[64];
        gs_params_clear(&ps);
        gs_params_set(&ps, "threads", sets[i].threads);
        gs_params_set(&ps, "radix_bits", sets[i].bits);
        snprintf(label, sizeof label, "host chunked");
        /* under the sanitizers the sets after the first are thinned at
         * every size (sc_thin_from) */
        size_t thin = sc_thin_from(i ? 0 : (size_t)-1);
        failed += sets[i].full ? sc_run_matrix(&gs_algo_host, &ctx, &ps, NULL, 0, label)
                               : sc_run_matrix(&gs_algo_host, &ctx, &ps, SC_SIZES(sizes), label);
        sc_thin_from(thin);
    }
    gs_host_force_min_chunk(old);
    return failed;
}

/* The past-the-cache paths (the top digit first, line buffers of 1, 2 or
 * 4 lines a bucket, msd=2's streamed buckets, narrow and wide top digits)
 * through the whole matrix: the threshold is lowered to 4 KiB and the
 * chunk minimum to 64 keys, so from 1024 keys every shape takes them on
 * several chunks, whose ranges share line groups at every bucket's edge. */
static int test_msd_matrix(void)
{
    static const size_t sizes[] = { 63, 1000, 1024, 4097, 65537, 100003 };
    static const char *const sets[] = {
        "threads=2", "threads=3,msd=2", "threads=4,top_lines=1", "threads=2,top_lines=2,top_bits=6",
        "threads=3,top_bits=12", "threads=1,msd=2,top_lines=1", "threads=4,radix_bits=8",
    };
    size_t old = gs_host_force_min_chunk(64), oldp = gs_host_force_past_cache(4096);
    int failed = 0;
    gs_sort_ctx ctx = { 0 };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        gs_params ps;
        gs_err err;
        if (gs_params_parse(sets[i], &ps, &err) < 0)
            tap_bail("bad parameter text %s", sets[i]);
        size_t thin = sc_thin_from(i ? 0 : (size_t)-1);
        failed += sc_run_matrix(&gs_algo_host, &ctx, &ps, SC_SIZES(sizes), "host past the cache");
        sc_thin_from(thin);
    }
    gs_host_force_past_cache(oldp);
    gs_host_force_min_chunk(old);
    return failed;
}

/* The scratch cache: a buffer given back is handed out again to a request
 * it fits, with its true size remembered when that was smaller; trimmed on
 * demand; and a large host sort leaves its scratch there for the next. */
static void test_scratch(void)
{
    const size_t mb = (size_t)1 << 20;
    gs_scratch_trim(0);
    char *a = gs_scratch_get(8 * mb);
    if (!a)
        tap_bail("gs_scratch_get(8 MiB) failed");
    memset(a, 1, 8 * mb);
    gs_scratch_put(a, 8 * mb);
    size_t c1 = gs_scratch_cached();
    char *b = gs_scratch_get(8 * mb - 4096);    /* rounds to the same 8 MiB */
    tap_ok(c1 == 8 * mb && b == a && gs_scratch_cached() == 0,
           "scratch: 8 MiB given back is cached (%zu bytes) and handed out again (%s)", c1,
           b == a ? "same buffer" : "another");
    char *c = gs_scratch_get(5 * mb);           /* 6 MiB in huge pages: a new one */
    gs_scratch_put(b, 8 * mb - 4096);
    gs_scratch_put(c, 5 * mb);
    tap_ok(c != a && gs_scratch_cached() == 14 * mb, "scratch: two buffers kept (%zu MiB)",
           gs_scratch_cached() / mb);
    char *d = gs_scratch_get(4 * mb);           /* best fit: the 6 MiB one */
    gs_scratch_put(d, 4 * mb);
    tap_ok(d == c && gs_scratch_cached() == 14 * mb,
           "scratch: a 4 MiB request takes the 6 MiB buffer, which comes back at its size "
           "(%zu MiB cached)", gs_scratch_cached() / mb);
    size_t freed = gs_scratch_trim(0);
    tap_ok(freed == 14 * mb && gs_scratch_cached() == 0, "scratch: trim frees them (%zu MiB)",
           freed / mb);
    /* from 1 MiB (the daemon's malloc would unmap it at every free) */
    char *e = gs_scratch_get(2 * mb + 100);
    gs_scratch_put(e, 2 * mb + 100);
    size_t c2 = gs_scratch_cached();
    char *f = gs_scratch_get(2 * mb);
    char *g = gs_scratch_get(mb - 64);          /* below 1 MiB: malloc's */
    tap_ok(e && c2 >= 2 * mb && f == e && gs_scratch_cached() == 0,
           "scratch: a 2 MiB buffer is cached too (%zu bytes) and handed out again (%s)", c2,
           f == e ? "same buffer" : "another");
    gs_scratch_put(g, mb - 64);
    tap_ok(gs_scratch_cached() == 0, "scratch: one under 1 MiB is not cached");
    gs_scratch_put(f, 2 * mb);
    gs_scratch_trim(0);

    size_t n = (size_t)1 << 21;
    uint32_t *k = malloc(n * sizeof *k);
    if (!k)
        tap_bail("out of memory");
    int ok = 1;
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < n; i++)
            k[i] = (uint32_t)((i + (size_t)round) * 2654435761u);
        gs_sort_req r = { .shape = { .dtype = GS_DT_U32 }, .n = n, .keys = k };
        gs_err err;
        ok &= gs_sort_run(&gs_algo_host, NULL, &r, NULL, NULL, &err) == 0;
        for (size_t i = 1; ok && i < n; i++)
            ok = k[i - 1] <= k[i];
    }
    tap_ok(ok && gs_scratch_cached() >= n * sizeof *k,
           "scratch: two 2^21-key host sorts are right and leave their scratch cached (%zu MiB)",
           gs_scratch_cached() / mb);
    gs_scratch_trim(0);
    free(k);
}

int main(void)
{
    test_enomem("");
    test_enomem("threads=4,radix_bits=16");
    test_req_check();
    test_params();
    test_registry();
    test_host_check();
    test_pass_skipping();
    test_verifier();
    test_large();
    test_unstable_matrix();
    test_concurrent();
    test_pool_share();
    test_scratch();

    gs_sort_ctx ctx = { 0 };
    gs_params none;
    gs_params_clear(&none);
    int failed = sc_run_matrix(&gs_algo_host, &ctx, &none, NULL, 0, "host");
    failed += test_chunked();
    failed += test_msd_matrix();
    tap_diag("host matrix: %d failed cases", failed);
    return tap_done();
}
