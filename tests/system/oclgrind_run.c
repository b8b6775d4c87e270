/* Driver for tests/system/oclgrind.test: runs every device algorithm (radix,
 * mergepath, shellsort, bitonic, select) through gs_sort_run on small arrays, so that every
 * __kernel of the kernels/ sources is launched while Oclgrind watches for data races,
 * uninitialized values, out-of-bounds accesses and API misuse. Each sort is
 * also checked against the host reference of tests/support/sortcheck.c (a kernel
 * that Oclgrind finds nothing wrong with must still sort). Emits TAP.
 * Usage:
 *   oclgrind_run --count ALGO   how many sorts ALGO has (no device needed)
 *   oclgrind_run ALGO I         sort number I (0-based) of ALGO alone
 *   oclgrind_run [ALGO...]      every sort of the named algorithms (default:
 *                               all of them) in this one process, one TAP line
 *                               per (algorithm, parameter set)
 *   oclgrind_run canary         a deliberately racy kernel that reads
 *                               uninitialized local memory, so the test can
 *                               prove its log scan catches Oclgrind's reports
 * The test runs one process per sort: Oclgrind 21.10 keeps the
 * uninitialized-value state of a released buffer and hands it to the next
 * buffer that reuses its number, so a second sort in one process gets
 * false reports (and could have real ones hidden); see
 * tests/system/oclgrind_repro_reuse.c. Uses no program cache (ctx.pc NULL): every
 * program is built by the device Oclgrind simulates. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_clrun.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_keys.h"
#include "gs_narrow.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

/* Small sizes only: Oclgrind interprets every work-item. 1000 is above one
 * tile for the small parameter sets, so multi-tile paths run too. */
static const size_t sizes[] = { 0, 1, 7, 100, 1000 };
#define NSIZES (sizeof sizes / sizeof sizes[0])
static const gs_dtype dtypes[] = { GS_DT_U32, GS_DT_F32, GS_DT_U64, GS_DT_I64 };
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])
static const gs_payload payloads[] = { GS_PL_NONE, GS_PL_U32, GS_PL_IDX32 };
#define NPAYLOADS (sizeof payloads / sizeof payloads[0])

/* One parameter set (name=value pairs) and how many sorts to run with it.
 * Oclgrind with every check costs about 0.1 s per kernel launch here (a
 * radix sort of u32 keys in 4-bit digits: 41 launches, about 4 s), so each
 * set runs a short rotation rather than a matrix: case i takes dtype i % 4,
 * payload i % 3, order i % 2 and n from {0, 1, 7, 100, 1000} in turn. The
 * sets are chosen for kernel coverage, not the device defaults. */
typedef struct pset {
    const char *algo;
    const char *params;
    unsigned cases;
    int radix_rank;   /* radix: 1 forces the warp-multisplit ranking (emulated) */
    int nan_device;   /* f64/f32 keys with distinct NaNs, kept on the device (gs_clnan.c,
                         checked for an algorithm with keeps_nan; one with keeps_bits
                         alone reads each back itself) */
    int radix_hook;   /* radix: 1 every onesweep look-back takes its fallback; 2 the
                         histogram is read back at every size (pass skipping, iota);
                         3 32-bit pairs ranked apart, not as one word; 4 rows of
                         whole tiles (n rounded up to a multiple of 32), which
                         radix sorts whole (radix_scan_rows); 5 16-bit codes
                         (shape.narrow: the GS_K16 build), u16, f16, bf16, i16 in
                         both orders, against a stable counting sort by code,
                         keys alone by radix's counting sort (radix_count.c) */
    int hostile;      /* 1: the kernels built for client pages (GS_HOSTILE: every
                         position derived from an earlier read bounded, the race flag) */
    unsigned rows;    /* > 1: each case is that many rows of n keys, one request */
    unsigned topk;    /* > 0: a top-k request (k capped at the row), checked against the
                         stable reference's first k (select serves nothing else) */
    unsigned segs;    /* > 0: each case is that many segments of random lengths, 0 to
                         n / 2 keys (n 0 or 1: 0 or 1), one request */
} pset;

