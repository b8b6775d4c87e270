/* Bit ranges (gs_shape's begin_bit/end_bit, issue 39): random integer keys
 * of every width and signedness sorted by a range of their order code,
 * with every payload, both orders, against a reference that sorts by the
 * range and keeps ties in input order, through radix on the test device
 * (the range's own passes: reduce-then-scan with and without the
 * histogram's read-back, onesweep, 32-bit pairs ranked as one word), the
 * host sort and mergepath (their words sorted with the keys or an index,
 * gs_bits.c); ranges narrower than a digit, across digits and up to the
 * key's top; then the requests refused, and a failed sort leaving the
 * keys as they were. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_keys.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const gs_dtype ints[] = { GS_DT_U32, GS_DT_I32, GS_DT_U64, GS_DT_I64 };
static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32, GS_PL_IDX64 };

/* the reference: the range of key i's order code, written by hand from
 * the rules (signed: sign bit flipped; descending: every bit inverted) */
static const uint64_t *g_keys;
static gs_dtype g_dt;
static int g_desc;
static unsigned g_lo, g_width;

static uint64_t field_of(size_t i)
{
    const size_t kb = gs_dtype_size(g_dt) * 8;
    uint64_t c = g_keys[i];
    if (g_dt == GS_DT_I32 || g_dt == GS_DT_I64)
        c ^= UINT64_C(1) << (kb - 1);
    if (g_desc)
        c = ~c & gs_key_max(kb / 8);
    return (c >> g_lo) & (g_width >= 64 ? UINT64_MAX : (UINT64_C(1) << g_width) - 1);
}

static int by_field(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    uint64_t x = field_of(i), y = field_of(j);
    return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

/* One sort of n keys of dt by [lo, lo + width) with payload pl through a;
 * keys from `distinct` values (0: random bits). 1: right; 0: wrong, why
 * says how. */
static int one_case(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, gs_dtype dt,
                    gs_payload pl, int desc, unsigned lo, unsigned width, size_t n,
                    unsigned distinct, char *why, size_t wl)
{
    const size_t ks = gs_dtype_size(dt), vs = gs_payload_size(pl);
    uint64_t *k0 = malloc(n * 8 + 8), *pool = malloc(64 * 8);
    size_t *ord = malloc(n * sizeof *ord + 8);
    void *keys = malloc(n * ks + 8), *vals = malloc(n * (vs ? vs : 1) + 8);
    if (!k0 || !pool || !ord || !keys || !vals)
        tap_bail("out of memory");
    for (unsigned d = 0; d < 64; d++)
        pool[d] = rnd();
    /* with `distinct`: the range's bits from the pool, the others random */
    const uint64_t fm = (width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1) << lo;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = distinct ? (pool[rnd() % distinct] & fm) | (rnd() & ~fm) : rnd();
        k0[i] = x & gs_key_max(ks);
        gs_key_put(keys, i, ks, k0[i]);
        if (pl == GS_PL_U32 || pl == GS_PL_U64)
            gs_key_put(vals, i, vs, (uint64_t)i * 2654435761u);
        ord[i] = i;
    }
    g_keys = k0;
    g_dt = dt;
    g_desc = desc;
    g_lo = lo;
    g_width = width;
    qsort(ord, n, sizeof *ord, by_field);
    gs_sort_req req = { .n = n, .keys = keys, .values = vs ? vals : NULL };
    req.shape.dtype = dt;
    req.shape.payload = pl;
    req.shape.descending = desc;
    req.shape.begin_bit = lo;
    req.shape.end_bit = lo + width;
    gs_sort_stats st;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_sort_run(a, ctx, &req, p, &st, &e), ok = rc == 0;
    if (!ok)
        snprintf(why, wl, "%s: %.200s", a->name, e.msg);
    for (size_t i = 0; ok && i < n; i++) {
        size_t j = ord[i];
        uint64_t got = gs_key_get(keys, i, ks), v = vs ? gs_key_get(vals, i, vs) : 0;
        uint64_t want_v = pl == GS_PL_U32 || pl == GS_PL_U64
            ? ((uint64_t)j * 2654435761u) & gs_key_max(vs) : j;
        if (got != k0[j] || (vs && v != want_v)) {
            snprintf(why, wl, "%s %s %s%s bits [%u, %u) n=%zu: at %zu key %llx value %llu, "
                     "want %llx %llu", a->name, gs_dtype_name(dt), gs_payload_name(pl),
                     desc ? " desc" : "", lo, lo + width, n, i, (unsigned long long)got,
                     (unsigned long long)v, (unsigned long long)k0[j],
                     (unsigned long long)want_v);
            ok = 0;
        }
    }
    free(k0);
    free(pool);
    free(ord);
    free(keys);
    free(vals);
    return ok;
}

