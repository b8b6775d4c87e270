/* The host sort's own path for requests of equal rows (lib/algos/host_rows.c):
 * rows of 1 to 5000 keys (around the insertion sort's bound, 64/65 and
 * 1024/1025), every dtype, payload, order and distribution (NaNs of every
 * pattern, ties with values and argsort indices: stable, checked exactly
 * against sortcheck's reference), with vqsort where the build has it and
 * with the LSD passes (gs_host_rows_force_radix), on the pool and on one
 * thread; rows longer than the path takes (the flat sort a row, NaN
 * patterns kept per row); the caller's rows rewritten between their
 * private copy and the write-back (a client's shared memory, issue 32)
 * changing nothing; segments (unequal parts given by offsets) on the
 * same path: every dtype, payload, order and distribution with both sorts,
 * empty and one-key segments among them, segments longer than the path
 * takes beside tiny ones, 2^16 tiny segments, and each segment rewritten
 * after its copy; top-k of rows still served row by row. */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32, GS_PL_IDX64 };
#define NPL (sizeof pls / sizeof pls[0])

/* Every dtype x payload x order x distribution for rows of len keys: one
 * TAP line, the first failure in it. */
static void matrix(size_t rows, size_t len, const gs_params *p, const char *who)
{
    char why[512] = "";
    int bad = 0;
    for (int t = 0; t < GS_DT_COUNT && !bad; t++)
        for (size_t pi = 0; pi < NPL && !bad; pi++)
            for (int desc = 0; desc < 2 && !bad; desc++)
                for (int dist = 0; dist < SC_DIST_COUNT && !bad; dist++) {
                    bad = !sc_rows_check(&gs_algo_host, NULL, p, (gs_dtype)t, pls[pi], desc,
                                         rows, len, dist, why, sizeof why);
                    if (bad) {
                        char w2[512];
                        snprintf(w2, sizeof w2, "%s, payload %s, %s, %s: %.400s",
                                 gs_dtype_name((gs_dtype)t), gs_payload_name(pls[pi]),
                                 desc ? "descending" : "ascending", sc_dist_name(dist), why);
                        memcpy(why, w2, sizeof why);
                    }
                }
    tap_ok(!bad, "%s: %zu rows of %zu keys, every dtype, payload, order and distribution%s%s",
           who, rows, len, bad ? ": " : "", why);
}

static void lengths(const char *who, const gs_params *p, int thin)
{
    static const size_t lens[] = { 1, 2, 3, 7, 16, 17, 31, 64, 65, 100, 255, 1024, 1025,
                                   4096, 5000 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t len = lens[i];
        if (thin && i % 2)
            continue;
        /* rows for several tasks a worker where short, few keys in all */
        size_t rows = len >= 4096 ? 2 : len >= 1024 ? 3 : len >= 100 ? 8 : 40;
        matrix(rows, len, p, who);
    }
}

/* ---- rows rewritten by the client between copy and write-back ---- */

typedef struct rewriter {
    const gs_sort_req *req;
    atomic_int hits;
} rewriter;

static void rewrite_fn(void *arg, int at, size_t lo, size_t hi)
{
    rewriter *w = arg;
    if (at != GS_RACE_BUCKET || !w->req)
        return;
    size_t ks = gs_dtype_size(w->req->shape.dtype), vs = gs_payload_size(w->req->shape.payload);
    memset((char *)w->req->keys + lo * ks, 0xa5, (hi - lo) * ks);
    if (vs)
        memset((char *)w->req->values + lo * vs, 0x5a, (hi - lo) * vs);
    atomic_fetch_add(&w->hits, 1);
}

/* S segments of random lengths in [0, maxlen] (xorshift from seed). */
static uint64_t *random_offsets(size_t S, unsigned maxlen, uint64_t seed)
{
    uint64_t *o = sc_random_offsets(S, maxlen, seed);
    if (!o)
        tap_bail("out of memory");
    return o;
}

/* Rows (off NULL: `parts` rows of len keys) or segments (off: `parts` of
 * them) rewritten by the client: each is copied once, through the rows'
 * path (the hook sees every part, empty segments too, by its place in the
 * whole request), and sorted from what it held then. */