static const pset psets[] = {
    /* radix: one 4-bit sub-digit with wg 64 (block scans with SEG = 2 and
     * padding), the histogram read back (skipped passes; all of them with
     * equal keys, then radix_iota; other sets' arrays are small enough to
     * run every pass without the read-back); 8-bit digits in two 4-bit sub-digits with a tile of 16 (n =
     * 100: 7 tiles); 3-bit digits (11 positions > 8: the plain-atomics
     * histogram path) */
    { "radix", "radix_bits=4,wg_size=64,elems_per_thread=4", 6, 0, 0, 2, 0, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1", 4, 0, 0, 0, 0, 0, 0, 0 },
    { "radix", "radix_bits=3,wg_size=16,elems_per_thread=3", 2, 0, 0, 0, 0, 0, 0, 0 },
    /* NaN payloads kept on the device: the count and save kernels of
     * keys.cl, with several tiles (n = 1000 > 16 x 16) */
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1", 2, 0, 1, 0, 0, 0, 0, 0 },
    /* the warp-multisplit ranking (the one NVIDIA GPUs run in PTX), its warp
     * operations emulated: 2 warps, 4 digits per work-item in the digit scan;
     * then fewer digits than work-items */
    { "radix", "radix_bits=8,wg_size=64,elems_per_thread=2", 4, 1, 0, 0, 0, 0, 0, 0 },
    { "radix", "radix_bits=4,wg_size=32,elems_per_thread=3", 2, 1, 0, 0, 0, 0, 0, 0 },
    /* 32-bit keys with 32-bit values ranked as one 64-bit word are the
     * default (cases 1, 4 and 5 above); the separate key and value
     * exchange (radix_scatter_k32_v32) in cases 1, 4 and 5 here */
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1", 6, 0, 0, 3, 0, 0, 0, 0 },
    /* onesweep (lookback=1): ticket, tile counts, look-back, gstart and the
     * look-back words cleared for the next pass (n = 1000: 63 tiles of 16);
     * then every look-back falling back to counting keys; then with the
     * warp ranking */
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1,lookback=1", 4, 0, 0, 0, 0, 0, 0, 0 },
    { "radix", "radix_bits=4,wg_size=16,elems_per_thread=2,lookback=1", 2, 0, 0, 1, 0, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=32,elems_per_thread=2,lookback=1", 2, 1, 0, 0, 0, 0, 0, 0 },
    /* built for client pages (GS_HOSTILE), as on CPU devices that sort in
     * the caller's arrays (here on copies: see main): the bounded stores
     * of both scatters (32-bit pairs as one word in cases 1, 4 and 5,
     * apart in the same cases of the second set), of onesweep, and the
     * NaN save's bounded tiles */
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1", 6, 0, 0, 0, 1, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1", 6, 0, 0, 3, 1, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1,lookback=1", 2, 0, 0, 0, 1, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1", 2, 0, 1, 0, 1, 0, 0, 0 },
    /* equal rows taken whole (issue 38): three rows of 32 to 1024 keys in
     * tiles of 32, one radix_scan_rows a pass; with the read-back (pass
     * skipping over every row, argsort's per-row identity when all keys
     * are equal); distinct NaN patterns kept on the device, put back row by
     * row (NaN tiles of 256 within the rows of 1024); 4-bit digits built
     * for client pages */
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=2", 6, 0, 0, 4, 0, 3, 0, 0 },
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=2", 2, 0, 1, 4, 0, 3, 0, 0 },
    { "radix", "radix_bits=4,wg_size=16,elems_per_thread=2", 2, 0, 0, 4, 1, 3, 0, 0 },
    /* 16-bit keys as the daemon sends them (GS_K16; 8-bit keys' codes as u16):
     * reduce-then-scan, onesweep, the warp
     * ranking, built for client pages */
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=2", 4, 0, 0, 5, 0, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=1,lookback=1", 2, 0, 0, 5, 0, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=32,elems_per_thread=2", 1, 1, 0, 5, 0, 0, 0, 0 },
    { "radix", "radix_bits=8,wg_size=16,elems_per_thread=2", 1, 0, 0, 5, 1, 0, 0, 0 },
    /* mergepath: a mid-size tile; odd size_i and tile; size_i 1 with a
     * 16-element tile (many global merge levels) */
    { "mergepath", "size_i=4,wg_size=32,elems_per_thread=4", 6, 0, 0, 0, 0, 0, 0, 0 },
    { "mergepath", "size_i=3,wg_size=16,elems_per_thread=5", 4, 0, 0, 0, 0, 0, 0, 0 },
    { "mergepath", "size_i=1,wg_size=16,elems_per_thread=1", 4, 0, 0, 0, 0, 0, 0, 0 },
    { "mergepath", "size_i=3,wg_size=16,elems_per_thread=5", 2, 0, 1, 0, 0, 0, 0, 0 },
    /* built for client pages (GS_HOSTILE), as on CPU devices that sort in
     * the caller's arrays (here on copies: see main); many merge levels */
    { "mergepath", "size_i=1,wg_size=16,elems_per_thread=1", 4, 0, 0, 0, 1, 0, 0, 0 },
    /* shellsort: slices and merge rounds; one insertion sort per subset (no
     * merge rounds); many short slices (merge rounds in every phase) */
    { "shellsort", "threads_per_subset=64,min_elems_per_thread=8,wg_size=32", 6, 0, 0, 0, 0, 0, 0, 0 },
    { "shellsort", "threads_per_subset=1,min_elems_per_thread=1,wg_size=16", 4, 0, 0, 0, 0, 0, 0, 0 },
    { "shellsort", "threads_per_subset=16,min_elems_per_thread=2,wg_size=16", 4, 0, 0, 0, 0, 0, 0, 0 },
    /* bitonic: a row wider than the tile (the tile grows to it); three rows
     * a case, several to a group and the last group part-filled; distinct
     * NaN patterns, each read back from the input at its position */
    { "bitonic", "wg_size=16,tile=64,run=16", 6, 0, 0, 0, 0, 0, 0, 0 },
    { "bitonic", "wg_size=16,tile=1024", 6, 0, 0, 0, 0, 3, 0, 0 },
    { "bitonic", "wg_size=16,tile=64", 2, 0, 1, 0, 0, 0, 0, 0 },
    /* bitonic's segments kernels: unequal rows from offsets, several to a
     * group and the last group part-filled, empty ones among them */
    { "bitonic", "wg_size=16,tile=256,run=8", 4, 0, 0, 0, 0, 0, 0, 7 },
    /* and by size class: a launch per class, each over its list of
     * segments (empty ones in none) */
    { "bitonic", "wg_size=16,tile=256,run=8,class_work=4096", 4, 0, 0, 0, 0, 0, 0, 12 },
    /* select: one row over several tiles (1000 keys, tiles of 64), ties
     * across tiles (few distinct keys, all equal); three rows a case; k
     * of a whole row; distinct NaN patterns gathered by position */
    { "select", "wg_size=16,per_item=4", 6, 0, 0, 0, 0, 0, 10, 0 },
    { "select", "wg_size=16,per_item=2", 3, 0, 0, 0, 0, 3, 7, 0 },
    { "select", "wg_size=32,per_item=1", 2, 0, 0, 0, 0, 0, 1000, 0 },
    { "select", "wg_size=16,per_item=8", 2, 0, 1, 0, 0, 0, 33, 0 },
};
#define NPSETS (sizeof psets / sizeof psets[0])

/* Distributions by case number: random data, and the shapes that take other
 * kernel paths (all keys equal: radix skips every pass; few distinct keys;
 * presorted; float specials). */
static int pick_dist(gs_dtype t, unsigned i)
{
    static const int cyc[] = { SC_RANDOM, SC_FEW16, SC_EQUAL, SC_REVERSED, SC_FSPECIAL,
                               SC_SORTED };
    int d = cyc[i % (sizeof cyc / sizeof cyc[0])];
    if (d == SC_FSPECIAL && t != GS_DT_F32 && t != GS_DT_F64)
        d = SC_SAWTOOTH;
    return d;
}

/* Sorts first..last-1 of a parameter set (case i: see psets); one TAP line.
 * A single sort's line names its number for "oclgrind_run ALGO I". */
/* One sort of n 16-bit keys of narrow type t (shape.narrow) in order
 * desc with payload pl by algorithm a: 1 when it is a stable counting
 * sort's answer by their codes (gs_narrow_enc; NaNs decoded canonical),
 * else 0 with the reason in why. */
static int half_case(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, int t, int desc,
                     gs_payload pl, size_t n, uint64_t seed, char *why, size_t wl)
{
    const size_t vs = gs_payload_size(pl);
    const int idx = pl == GS_PL_IDX32 || pl == GS_PL_IDX64;
    uint16_t *k = malloc(n * 2 + 2), *want = malloc(n * 2 + 2);
    unsigned char *v = malloc(n * 8 + 8), *wv = malloc(n * 8 + 8);
    size_t *from = malloc((n + 1) * sizeof *from);
    if (!k || !want || !v || !wv || !from)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        k[i] = (uint16_t)(i % 3 ? seed >> 48 : (seed >> 60) * 4099u);   /* ties too */
        if (vs)
            gs_key_put(v, i, vs, i * 7 + 1);
    }
    if (sc_narrow_counting(t, desc, 0xffffu, k, n, want, from) < 0)
        tap_bail("out of memory");
    for (size_t j = 0; vs && j < n; j++)
        gs_key_put(wv, j, vs, idx ? (uint64_t)from[j] : gs_key_get(v, from[j], vs));
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = pl, .narrow = t,
                                   .descending = desc },
                        .n = n, .keys = k, .values = vs ? v : NULL };
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(a, ctx, &req, p, NULL, &err), ok = 0;
    if (rc < 0)
        snprintf(why, wl, "%s: %s", gs_strerror(rc), err.msg);
    else if (memcmp(k, want, n * 2) || (vs && memcmp(v, wv, n * vs)))
        snprintf(why, wl, "not the stable counting sort's answer");
    else
        ok = 1;
    free(k);
    free(want);
    free(v);
    free(wv);
    free(from);
    return ok;
}