/* Random cases: every dtype and payload, both orders, ranges of every
 * kind, n up to nmax; one TAP line. */
static void cases(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, const char *who,
                  unsigned runs, size_t nmax)
{
    unsigned bad = 0, total = 0;
    char why[320] = "";
    for (unsigned r = 0; r < runs; r++)
        for (size_t t = 0; t < sizeof ints / sizeof ints[0]; t++) {
            const unsigned kb = (unsigned)gs_dtype_size(ints[t]) * 8;
            gs_payload pl = pls[(r + t) % 5];
            /* a narrow range inside a digit, one across digits, one up to the
             * top, the whole key named; the rest random */
            unsigned lo, width;
            switch (r % 5) {
            case 0: lo = 5; width = 3; break;
            case 1: lo = 3; width = 13; break;
            case 2: lo = kb - 20; width = 20; break;
            case 3: lo = 0; width = kb; break;
            default:
                lo = (unsigned)(rnd() % kb);
                width = 1 + (unsigned)(rnd() % (kb - lo));
            }
            size_t n = r % 3 == 0 ? 1 + rnd() % 64 : 1 + rnd() % nmax;
            unsigned distinct = r % 2 ? 0 : 1 + (unsigned)(rnd() % 40);
            total++;
            char w1[300];
            if (!one_case(a, ctx, p, ints[t], pl, (int)(r / 2 % 2), lo, width, n, distinct,
                          w1, sizeof w1) && bad++ == 0)
                snprintf(why, sizeof why, "%s", w1);
        }
    tap_ok(bad == 0, "%s: %u sorts by bit ranges (every integer type and payload, both orders, "
           "narrow, wide and top ranges, ties): %u wrong%s%s", who, total, bad, bad ? "; first: " : "",
           bad ? why : "");
}