static void rewritten(gs_dtype t, gs_payload pl, size_t parts, size_t len, const uint64_t *off,
                      int dist)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl), n = off ? (size_t)off[parts]
                                                                     : parts * len;
    char *keys = malloc(n * ks + 1), *vals = malloc(n * vs + 1), why[512] = "";
    if (!keys || !vals)
        tap_bail("out of memory");
    sc_case *c = off ? sc_segs_init(t, pl, 0, off, parts, dist, 0x38, keys, vals)
                     : sc_rows_init(t, pl, 0, parts, len, dist, 0x32, keys, vals);
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .stable = 1,
                                   .rows = off ? 0 : parts, .segments = off ? parts : 0 },
                        .n = n, .keys = keys, .values = vs ? vals : NULL, .offsets = off };
    rewriter w = { .req = &req };
    gs_err err;
    gs_err_clear(&err);
    gs_host_force_race(rewrite_fn, &w);
    int ok = gs_sort_run(&gs_algo_host, NULL, &req, NULL, NULL, &err) == 0;
    gs_host_force_race(NULL, NULL);
    if (!ok)
        snprintf(why, sizeof why, "sort failed: %.300s", err.msg);
    ok = off ? sc_segs_verify(c, off, parts, 1, keys, vals, ok, why, sizeof why)
             : sc_rows_verify(c, parts, len, 1, keys, vals, ok, why, sizeof why);
    char what[64];
    if (off)
        snprintf(what, sizeof what, "%zu segments of %zu", parts, n);
    else
        snprintf(what, sizeof what, "%zu rows of %zu", parts, len);
    tap_ok(ok && (size_t)atomic_load(&w.hits) == parts,
           "%s %s keys, payload %s, %s, each part rewritten after its copy: every part the "
           "sort of what it held (%d rewrites; %s)", what, gs_dtype_name(t),
           gs_payload_name(pl), sc_dist_name(dist), atomic_load(&w.hits), why);
    free(keys);
    free(vals);
}

static void test_rewritten(gs_dtype t, gs_payload pl, size_t rows, size_t len, int dist)
{
    rewritten(t, pl, rows, len, NULL, dist);
}

static void test_seg_rewritten(gs_dtype t, gs_payload pl, const uint64_t *off, size_t S, int dist)
{
    rewritten(t, pl, S, 0, off, dist);
}