static void run_pset(gs_sort_ctx *ctx, const pset *ps, unsigned first, unsigned last,
                     unsigned sortno)
{
    const gs_algo *a = gs_algo_find(ps->algo);
    if (!a) {
        tap_ok(0, "%s: no such algorithm", ps->algo);
        return;
    }
    gs_params p;
    gs_err err;
    gs_err_clear(&err);
    if (gs_params_parse(ps->params, &p, &err) < 0) {
        tap_ok(0, "%s %s: %s", a->name, ps->params, err.msg);
        return;
    }
    char pdesc[160];
    gs_params_format(&p, pdesc, sizeof pdesc);

    if (ps->radix_rank) {
        gs_radix_force_rank(ps->radix_rank);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc), " (warp ranking)");
    }
    if (ps->radix_hook == 1) {
        gs_radix_force_fallback(1);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc), " (look-back fallback)");
    }
    if (ps->radix_hook == 2) {
        gs_radix_small_max(0);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc), " (read-back)");
    }
    if (ps->radix_hook == 4) {
        gs_radix_small_max(0);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc),
                 " (rows of whole tiles, read-back)");
    }
    if (ps->radix_hook == 5) {   /* keys alone counted (radix_count.c: by default only
                                    on a GPU from 2^20 keys) */
        gs_radix_force_count(1);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc), " (16-bit keys)");
    }
    if (ps->radix_hook == 3) {
        gs_radix_force_pairs(0);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc), " (pairs apart)");
    }
    if (ps->nan_device) {
        gs_keys_nan_device_min(1);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc), " (NaNs on the device)");
    }
    if (ps->hostile) {
        gs_clrun_force_hostile(1);
        snprintf(pdesc + strlen(pdesc), sizeof pdesc - strlen(pdesc), " (for client pages)");
    }
    unsigned ncase = 0, nfail = 0;
    char why[4400], cdesc[200] = "";
    for (unsigned i = first; i < last; i++) {
        gs_dtype t = dtypes[i % NDTYPES];
        const gs_payload pl = payloads[i % NPAYLOADS];
        const int desc = (int)(i / 2 % 2);
        size_t n = sizes[(i + 3) % NSIZES];   /* 100, 1000, 0, 1, 7, ... */
        int dist = pick_dist(t, i);
        if (ps->nan_device) {   /* f32, then f64; 1000 keys */
            t = i % 2 ? GS_DT_F64 : GS_DT_F32;
            n = 1000;
            dist = SC_NANMIX;
        }
        if (ps->radix_hook == 5) {   /* 16-bit keys: u16, f16, bf16, i16; n from 100 up */
            static const int nt[] = { GS_NW_U16, GS_NW_F16, GS_NW_BF16, GS_NW_I16 };
            const int t16 = nt[i % 4];
            n = sizes[3 + i % 2] + i;
            snprintf(cdesc, sizeof cdesc, "%s/%s %s n=%zu", gs_narrow_row(t16)->name,
                     gs_payload_name(pl), desc ? "desc" : "asc", n);
            ncase++;
            if (!half_case(a, ctx, &p, t16, desc, pl, n, UINT64_C(0x16b) + i, why, sizeof why) &&
                nfail++ < 5)
                tap_diag("%s %s: %s: %s", a->name, pdesc, cdesc, why);
            continue;
        }
        if (ps->radix_hook == 4)   /* rows of whole tiles of 32 (n = 0: 64) */
            n = n ? (n + 31) / 32 * 32 : 64;
        snprintf(cdesc, sizeof cdesc, "%s/%s %s n=%zu %s", gs_dtype_name(t), gs_payload_name(pl),
                 desc ? "desc" : "asc", n, sc_dist_name(dist));
        ncase++;
        const char *what = NULL;
        if (ps->topk) {          /* a top-k: the stable reference's first k */
            const size_t rows = ps->rows > 1 ? ps->rows : 1, k = ps->topk < n ? ps->topk : n;
            snprintf(cdesc + strlen(cdesc), sizeof cdesc - strlen(cdesc), ", %zu rows, top %zu",
                     rows, k);
            if (!sc_topk_check(a, ctx, &p, t, pl, desc, rows, n, k, 1, dist, why, sizeof why))
                what = why;
            if (what && nfail++ < 5)
                tap_diag("%s %s: %s: %s", a->name, pdesc, cdesc, what);
            continue;
        }
        if (ps->segs) {          /* segments: each against its reference */
            uint64_t *off = sc_random_offsets(ps->segs, (unsigned)(n / 2 > 1 ? n / 2 : n),
                                              UINT64_C(0x5e9) + i);
            if (!off)
                tap_bail("out of memory");
            snprintf(cdesc + strlen(cdesc), sizeof cdesc - strlen(cdesc),
                     ", %u segments, %llu keys", ps->segs, (unsigned long long)off[ps->segs]);
            if (!sc_segs_check(a, ctx, &p, t, pl, desc, off, ps->segs, dist, why, sizeof why))
                what = why;
            free(off);
            if (what && nfail++ < 5)
                tap_diag("%s %s: %s: %s", a->name, pdesc, cdesc, what);
            continue;
        }
        if (ps->rows > 1) {      /* rows of n keys: each row against its reference */
            snprintf(cdesc + strlen(cdesc), sizeof cdesc - strlen(cdesc), ", %u rows", ps->rows);
            if (!sc_rows_check(a, ctx, &p, t, pl, desc, ps->rows, n, dist, why, sizeof why))
                what = why;
            if (what && nfail++ < 5)
                tap_diag("%s %s: %s: %s", a->name, pdesc, cdesc, what);
            continue;
        }
        sc_case c;
        if (sc_case_init(&c, t, pl, desc, n, dist, UINT64_C(0x0c19d) + i) < 0)
            tap_bail("out of memory");
        gs_err_clear(&err);
        gs_sort_stats st;
        int rc = gs_sort_run(a, ctx, &c.req, &p, &st, &err);
        if (rc < 0) {
            snprintf(why, sizeof why, "%s: %s", gs_strerror(rc), err.msg);
            what = why;
        } else if (!sc_case_verify(&c, a->stable, why, sizeof why)) {
            what = why;
        } else if (ps->nan_device && a->keeps_nan && !st.nans_on_device) {
            snprintf(why, sizeof why, "the device kept no NaN pattern");
            what = why;
        }
        if (what && nfail++ < 5)
            tap_diag("%s %s: %s: %s", a->name, pdesc, cdesc, what);
        sc_case_free(&c);
    }
    if (ps->radix_rank)
        gs_radix_force_rank(-1);
    gs_radix_force_fallback(0);
    gs_radix_small_max((size_t)-1);
    gs_radix_force_pairs(-1);
    gs_radix_force_count(-1);
    gs_keys_nan_device_min(0);
    gs_clrun_force_hostile(-1);
    if (last - first == 1)
        tap_ok(nfail == 0, "%s sort %u (%s): %s on Oclgrind matches the host reference",
               a->name, sortno, pdesc, cdesc);
    else
        tap_ok(nfail == 0 && ncase > 0, "%s %s: %u sorts on Oclgrind match the host reference "
               "(%u wrong)", a->name, pdesc, ncase, nfail);
}