int main(void)
{
    gs_params none;
    gs_params_clear(&none);
    gs_sort_ctx host = { 0 };
    cases(&gs_algo_host, &host, NULL, "host (words and keys or index)", 30, 5000);
    char why[400] = "";
    int big = one_case(&gs_algo_host, &host, NULL, GS_DT_U32, GS_PL_NONE, 0, 4, 16, 300000, 0,
                       why, sizeof why) &&
              one_case(&gs_algo_host, &host, NULL, GS_DT_I64, GS_PL_U32, 1, 30, 20, 200001, 30,
                       why, sizeof why);
    tap_ok(big, "host: 300000 u32 keys by bits [4, 20) and 200001 i64 with u32 values by [30, "
           "50) descending: words made and answers gathered in parallel tasks, right%s%s",
           big ? "" : ": ", big ? "" : why);

    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "test_bits");
    gs_sort_ctx dctx = { .dev = dev };
    char who[200];
    const char *rp[] = { "lookback=0", "lookback=1", "radix_bits=4,lookback=0",
                         "radix_bits=6,lookback=1" };
    for (size_t i = 0; i < sizeof rp / sizeof rp[0]; i++) {
        gs_params p;
        gs_err e;
        gs_algo_radix.defaults(&dev->info, &p);
        gs_params q;
        if (gs_params_parse(rp[i], &q, &e) < 0)
            tap_bail("%s", e.msg);
        for (int j = 0; j < q.count; j++)
            gs_params_set(&p, q.p[j].name, q.p[j].value);
        snprintf(who, sizeof who, "radix %s on %.100s", rp[i], dev->info.name);
        cases(&gs_algo_radix, &dctx, &p, who, 10, 20000);
    }
    /* the histogram read back (passes whose digit is constant skipped) and
     * 32-bit pairs ranked as one word, at sizes the tests can afford */
    size_t was = gs_radix_small_max(1000);
    int pw = gs_radix_force_pairs(1);
    snprintf(who, sizeof who, "radix on %.100s, read-back from 1000 keys, pairs", dev->info.name);
    cases(&gs_algo_radix, &dctx, NULL, who, 10, 20000);
    gs_radix_force_pairs(0);
    snprintf(who, sizeof who, "radix on %.100s, read-back from 1000 keys, no pairs",
             dev->info.name);
    cases(&gs_algo_radix, &dctx, NULL, who, 10, 20000);
    gs_radix_force_pairs(pw);
    gs_radix_small_max(was);
    snprintf(who, sizeof who, "mergepath on %.100s (words and keys or index)", dev->info.name);
    cases(&gs_algo_mergepath, &dctx, NULL, who, 5, 5000);

    /* refused */
    uint32_t k[8] = { 5, 4, 3, 2, 1, 0, 7, 6 }, k0[8];
    memcpy(k0, k, sizeof k);
    gs_sort_req req = { .n = 8, .keys = k };
    req.shape.dtype = GS_DT_F32;
    req.shape.begin_bit = 0;
    req.shape.end_bit = 8;
    gs_err e;
    gs_err_clear(&e);
    int rf = gs_sort_run(&gs_algo_host, &host, &req, NULL, NULL, &e);
    tap_ok(rf == GS_EUNSUPPORTED && strstr(e.msg, "integer"), "f32 keys by a bit range: "
           "refused (%d: %s)", rf, e.msg);
    req.shape.dtype = GS_DT_U32;
    req.shape.begin_bit = 8;
    req.shape.end_bit = 8;
    int re = gs_sort_run(&gs_algo_host, &host, &req, NULL, NULL, &e);
    req.shape.begin_bit = 0;
    req.shape.end_bit = 33;
    int r33 = gs_sort_run(&gs_algo_host, &host, &req, NULL, NULL, &e);
    tap_ok(re == GS_EINVAL && r33 == GS_EINVAL && strstr(e.msg, "[0, 33)"),
           "empty range and a range past a u32 key's 32 bits: refused (%d, %d: %s)", re, r33,
           e.msg);
    req.shape.end_bit = 8;
    req.shape.rows = 2;
    int rr = gs_sort_run(&gs_algo_host, &host, &req, NULL, NULL, &e);
    req.shape.rows = 0;
    int rs = gs_sort_run(&gs_algo_shellsort, &dctx, &req, NULL, NULL, &e);
    tap_ok(rr == GS_EUNSUPPORTED && rs == GS_EUNSUPPORTED && strstr(e.msg, "stable") &&
           !memcmp(k, k0, sizeof k), "rows by a bit range, and an algorithm that is not stable: "
           "refused (%d, %d: %s), the keys untouched", rr, rs, e.msg);
    /* a failing sort (mergepath without a device): its error, keys as they were */
    gs_sort_ctx nodev = { 0 };
    gs_sort_stats st;
    req.shape.begin_bit = 1;
    req.shape.end_bit = 3;
    int rm = gs_sort_run(&gs_algo_mergepath, &nodev, &req, NULL, &st, &e);
    tap_ok(rm < 0 && !memcmp(k, k0, sizeof k) && e.msg[0],
           "a sort that fails (mergepath without a device): its error (%s), the keys untouched",
           e.msg);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