int main(int argc, char **argv)
{
    /* an argument names the parts to run (matrix, segments, long, rewrite, parts) */
    const char *only = argc > 1 ? argv[1] : NULL;
#define PART(name) (!only || strstr(only, name))
    gs_params one;
    gs_params_clear(&one);
    gs_params_set(&one, "threads", 1);

    int old = gs_host_rows_force_radix(0);
    if (PART("matrix")) {
#ifdef HAVE_VQSORT
    lengths("vqsort", NULL, 0);
    matrix(40, 300, &one, "vqsort, threads=1");
#endif
    gs_host_rows_force_radix(1);
    lengths("radix", NULL, 1);
    matrix(40, 300, &one, "radix, threads=1");
    }
    if (PART("segments")) {
        /* lengths 0 to 300: empty, one-key, insertion-sorted and longer
         * segments side by side, in several tasks a worker */
        uint64_t *off = random_offsets(120, 300, 0x2545f4914f6cdd1dull);
#ifdef HAVE_VQSORT
        gs_host_rows_force_radix(0);
        sc_segs_matrix(&gs_algo_host, NULL, NULL, off, 120, 0, "segments, vqsort");
#endif
        gs_host_rows_force_radix(1);
        sc_segs_matrix(&gs_algo_host, NULL, NULL, off, 120, 0, "segments, radix");
        sc_segs_matrix(&gs_algo_host, NULL, &one, off, 120, 0, "segments, radix, threads=1");
        free(off);
    }
    gs_host_rows_force_radix(old);

    /* longer than the rows' own sort (a payload or 64-bit keys past 2^16
     * keys, 32-bit keys alone past 2^20): the flat sort, a row a worker,
     * each row's NaN patterns kept in its own NaN block; 32-bit keys alone
     * up to 2^20 by vqsort */
    char why[512] = "";
    if (PART("long")) {
    tap_ok(sc_rows_check(&gs_algo_host, NULL, NULL, GS_DT_F32, GS_PL_NONE, 0, 3, 70001,
                         SC_NANMIX, why, sizeof why),
           "3 rows of 70001 f32 keys with distinct NaNs, keys alone (%s)", why);
    tap_ok(sc_rows_check(&gs_algo_host, NULL, NULL, GS_DT_I32, GS_PL_NONE, 1, 2,
                         ((size_t)1 << 20) + 1, SC_FEW16, why, sizeof why),
           "2 rows of 2^20 + 1 i32 keys, descending (%s)", why);
    tap_ok(sc_rows_check(&gs_algo_host, NULL, NULL, GS_DT_F32, GS_PL_IDX32, 0, 3, 70001,
                         SC_NANMIX, why, sizeof why),
           "3 rows of 70001 f32 keys with distinct NaNs, argsort (%s)", why);
    tap_ok(sc_rows_check(&gs_algo_host, NULL, NULL, GS_DT_F64, GS_PL_NONE, 1, 2, 70001,
                         SC_FSPECIAL, why, sizeof why),
           "2 rows of 70001 f64 keys with NaN payloads, descending (%s)", why);
    /* segments past the path's bound among short ones: the flat sort for
     * those alone, in their task */
    static const uint64_t lng[] = { 0, 0, 5, 70006, 70070, 140071, 140072 };
    tap_ok(sc_segs_check(&gs_algo_host, NULL, NULL, GS_DT_F32, GS_PL_IDX32, 0, lng, 6,
                         SC_NANMIX, why, sizeof why),
           "segments of 0, 5, 70001, 64, 70001 and 1 f32 keys with distinct NaNs, argsort "
           "(%s)", why);
    tap_ok(sc_segs_check(&gs_algo_host, NULL, NULL, GS_DT_F64, GS_PL_NONE, 1, lng, 6,
                         SC_FSPECIAL, why, sizeof why),
           "the same segments of f64 keys with NaN payloads, keys alone, descending (%s)", why);
    static const uint64_t huge[] = { 0, 3, ((uint64_t)1 << 20) + 4, ((uint64_t)1 << 20) + 40 };
    tap_ok(sc_segs_check(&gs_algo_host, NULL, NULL, GS_DT_U32, GS_PL_NONE, 0, huge, 3,
                         SC_RANDOM, why, sizeof why),
           "u32 segments of 3, 2^20 + 1 and 36 keys alone (%s)", why);
    /* 2^16 tiny segments (0-7 keys): the tasks cut by their count too */
    uint64_t *tiny = random_offsets((size_t)1 << 16, 7, 0x9e3779b97f4a7c15ull);
    tap_ok(sc_segs_check(&gs_algo_host, NULL, NULL, GS_DT_I64, GS_PL_IDX64, 1, tiny,
                         (size_t)1 << 16, SC_FEW16, why, sizeof why),
           "2^16 segments of 0-7 i64 keys, argsort, descending (%s)", why);
    free(tiny);
    }

    /* a client rewriting each row while it is sorted */
    if (PART("rewrite")) {
    test_rewritten(GS_DT_U32, GS_PL_NONE, 50, 1024, SC_RANDOM);
    test_rewritten(GS_DT_F32, GS_PL_NONE, 50, 200, SC_NANMIX);
    test_rewritten(GS_DT_F32, GS_PL_IDX32, 50, 200, SC_FEW16);
    test_rewritten(GS_DT_I64, GS_PL_U64, 20, 700, SC_FEW16);
    test_rewritten(GS_DT_F64, GS_PL_U32, 20, 70, SC_NANMIX);
    test_rewritten(GS_DT_U32, GS_PL_U64, 5, 10, SC_EQUAL);
    uint64_t *off = random_offsets(300, 90, 0x7f4a7c159e3779b9ull);
    test_seg_rewritten(GS_DT_U32, GS_PL_NONE, off, 300, SC_RANDOM);
    test_seg_rewritten(GS_DT_F32, GS_PL_IDX32, off, 300, SC_NANMIX);
    test_seg_rewritten(GS_DT_I64, GS_PL_U64, off, 300, SC_FEW16);
    free(off);
    }
    if (!PART("parts"))
        return tap_done();

    /* top-k of rows goes its own way (row by row), as before */
    tap_ok(sc_topk_check(&gs_algo_host, NULL, NULL, GS_DT_F32, GS_PL_IDX64, 0, 30, 500, 7, 1,
                         SC_NANMIX, why, sizeof why), "top-7 of 30 rows of 500 (%s)", why);
    tap_ok(sc_topk_check(&gs_algo_host, NULL, NULL, GS_DT_U64, GS_PL_U32, 1, 30, 500, 400, 1,
                         SC_FEW16, why, sizeof why), "top-400 of 30 rows of 500 (%s)", why);
    const uint64_t off[] = { 0, 0, 1, 65, 1089, 1100, 6100 };
    tap_ok(sc_segs_check(&gs_algo_host, NULL, NULL, GS_DT_F32, GS_PL_U32, 0, off, 6, SC_NANMIX,
                         why, sizeof why), "segments of 0 to 5000 keys, threads on (%s)", why);
    return tap_done();
}