/* How many sorts algorithm name has over all its parameter sets. */
static unsigned count_sorts(const char *name)
{
    unsigned c = 0;
    for (size_t i = 0; i < NPSETS; i++)
        if (!strcmp(psets[i].algo, name))
            c += psets[i].cases;
    return c;
}

/* Sort number idx of algorithm name alone (numbered across its parameter
 * sets in table order). */
static void run_one(gs_sort_ctx *ctx, const char *name, unsigned idx)
{
    unsigned left = idx;
    for (size_t i = 0; i < NPSETS; i++) {
        if (strcmp(psets[i].algo, name))
            continue;
        if (left < psets[i].cases) {
            run_pset(ctx, &psets[i], left, left + 1, idx);
            return;
        }
        left -= psets[i].cases;
    }
    tap_ok(0, "%s: no sort number %u (%u sorts)", name, idx, count_sorts(name));
}

/* A kernel with a local-memory race (every work-item writes s[0]) and a read
 * of a local slot nobody wrote: Oclgrind with --data-races --uninitialized
 * must report both. Checks nothing itself; the test scans the log. */
static void run_canary(gs_dev *dev)
{
    static const char src[] =
        "__kernel void canary(__global uint *out)\n"
        "{\n"
        "    __local uint s[64];\n"
        "    const uint l = get_local_id(0);\n"
        "    s[0] = l;\n"
        "    barrier(CLK_LOCAL_MEM_FENCE);\n"
        "    out[get_global_id(0)] = s[0] + s[l + 1];\n"
        "}\n";
    gs_err err;
    gs_err_clear(&err);
    cl_program prog;
    if (gs_prog_get_text(dev, NULL, "canary", src, "", &prog, NULL, &err) < 0)
        tap_bail("canary build: %s", err.msg);
    cl_int crc;
    cl_kernel k = clCreateKernel(prog, "canary", &crc);
    cl_mem out = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, 16 * sizeof(cl_uint), NULL, &crc);
    if (!k || !out)
        tap_bail("canary: kernel or buffer: %d", crc);
    clSetKernelArg(k, 0, sizeof out, &out);
    size_t g = 16, l = 16;
    crc = clEnqueueNDRangeKernel(dev->queue, k, 1, NULL, &g, &l, 0, NULL, NULL);
    if (crc == CL_SUCCESS)
        crc = clFinish(dev->queue);
    tap_ok(crc == CL_SUCCESS, "canary kernel ran (%d)", crc);
    clReleaseMemObject(out);
    clReleaseKernel(k);
}

/* A sort number: digits only. */
static int parse_index(const char *s, unsigned *out)
{
    if (!*s || strspn(s, "0123456789") != strlen(s))
        return 0;
    unsigned long v = strtoul(s, NULL, 10);
    if (v > 1000000)
        return 0;
    *out = (unsigned)v;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--count")) {
        printf("%u\n", count_sorts(argv[2]));
        return 0;
    }
    unsigned one = 0;
    const int single = argc == 3 && parse_index(argv[2], &one);
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "oclgrind");
    /* Copy the arrays in and out as a GPU does instead of sorting them where
     * they lie (the zero-copy input of CPU devices, which Oclgrind's device
     * counts as): Oclgrind 21.10 marks a CL_MEM_USE_HOST_PTR buffer's memory
     * uninitialized although it holds the host's bytes, so every read of
     * the input would be reported. The kernels run the same either way;
     * zero copy itself is checked on PoCL (test_bufpool). Without zero copy
     * the device gets the kernels a GPU runs; the sets marked hostile force
     * the ones built for client pages (gs_clrun_force_hostile). */
    gs_clrun_no_adopt(1);
    /* Under oclgrind the only platform is Oclgrind's (it replaces the ICD
     * loader): a run on any other device would check nothing. */
    if (!tap_ok(strstr(dev->info.platform, "Oclgrind") != NULL,
                "device is the Oclgrind simulator (%s: %s)", dev->info.name,
                dev->info.platform))
        tap_bail("not running under oclgrind");
    gs_sort_ctx ctx = { .dev = dev };

    if (argc > 1 && !strcmp(argv[1], "canary")) {
        run_canary(dev);
    } else if (single) {
        run_one(&ctx, argv[1], one);
    } else {
        for (size_t i = 0; i < NPSETS; i++) {
            int want = argc <= 1;
            for (int j = 1; j < argc; j++)
                if (!strcmp(argv[j], psets[i].algo))
                    want = 1;
            if (want) {
                double t0 = gs_now_s();
                run_pset(&ctx, &psets[i], 0, psets[i].cases, 0);
                tap_diag("%.1f s", gs_now_s() - t0);
            }
        }
    }
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
